//! FP8 Marlin runs fp8 checkpoints weight-only (W8A16) on GPUs without FP8
//! hardware: Ampere from vLLM 0.5.1, Turing from 0.14.0 (fp8.py
//! `get_min_capability` and `use_marlin` at those tags; KNOWLEDGE.md B6).
#![no_std]

use pitfall_sdk::prelude::*;

const FP8_HW: ComputeCapability = ComputeCapability::new(8, 9);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("fp8") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= FP8_HW || cc < TURING {
        return Outcome::clear();
    }
    // The releases that accept this GPU for fp8 (the others refuse it).
    let accepted = if cc >= AMPERE { ">=0.5.1" } else { ">=0.14.0" };
    match vllm.version_in(accepted) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
