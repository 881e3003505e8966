//! vLLM's compiled extension needs the torch release its wheel pins
//! (KNOWLEDGE.md D6): another torch minor release breaks the C++ ABI and
//! importing vllm._C fails with "undefined symbol" (vllm issues 3147, 5501).
//! Pins read in the Requires-Dist of every PyPI wheel 0.2.7-0.34.0;
//! `packages.vllm.torch` (release table) wins.
#![no_std]

use pitfall_sdk::prelude::*;

/// (vLLM releases, the torch their wheels pin).
const PINS: &[(&str, &str)] = &[
    (">=0.2.7,<0.4.1", "2.1.2"),
    (">=0.4.1,<0.4.2", "2.2.1"),
    (">=0.4.2,<0.5.2", "2.3.0"),
    (">=0.5.2,<0.5.4", "2.3.1"),
    (">=0.5.4,<0.6.4", "2.4.0"),
    (">=0.6.4,<0.8.0", "2.5.1"),
    (">=0.8.0,<0.9.0", "2.6.0"),
    (">=0.9.0,<0.10.0", "2.7.0"),
    (">=0.10.0,<0.10.2", "2.7.1"),
    (">=0.10.2,<0.11.1", "2.8.0"),
    (">=0.11.1,<0.14.0", "2.9.0"),
    (">=0.14.0,<0.17.0", "2.9.1"),
    (">=0.17.0,<0.20.0", "2.10.0"),
    (">=0.20.0,<0.27.0", "2.11.0"),
    (">=0.27.0,<0.33.0", "2.13.0"),
    (">=0.33.0,<0.35.0", "2.14.0"),
];

/// `2.1` of `2.1.2` (the first two dot-separated parts).
fn minor_prefix(version: &str) -> &str {
    let mut dots = 0;
    for (i, b) in version.bytes().enumerate() {
        if b == b'.' {
            dots += 1;
            if dots == 2 {
                return &version[..i];
            }
        }
    }
    version
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    // What the extension was built against: the release table, else the pin.
    let pin = match m.text("packages.vllm.torch") {
        Some(p) => String::from(p.trim().trim_start_matches("==")),
        None => {
            if m.built_from_source("vllm") {
                return Outcome::clear();
            }
            let Some(v) = vllm.version() else {
                return Outcome::needs("packages.vllm.version");
            };
            // Vendor builds and pre-releases may pin another torch.
            if v.is_prerelease() || v.local().is_some_and(|l| !l.starts_with("cu")) {
                return Outcome::clear();
            }
            let mut found = None;
            for (releases, pin) in PINS.iter() {
                if vllm.version_in(releases) == Some(true) {
                    found = Some(*pin);
                }
            }
            let Some(pin) = found else {
                return Outcome::clear();
            };
            String::from(pin)
        }
    };
    if Version::parse(&pin).is_err() {
        return Outcome::clear();
    }
    let mut spec = String::from("==");
    spec.push_str(minor_prefix(&pin));
    spec.push_str(".*");
    let Some(same_minor) = torch.version_in(&spec) else {
        return Outcome::needs("packages.torch.version");
    };
    if same_minor {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence(torch.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param("pin", &pin)
}

pitfall_sdk::export_rule!(evaluate);
