//! Python interpreters outside what the installed vLLM or PyTorch release
//! can be installed on (KNOWLEDGE.md B21, corrected): pip finds no
//! distribution. The interpreter is the package named `python`.
//!
//! vLLM: its wheels are abi3 (`cp38-abi3`) and it ships sdists, so the
//! Requires-Python of each release decides (METADATA of every wheel 0.2.0 to
//! 0.34.0, release table `python`): no upper bound before 0.8.4, `<3.13` for
//! 0.8.4 to 0.10.1.1, `<3.14` for 0.10.2 to 0.19.1, `<3.15` for 0.20.0 to
//! 0.34.0. Floors (3.8, 3.9, 3.10, 3.11) are `vllm-python-below-floor`'s,
//! except for 0.14.0 to 0.26.0, the releases that rule leaves to this one
//! (its OTHER_RULE), where the floor is 3.10.
//!
//! PyTorch: no sdist on PyPI, so the CPython versions its Linux wheels exist
//! for decide (`pip index versions torch --python-version 3.X` against PyPI,
//! x86_64 and aarch64, 2026-12-06). Only untagged versions (PyPI's wheels)
//! are judged; the PyTorch index's `+cuXYZ` wheels were not queried.
#![no_std]

use pitfall_sdk::prelude::*;

/// vLLM releases (PEP 440) and the newest Python 3 minor their
/// Requires-Python admits.
const VLLM_MAX: [(&str, u64, &str); 3] = [
    (">=0.8.4,<0.10.2", 12, "Requires-Python <3.13"),
    (">=0.10.2,<0.20.0", 13, "Requires-Python <3.14"),
    (">=0.20.0,<0.34.1", 14, "Requires-Python <3.15"),
];
/// The releases whose floor `vllm-python-below-floor` leaves to this rule
/// (its OTHER_RULE, verbatim), and that floor (Requires-Python >=3.10).
const VLLM_FLOOR_HERE: &str = ">=0.14.0.dev0,<0.26.1.dev0";
const VLLM_FLOOR_HERE_MIN: u64 = 10;
/// Releases `vllm-python-below-floor` judges at all (its FLOORS, 0.2 to 0.34.0).
const VLLM_FLOORS_THERE: &str = "<0.34.1";

/// PyTorch releases and the Python 3 minors PyPI has Linux wheels for.
struct TorchWheels {
    spec: &'static str,
    min: u64,
    max: u64,
    /// The newest minor on aarch64, where it differs.
    max_aarch64: u64,
}

const TORCH: [TorchWheels; 6] = [
    TorchWheels { spec: ">=2.0,<2.2", min: 8, max: 11, max_aarch64: 11 },
    TorchWheels { spec: ">=2.2,<2.5", min: 8, max: 12, max_aarch64: 12 },
    // cp313 wheels of 2.5.x exist for x86_64 only.
    TorchWheels { spec: ">=2.5,<2.6", min: 9, max: 13, max_aarch64: 12 },
    TorchWheels { spec: ">=2.6,<2.9", min: 9, max: 13, max_aarch64: 13 },
    TorchWheels { spec: ">=2.9,<2.15", min: 10, max: 14, max_aarch64: 14 },
    TorchWheels { spec: ">=2.15,<2.16", min: 11, max: 15, max_aarch64: 15 },
];

/// `3.x` as text.
fn py_text(minor: u64) -> String {
    let mut s = String::from("3.");
    pitfall_sdk::text::push_int(&mut s, minor as i64);
    s
}

fn range_text(min: u64, max: u64) -> String {
    let mut s = py_text(min);
    s.push_str(" to ");
    s.push_str(&py_text(max));
    s
}

/// A Python every judged release of the stack installs on: 3.12, or 3.11
/// with PyTorch 2.0/2.1 (no cp312 wheels).
fn fix_for(m: &Manifest) -> &'static str {
    match m.package("torch").and_then(|t| t.version_in(">=2.0,<2.2")) {
        Some(true) => "3.11",
        _ => "3.12",
    }
}

fn report(
    m: &Manifest,
    python: &Package,
    package: &Package,
    label: &str,
    supported: &str,
    why: &str,
) -> Outcome {
    Outcome::matched()
        .param("fix", fix_for(m))
        .evidence(python.version_path().as_str())
        .evidence(package.version_path().as_str())
        .param_field("python", python.version_path().as_str())
        .param("package", label)
        .param_field("version", package.version_path().as_str())
        .param("supported", supported)
        .param("why", why)
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(python) = m.package("python") else {
        return Outcome::clear();
    };
    let vllm = m.package("vllm");
    let torch = m.package("torch");
    if vllm.is_none() && torch.is_none() {
        return Outcome::clear();
    }
    let Some(py) = python.version() else {
        return Outcome::needs(python.version_path().as_str());
    };
    let release = py.release();
    if release.first().copied() != Some(3) {
        return Outcome::clear();
    }
    let minor = release.get(1).copied().unwrap_or(0);

    if let Some(vllm) = &vllm {
        let Some(_) = vllm.version_text() else {
            return Outcome::needs(vllm.version_path().as_str());
        };
        for (spec, max, why) in VLLM_MAX {
            if vllm.version_in(spec) == Some(true) && minor > max {
                let mut supported = String::from("up to ");
                supported.push_str(&py_text(max));
                return report(m, &python, vllm, "vLLM", &supported, why);
            }
        }
        if vllm.version_in(VLLM_FLOOR_HERE) == Some(true) && minor < VLLM_FLOOR_HERE_MIN {
            let mut supported = py_text(VLLM_FLOOR_HERE_MIN);
            supported.push_str(" and newer");
            return report(m, &python, vllm, "vLLM", &supported, "Requires-Python >=3.10");
        }
    }

    let Some(torch) = &torch else {
        return Outcome::clear();
    };
    // The PyTorch index's `+cuXYZ` builds were not queried; no version, no judgement.
    let Some(tv) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    if tv.local().is_some() {
        return Outcome::clear();
    }
    let Some(wheels) = TORCH.iter().find(|w| torch.version_in(w.spec) == Some(true)) else {
        return Outcome::clear();
    };
    if minor < wheels.min {
        // With a vLLM whose floor vllm-python-below-floor judges, a too-old
        // interpreter is that rule's finding (vLLM pins a torch whose floor
        // is not above its own): one finding, not two.
        let other_rule = vllm.as_ref().is_some_and(|v| {
            v.version_in(VLLM_FLOORS_THERE) == Some(true)
                && v.version_in(VLLM_FLOOR_HERE) == Some(false)
        });
        if other_rule {
            return Outcome::clear();
        }
        let supported = range_text(wheels.min, wheels.max);
        return report(m, &python, torch, "PyTorch", &supported, "no wheel for this interpreter");
    }
    let max = if wheels.max == wheels.max_aarch64 {
        wheels.max
    } else {
        match m.arch().as_deref() {
            Some("x86_64") => wheels.max,
            Some("aarch64") => wheels.max_aarch64,
            // The two differ only above the aarch64 maximum.
            _ if minor <= wheels.max_aarch64 => wheels.max_aarch64,
            _ => return Outcome::needs("host.arch"),
        }
    };
    if minor > max {
        let supported = range_text(wheels.min, max);
        return report(m, &python, torch, "PyTorch", &supported, "no wheel for this interpreter");
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
