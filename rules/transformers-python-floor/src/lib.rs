//! transformers' wheels declare a Requires-Python floor, so pip cannot
//! install a release on an older interpreter. Read in the PyPI metadata
//! (bisected over the releases, both sides of each boundary read):
//! 4.0.0 .. 4.18.0 >=3.6, 4.19.0 .. 4.30.2 >=3.7, 4.31.0 .. 4.46.3 >=3.8,
//! 4.47.0 .. 4.57.6 >=3.9, 5.0.0 .. 5.20.2 >=3.10,
//! 5.21.0 .. 5.25.0 (the newest read) >=3.11.
//! The interpreter is the package named `python`; the manifest may be a
//! planned install.
#![no_std]

use pitfall_sdk::prelude::*;

/// (transformers releases, interpreters below the floor, the floor).
const FLOORS: [(&str, &str, &str); 6] = [
    (">=4.0.0,<4.19.0", "<3.6", "3.6"),
    (">=4.19.0,<4.31.0", "<3.7", "3.7"),
    (">=4.31.0,<4.47.0", "<3.8", "3.8"),
    (">=4.47.0,<5.0.0", "<3.9", "3.9"),
    (">=5.0.0,<5.21.0", "<3.10", "3.10"),
    (">=5.21.0", "<3.11", "3.11"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(tf), Some(python)) = (m.package("transformers"), m.package("python")) else {
        return Outcome::clear();
    };
    for (tf_range, python_below, floor) in FLOORS {
        match tf.version_in(tf_range) {
            None => return Outcome::needs(tf.version_path().as_str()),
            Some(false) => continue,
            Some(true) => {}
        }
        return match python.version_in(python_below) {
            None => Outcome::needs(python.version_path().as_str()),
            Some(false) => Outcome::clear(),
            Some(true) => Outcome::matched()
                .evidence(tf.version_path().as_str())
                .evidence(python.version_path().as_str())
                .param_field("transformers", tf.version_path().as_str())
                .param_field("python", python.version_path().as_str())
                .param("floor", floor),
        };
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
