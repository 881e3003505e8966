//! gpt-oss uses attention sinks; a forced vLLM attention backend without
//! sink support on the GPU fails at start-up (PyPI wheels 0.10.2 to 0.34.0:
//! supports_sink per backend, flashinfer.py, fa_utils.py, cuda.py).
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);
/// FlashAttention asserts FA3 for sinks (0.11.0), then validates (0.11.1+).
const FLASH_ATTN_CHECKED: &str = ">=0.11.0";
/// FlashInfer gained sinks on 9.0 and 12.x in 0.28.0.
const FLASHINFER_BEFORE_HOPPER_AND_RTX: &str = "<0.28.0";
/// FLEX_ATTENTION, TREE_ATTN, XFORMERS refused by the validation from 0.11.1.
const VALIDATED: &str = ">=0.11.1";
/// XFORMERS was removed in 0.12.0 (vllm-xformers-backend-removed).
const XFORMERS_PRESENT: &str = "<0.12.0";
/// VLLM_ATTENTION_BACKEND is not read from 0.15.0.
const ENV_READ: &str = "<0.15.0";

fn is_gpt_oss(m: &Manifest) -> Option<bool> {
    if let Some(model_type) = m.text("workload.model_type") {
        return Some(model_type.trim() == "gpt_oss");
    }
    if let Some(arch) = m.text("workload.architecture") {
        return Some(arch.trim() == "GptOssForCausalLM");
    }
    m.workload().model_mentions(&["gpt-oss"])
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    match vllm.version_in(">=0.10.2") {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    match is_gpt_oss(m) {
        None => return Outcome::needs("workload.model_type"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    // The forced backend: the flag, else (before 0.15.0) the variable.
    let (backend, path) = match m.workload().attention_backend() {
        Some(b) => (b, "workload.attention_backend"),
        None => {
            let env = match vllm.version_in(ENV_READ) {
                Some(true) => m.env("VLLM_ATTENTION_BACKEND"),
                _ => None,
            };
            match env {
                Some(b) => (b.trim().to_ascii_uppercase(), "env.VLLM_ATTENTION_BACKEND"),
                // vLLM chooses TRITON_ATTN for sinks by itself.
                None => return Outcome::clear(),
            }
        }
    };
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let within = |spec: &str| vllm.version_in(spec) == Some(true);
    let fails = match backend.as_str() {
        // FA3 only on major 9; FA4 on major 10 in later releases (not judged).
        // Below 8.0 FlashAttention itself is refused (flash-attn2-needs-sm80).
        "FLASH_ATTN" => {
            within(FLASH_ATTN_CHECKED) && cc >= AMPERE && cc.major != 9 && cc.major != 10
        }
        "FLASHINFER" => {
            if cc < HOPPER {
                true
            } else if cc.major == 9 || cc.major >= 11 {
                within(FLASHINFER_BEFORE_HOPPER_AND_RTX)
            } else {
                false
            }
        }
        "FLEX_ATTENTION" | "TREE_ATTN" => within(VALIDATED),
        "XFORMERS" => within(VALIDATED) && within(XFORMERS_PRESENT),
        _ => false,
    };
    if !fails {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence(path)
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param("backend", &backend)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
