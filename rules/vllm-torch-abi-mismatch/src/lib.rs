//! vLLM's compiled extension needs the torch release its wheel pins
//! (KNOWLEDGE.md D6): another torch minor release breaks the C++ ABI and
//! importing vllm._C fails with "undefined symbol" (vllm issues 3147, 5501).
//! Pins read in the Requires-Dist of every PyPI wheel 0.2.7-0.34.0;
//! `packages.vllm.torch` (release table) wins. A version PyPI never
//! published is undetermined until `packages.vllm.torch` is reported.
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

/// Every vLLM release PyPI published from 0.2.7 to 0.34.0
/// (https://pypi.org/pypi/vllm/json): the ranges above are read from
/// these wheels, and a version between them that was never published
/// (a fork's tag, a future patch) has no pin to read.
const PUBLISHED: &[&str] = &[
    "0.2.7",
    "0.3.0",
    "0.3.1",
    "0.3.2",
    "0.3.3",
    "0.4.0",
    "0.4.0.post1",
    "0.4.1",
    "0.4.2",
    "0.4.3",
    "0.5.0",
    "0.5.0.post1",
    "0.5.1",
    "0.5.2",
    "0.5.3",
    "0.5.3.post1",
    "0.5.4",
    "0.5.5",
    "0.6.0",
    "0.6.1",
    "0.6.1.post1",
    "0.6.1.post2",
    "0.6.2",
    "0.6.3",
    "0.6.3.post1",
    "0.6.4",
    "0.6.4.post1",
    "0.6.5",
    "0.6.6",
    "0.6.6.post1",
    "0.7.0",
    "0.7.1",
    "0.7.2",
    "0.7.3",
    "0.8.0",
    "0.8.1",
    "0.8.2",
    "0.8.3",
    "0.8.4",
    "0.8.5",
    "0.8.5.post1",
    "0.9.0",
    "0.9.0.1",
    "0.9.1",
    "0.9.2",
    "0.10.0",
    "0.10.1",
    "0.10.1.1",
    "0.10.2",
    "0.11.0",
    "0.11.1",
    "0.11.2",
    "0.12.0",
    "0.13.0",
    "0.14.0",
    "0.14.1",
    "0.15.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.17.1",
    "0.18.0",
    "0.18.1",
    "0.19.0",
    "0.19.1",
    "0.20.0",
    "0.20.1",
    "0.20.2",
    "0.21.0",
    "0.22.0",
    "0.22.1",
    "0.23.0",
    "0.24.0",
    "0.25.0",
    "0.25.1",
    "0.26.0",
    "0.27.0",
    "0.27.1",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
    "0.33.0",
    "0.34.0",
];

fn published(version: &Version) -> bool {
    PUBLISHED.iter().any(|p| {
        Version::parse(p).is_ok_and(|p| p.cmp_public(version) == core::cmp::Ordering::Equal)
    })
}

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
            // Unpublished: only the release table or the manifest can say.
            if !published(&v) {
                return Outcome::needs("packages.vllm.torch");
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
