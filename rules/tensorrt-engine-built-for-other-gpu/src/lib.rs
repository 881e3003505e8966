//! A serialized TensorRT engine runs only on GPUs of the compute capability
//! it was built on, unless it was built (TensorRT 8.6+, on Ampere or newer)
//! with hardware compatibility level AMPERE_PLUS (TensorRT docs; TensorRT
//! issue 3130, TensorRT-LLM issue 222).
//!
//! Reads the proposed `workload.engine_build_capability` (the build GPU's
//! compute capability, recorded when the engine is built) and
//! `workload.engine_hardware_compatibility` (`none`, `ampere_plus`,
//! `same_compute_capability`).
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const BUILD: &str = "workload.engine_build_capability";
const COMPAT: &str = "workload.engine_hardware_compatibility";

const REMEDY_BUILD_GPU: u32 = 0;
const REMEDY_REBUILD: u32 = 1;

/// A GPU of the hardware table with this compute capability.
fn gpu_with(cc: ComputeCapability) -> Option<&'static str> {
    match (cc.major, cc.minor) {
        (7, 0) => Some("V100 16GB"),
        (7, 5) => Some("T4"),
        (8, 0) => Some("A100 80GB"),
        (8, 6) => Some("A10G"),
        (8, 9) => Some("L4"),
        (9, 0) => Some("H100 SXM"),
        _ => None,
    }
}

fn ampere_plus(level: &str) -> bool {
    let l = level.trim();
    ["ampere_plus", "ampere+", "kampere_plus", "ampere-plus"]
        .iter()
        .any(|s| l.eq_ignore_ascii_case(s))
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(build_text) = m.text(BUILD) else {
        // Plain TensorRT always runs serialized engines; TensorRT-LLM may not.
        if m.package("tensorrt").is_some() && m.nvidia_gpus().next().is_some() {
            return Outcome::needs(BUILD);
        }
        return Outcome::clear();
    };
    let Ok(build) = ComputeCapability::parse(build_text.trim()) else {
        return Outcome::needs(BUILD);
    };
    let compat_ampere_plus = m.text(COMPAT).is_some_and(|l| ampere_plus(&l));
    let mut mismatch = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            return Outcome::needs(gpu.field_path("compute_capability").as_str());
        };
        if cc == build {
            continue;
        }
        if compat_ampere_plus && build >= AMPERE && cc >= AMPERE {
            continue;
        }
        if mismatch.is_none() {
            mismatch = Some((gpu, cc));
        }
    }
    let Some((gpu, cc)) = mismatch else {
        return Outcome::clear();
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut build_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence(BUILD)
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("build", build.write_to(&mut build_buf))
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if m.has(COMPAT) {
        outcome = outcome.evidence(COMPAT);
    }
    match gpu_with(build) {
        Some(model) => {
            outcome.param("model", model).remedy(REMEDY_BUILD_GPU).remedy(REMEDY_REBUILD)
        }
        None => outcome.remedy(REMEDY_REBUILD),
    }
}

pitfall_sdk::export_rule!(evaluate);
