//! vLLM 0.17.x picks TRITON_ATTN for multimodal encoder attention on GPUs
//! below compute capability 8.0, where encoder profiling hangs (issue
//! 36357). vllm/platforms/cuda.py `get_vit_attn_backend` read at 0.16.0
//! (TORCH_SDPA below 8.0), 0.17.0 and 0.17.1 (FLASH_ATTN, TRITON_ATTN, ...;
//! Triton accepts every capability) and 0.18.0 (TORCH_SDPA before Triton
//! below 8.0).
//!
//! Reads two proposed fields: `workload.multimodal` (the model has a vision
//! or audio encoder) and `workload.mm_encoder_attention_backend` (vLLM's
//! `--mm-encoder-attn-backend`).
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
/// Releases whose encoder backend order puts Triton before SDPA below 8.0.
const AFFECTED: &str = ">=0.17.0,<0.18.0";
const MULTIMODAL: &str = "workload.multimodal";
const ENCODER_BACKEND: &str = "workload.mm_encoder_attention_backend";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    match vllm.version_in(AFFECTED) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    // An explicitly chosen encoder backend other than Triton avoids it.
    if let Some(backend) = m.text(ENCODER_BACKEND)
        && !backend.trim().eq_ignore_ascii_case("TRITON_ATTN")
    {
        return Outcome::clear();
    }
    match m.boolean(MULTIMODAL) {
        None => return Outcome::needs(MULTIMODAL),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(MULTIMODAL)
        .param_field("vllm", vllm.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
