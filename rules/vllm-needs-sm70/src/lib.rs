//! vLLM needs compute capability 7.0 (Volta) or newer (KNOWLEDGE.md B2).
//!
//! Old vLLM refused to build for such GPUs (`setup.py` checks the local
//! GPUs); its wheels carry no kernels below sm_70 either, so every
//! release fails on Pascal, Maxwell and older.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
        || m.package("vllm").is_none()
    {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= VOLTA {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if let Some(vllm) = m.package("vllm")
        && vllm.version_text().is_some()
    {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
