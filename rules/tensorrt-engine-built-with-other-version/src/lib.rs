//! A serialized TensorRT engine is compatible only with the TensorRT version
//! that built it, unless it was built version-compatible (TensorRT 8.6 and
//! later, `BuilderFlag::kVERSION_COMPATIBLE`): then it also runs on later
//! runtimes of the same major and, across majors, 8 on 9 and 10, 10 on 11
//! (TensorRT docs, Version Compatibility; 11.4.1 support matrix).
//!
//! Reads `workload.engine_build_tensorrt` (the TensorRT version that built
//! the engine) and `workload.engine_version_compatible` (bool).
#![no_std]

use pitfall_sdk::prelude::*;

const BUILD: &str = "workload.engine_build_tensorrt";
const VERSION_COMPATIBLE: &str = "workload.engine_version_compatible";
/// Runtimes of another major that run a version-compatible engine:
/// (build major, runtime major).
const ACROSS_MAJORS: [(u64, u64); 3] = [(8, 9), (8, 10), (10, 11)];

/// major.minor.patch, the library version TensorRT's message compares.
fn release(v: &Dotted) -> [u64; 3] {
    let p = v.parts();
    [
        p.first().copied().unwrap_or(0),
        p.get(1).copied().unwrap_or(0),
        p.get(2).copied().unwrap_or(0),
    ]
}

/// Whether a version-compatible engine built by `build` runs on `runtime`.
fn runs_version_compatible(build: [u64; 3], runtime: [u64; 3]) -> bool {
    let from_8_6 = build >= [8, 6, 0];
    let same_major = build[0] == runtime[0] && runtime >= build;
    let across = ACROSS_MAJORS.contains(&(build[0], runtime[0]));
    from_8_6 && (same_major || across)
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(trt) = m.package("tensorrt") else {
        return Ok(Outcome::clear());
    };
    let runtime_path = trt.version_path();
    let runtime_text = m.need(runtime_path.as_str())?;
    let Ok(runtime) = Dotted::parse(runtime_text.trim()) else {
        return Err(Outcome::unreadable(runtime_path.as_str()));
    };
    let build_text = m.need(BUILD)?;
    let Ok(build) = Dotted::parse(build_text.trim()) else {
        return Err(Outcome::unreadable(BUILD));
    };
    let (b, r) = (release(&build), release(&runtime));
    if b == r {
        return Ok(Outcome::clear());
    }
    let compatible = m.boolean(VERSION_COMPATIBLE) == Some(true);
    if compatible && runs_version_compatible(b, r) {
        return Ok(Outcome::clear());
    }
    let mut outcome = Outcome::matched()
        .evidence(BUILD)
        .evidence(runtime_path.as_str())
        .param_field("build", BUILD)
        .param_field("runtime", runtime_path.as_str());
    if m.has(VERSION_COMPATIBLE) {
        outcome = outcome.evidence(VERSION_COMPATIBLE);
    }
    Ok(outcome.remedy(0))
}

pitfall_sdk::export_rule!(evaluate);
