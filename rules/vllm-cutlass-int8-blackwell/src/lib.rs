//! vLLM's CUTLASS int8 scaled_mm has no Blackwell kernels (PR 25935,
//! issue 54311): int8 W8A8 checkpoints (compressed-tensors or Quark
//! W8A8-INT8) fail at start-up on compute capability 10.x and 12.x.
//!
//! The scheme comes from the proposed `workload.quantization_scheme`
//! (`w8a8-int8`, also spelled `w8a8_int8` or `int8`).
#![no_std]

use pitfall_sdk::prelude::*;

const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);
const SCHEME: &str = "workload.quantization_scheme";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    // Only methods whose int8 scheme runs on CUTLASS scaled_mm.
    match m.workload().quantization().as_deref() {
        Some("compressed-tensors") | Some("compressed_tensors") | Some("quark") => {}
        // No quantization: an unquantized checkpoint.
        None | Some(_) => return Outcome::clear(),
    }
    // The GPU a deployment needs kernels for: any Blackwell GPU breaks it.
    let mut blackwell = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            return Outcome::needs(gpu.field_path("compute_capability").as_str());
        };
        if cc >= BLACKWELL && blackwell.is_none() {
            blackwell = Some((gpu, cc));
        }
    }
    let Some((gpu, cc)) = blackwell else {
        return Outcome::clear();
    };
    let Some(int8) = m.workload().scheme_is_int8_w8a8() else {
        return Outcome::needs(SCHEME);
    };
    if !int8 {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("workload.quantization")
        .evidence(SCHEME)
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("scheme", "W8A8-INT8")
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    outcome = if vllm.version_text().is_some() {
        outcome
            .evidence(vllm.version_path().as_str())
            .param_field("vllm", vllm.version_path().as_str())
    } else {
        outcome.param("vllm", "(any release)")
    };
    outcome
}

pitfall_sdk::export_rule!(evaluate);
