//! flash-attn is published on PyPI as a source distribution only; its
//! setup.py (`CachedWheelsCommand`) downloads a prebuilt wheel from the
//! GitHub release when one matches the platform, torch minor, CUDA major,
//! C++ ABI and Python, and otherwise prints "Precompiled wheel not found.
//! Building from source..." and compiles the CUDA extension, which needs
//! nvcc and takes a long time (setup.py and publish.yml at each tag).
//!
//! Prebuilt wheels per release, from .github/workflows/publish.yml at the
//! tag: Linux x86_64 only in every release up to 2.8.3.post1 (Linux aarch64
//! wheels appear on main after it, in no release yet), for these torch
//! minors (dev builds left out):
//! - 2.6.0 to 2.6.2: 2.0-2.3; 2.6.3: 2.0-2.4;
//! - 2.7.0 to 2.7.3: 2.1-2.5; 2.7.4: 2.1-2.6; 2.7.4.post1: 2.2-2.6;
//! - 2.8.0 to 2.8.2: 2.4-2.7; 2.8.3, 2.8.3.post1: 2.4-2.8.
//!
//! The manifest may describe a planned install: the rule reports a
//! flash-attn that pip would have to compile here, unless it is declared
//! built from source or its built-against torch is known.
#![no_std]

use pitfall_sdk::prelude::*;

const FA: &str = "flash-attn";
const KNOWN: &str = ">=2.6.0,<=2.8.3.post1";
/// (flash-attn releases, lowest and highest torch 2.x minor with a wheel).
const WHEELS: [(&str, u64, u64); 7] = [
    (">=2.6.0,<2.6.3", 0, 3),
    ("==2.6.3", 0, 4),
    (">=2.7.0,<2.7.4", 1, 5),
    ("==2.7.4", 1, 6),
    ("==2.7.4.post1", 2, 6),
    (">=2.8.0,<2.8.3", 4, 7),
    (">=2.8.3,<=2.8.3.post1", 4, 8),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(fa) = m.package(FA) else {
        return Outcome::clear();
    };
    if m.built_from_source(FA) || m.has("packages.flash-attn.torch") {
        return Outcome::clear();
    }
    match fa.version_in(KNOWN) {
        None => return Outcome::needs(fa.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let mut outcome = Outcome::matched().evidence(fa.version_path().as_str());
    let mut reason = String::new();
    if m.arch().as_deref() == Some("aarch64") {
        outcome = outcome.evidence("host.arch");
        reason.push_str("no release up to 2.8.3.post1 has Linux aarch64 wheels");
    } else if m.text("host.os.id").is_some_and(|os| os == "windows") {
        outcome = outcome.evidence("host.os.id");
        reason.push_str("the releases have no Windows wheels");
    } else {
        let Some(torch) = m.package("torch") else {
            return Outcome::clear();
        };
        let Some(version) = torch.version() else {
            return Outcome::needs(torch.version_path().as_str());
        };
        let release = version.release();
        let (major, minor) =
            (release.first().copied().unwrap_or(0), release.get(1).copied().unwrap_or(0));
        let Some(&(_, low, high)) =
            WHEELS.iter().find(|(spec, _, _)| fa.version_in(spec) == Some(true))
        else {
            return Outcome::clear();
        };
        if major == 2 && (low..=high).contains(&minor) {
            return Outcome::clear();
        }
        outcome = outcome.evidence(torch.version_path().as_str());
        reason.push_str("this release has wheels for torch 2.");
        pitfall_sdk::text::push_int(&mut reason, low as i64);
        reason.push_str(" to 2.");
        pitfall_sdk::text::push_int(&mut reason, high as i64);
        reason.push_str(" only, not for torch ");
        reason.push_str(version.as_str());
    }
    let nvcc = match m.build_tool("nvcc") {
        Some(None) => " nvcc is listed as absent, so the build fails.",
        _ => "",
    };
    outcome
        .param_field("version", fa.version_path().as_str())
        .param("reason", &reason)
        .param("nvcc", nvcc)
}

pitfall_sdk::export_rule!(evaluate);
