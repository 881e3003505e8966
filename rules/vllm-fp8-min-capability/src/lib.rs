//! vLLM's fp8 quantization has a minimum compute capability that depends on
//! the vLLM release (KNOWLEDGE.md B6).
//!
//! - FP8 W8A8 (hardware FP8) needs 8.9 (Ada, Hopper, Blackwell).
//! - From vLLM 0.5.1 (PR 5975, FP8 Marlin), Ampere (8.0-8.6) runs fp8
//!   checkpoints weight-only (W8A16); before that vLLM refused them.
//! - Turing (7.5) got FP8 Marlin in PR 29901 (opened December 2025, after
//!   the 0.12.0 release). Assumed here: vLLM before 0.13.0 refuses fp8 on
//!   Turing; from 0.13.0 on the rule stays silent because the exact first
//!   release is not confirmed.
//! - Volta (7.0) has no fp8 path in any release.
//!
//! GPUs below 7.0 are left to `vllm-needs-sm70`: vLLM does not run there at all.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const ADA: ComputeCapability = ComputeCapability::new(8, 9);
/// First release with FP8 Marlin (weight-only fp8 on Ampere).
const FP8_MARLIN_AMPERE: &str = "0.5.1";
/// Assumed first release with FP8 Marlin on Turing (see the module docs).
const FP8_MARLIN_TURING: &str = "0.13.0";

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_ADA_GPU: u32 = 1;
const REMEDY_NO_FP8: u32 = 2;

fn lt(v: &Version, bound: &str) -> bool {
    Version::parse(bound).is_ok_and(|b| *v < b)
}

/// The lowest compute capability this vLLM release accepts fp8 on.
fn min_capability(v: &Version) -> &'static str {
    if lt(v, FP8_MARLIN_AMPERE) {
        "8.9"
    } else if lt(v, FP8_MARLIN_TURING) {
        "8.0"
    } else {
        "7.5"
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
        || m.package("vllm").is_none()
    {
        return Outcome::clear();
    }
    if m.workload().quantization().as_deref() != Some("fp8") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= ADA || cc < VOLTA {
        return Outcome::clear();
    }
    let vllm = m.package("vllm");
    let version = vllm.as_ref().and_then(Package::version);
    let (min, vllm_text) = match (&version, cc < TURING) {
        (Some(v), _) => {
            let min = min_capability(v);
            let Ok(min_cc) = ComputeCapability::parse(min) else {
                return Outcome::clear();
            };
            if cc >= min_cc {
                return Outcome::clear();
            }
            (min, String::from(v.as_str()))
        }
        // Volta: no vLLM release runs fp8 there.
        (None, true) => ("7.5", String::from("(any release)")),
        (None, false) => return Outcome::needs("packages.vllm.version"),
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("vllm", &vllm_text)
        .param("min", min)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if let (Some(vllm), Some(_)) = (&vllm, &version) {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    if cc >= AMPERE {
        outcome = outcome.remedy(REMEDY_UPGRADE);
    }
    outcome.remedy(REMEDY_ADA_GPU).remedy(REMEDY_NO_FP8)
}

pitfall_sdk::export_rule!(evaluate);
