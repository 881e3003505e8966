//! vLLM's Requires-Python floor per release (PyPI METADATA, 0.2.0-0.34.0):
//! 3.8 to 0.6.3, 3.9 from 0.6.4, 3.10 from 0.11.1, 3.11 from 0.32.0. An
//! older interpreter gets no distribution from pip (issue 30065, RHEL 9's
//! Python 3.9). 0.14.0-0.26.0 belong to python-version-unsupported.
#![no_std]

use pitfall_sdk::prelude::*;

/// (releases, oldest Python minor of 3.x, its text).
const FLOORS: [(&str, u64, &str); 4] = [
    ("<0.6.4", 8, "3.8"),
    (">=0.6.4,<0.11.1", 9, "3.9"),
    (">=0.11.1,<0.32.0", 10, "3.10"),
    (">=0.32.0,<0.34.1", 11, "3.11"),
];
/// Judged by python-version-unsupported.
const OTHER_RULE: &str = ">=0.14.0.dev0,<0.26.1.dev0";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let Some(python) = m.package("python") else {
        return Outcome::clear();
    };
    match vllm.version_in(OTHER_RULE) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(true) => return Outcome::clear(),
        Some(false) => {}
    }
    let Some((floor, floor_text)) = FLOORS
        .iter()
        .find(|(spec, _, _)| vllm.version_in(spec) == Some(true))
        .map(|(_, floor, text)| (*floor, *text))
    else {
        return Outcome::clear();
    };
    let Some(py) = python.version() else {
        return Outcome::needs("packages.python.version");
    };
    let release = py.release();
    let major = release.first().copied().unwrap_or(0);
    let minor = release.get(1).copied().unwrap_or(0);
    if major != 3 || minor >= floor {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(python.version_path().as_str())
        .evidence(vllm.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param_field("python", python.version_path().as_str())
        .param("floor", floor_text)
        .param("fix", "3.12")
}

pitfall_sdk::export_rule!(evaluate);
