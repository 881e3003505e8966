//! torch.compile refuses Python versions newer than the TorchDynamo of the
//! installed torch supports (KNOWLEDGE.md D10, D28). Read in each release's
//! own source (torch/__init__.py and torch/_dynamo/eval_frame.py, from the
//! PyPI wheels of every release from 2.0.0 to 2.15.0):
//! - 2.0.0, 2.0.1 raise on Python >= 3.11 ("Python 3.11+ not yet supported
//!   for torch.compile"); 2.1.0 accepts 3.11 (raises on >= 3.12);
//! - 2.2, 2.3 raise on Python >= 3.12; 2.4 accepts 3.12;
//! - 2.4, 2.5 raise on >= 3.13; 2.6 accepts 3.13;
//! - 2.6 to 2.9 raise on >= 3.14; 2.10 accepts 3.14;
//! - 2.10 to 2.14 raise on >= 3.15; 2.15 accepts 3.15 (and raises on 3.16).
//!
//! Only code that calls torch.compile fails (vLLM's compilation, SGLang's
//! `--enable-torch-compile`, training scripts); eager PyTorch runs, so the
//! finding is a warning. The interpreter is the package named `python`.
#![no_std]

use pitfall_sdk::prelude::*;

/// (Python minor range, torch releases that refuse it, first torch that accepts it).
/// torch.compile exists from 2.0.0: an older torch has none to refuse.
const FLOORS: [(&str, &str, &str, &str); 5] = [
    (">=3.11,<3.12", ">=2.0.0,<2.1.0", "3.11", "2.1.0"),
    (">=3.12,<3.13", "<2.4.0", "3.12", "2.4.0"),
    (">=3.13,<3.14", "<2.6.0", "3.13", "2.6.0"),
    (">=3.14,<3.15", "<2.10.0", "3.14", "2.10.0"),
    (">=3.15,<3.16", "<2.15.0", "3.15", "2.15.0"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(python), Some(torch)) = (m.package("python"), m.package("torch")) else {
        return Outcome::clear();
    };
    for (python_range, torch_range, minor, fix) in FLOORS {
        match python.version_in(python_range) {
            None => return Outcome::needs(python.version_path().as_str()),
            Some(false) => continue,
            Some(true) => {}
        }
        // The newest Python this torch compiles for: 3.10 before 2.1.
        let older = if torch.version_in("<2.1.0") == Some(true) { "3.10" } else { "3.11" };
        return match torch.version_in(torch_range) {
            None => Outcome::needs(torch.version_path().as_str()),
            Some(false) => Outcome::clear(),
            Some(true) => Outcome::matched()
                .param("older", older)
                .evidence(python.version_path().as_str())
                .evidence(torch.version_path().as_str())
                .param_field("python", python.version_path().as_str())
                .param_field("torch", torch.version_path().as_str())
                .param("minor", minor)
                .param("fix", fix),
        };
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
