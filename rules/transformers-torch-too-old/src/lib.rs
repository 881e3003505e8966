//! transformers turns its PyTorch backend off when torch is older than its
//! floor, and then every PyTorch model class raises. Read in
//! transformers/utils/import_utils.py in the PyPI wheels (bisected over the
//! releases; each boundary read on both sides):
//! - 4.51.3 has no floor; 4.52.1 .. 4.57.x: torch >= 2.1;
//! - 5.0.0: >= 2.2; 5.1.0 .. 5.14.1: >= 2.4; 5.15.0 .. 5.19.0: >= 2.5;
//!   5.20.0 .. 5.25.0 (the newest read): >= 2.6.
//!
//! The log line is "Disabling PyTorch because PyTorch >= X is required but
//! found Y"; loading a model then fails with "... requires the PyTorch
//! library but it was not found in your environment" (5.x newer wording:
//! "requires PyTorch >= X, but PyTorch was not found or an older version is
//! installed").
#![no_std]

use pitfall_sdk::prelude::*;

/// (transformers releases, torch floor as a PEP 440 bound, floor as text).
const FLOORS: [(&str, &str, &str); 5] = [
    (">=4.52.1,<5.0.0", "<2.1.0", "2.1"),
    (">=5.0.0,<5.1.0", "<2.2.0", "2.2"),
    (">=5.1.0,<5.15.0", "<2.4.0", "2.4"),
    (">=5.15.0,<5.20.0", "<2.5.0", "2.5"),
    (">=5.20.0", "<2.6.0", "2.6"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(tf), Some(torch)) = (m.package("transformers"), m.package("torch")) else {
        return Outcome::clear();
    };
    for (tf_range, torch_below, floor) in FLOORS {
        match tf.version_in(tf_range) {
            None => return Outcome::needs(tf.version_path().as_str()),
            Some(false) => continue,
            Some(true) => {}
        }
        return match torch.version_in(torch_below) {
            None => Outcome::needs(torch.version_path().as_str()),
            Some(false) => Outcome::clear(),
            Some(true) => {
                let mut fix = String::from(floor);
                fix.push_str(".0");
                Outcome::matched()
                    .evidence(tf.version_path().as_str())
                    .evidence(torch.version_path().as_str())
                    .param_field("transformers", tf.version_path().as_str())
                    .param_field("torch", torch.version_path().as_str())
                    .param("floor", floor)
                    .param("fix", &fix)
            }
        };
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
