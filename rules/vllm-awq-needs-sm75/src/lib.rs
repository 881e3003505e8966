//! vLLM's AWQ kernels need compute capability 7.5 (KNOWLEDGE.md B7): Volta
//! (V100, 7.0) is refused at start-up. GPUs below 7.0 are left to
//! `vllm-needs-sm70`, since vLLM does not run there at all.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const AWQ_MIN: ComputeCapability = ComputeCapability::new(7, 5);

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
        || m.package("vllm").is_none()
    {
        return Outcome::clear();
    }
    if m.workload().quantization().as_deref() != Some("awq") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AWQ_MIN || cc < VOLTA {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
