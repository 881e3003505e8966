//! FlashAttention-2 has kernels for fp16 and bf16 only: every entry point of
//! csrc/flash_attn/flash_api.cpp (v2.8.3) checks
//! `q_dtype == torch::kFloat16 || q_dtype == torch::kBFloat16` and raises
//! "FlashAttention only support fp16 and bf16 data type" otherwise, right
//! after the capability check (GPUs below 8.0 fail that one first: the rule
//! `flash-attn2-needs-sm80`). A float32 workload that selects the flash-attn
//! package as its attention backend (transformers'
//! attn_implementation="flash_attention_2", whose default dtype is float32)
//! fails at the first forward. vLLM is left out: it ships its own
//! FlashAttention build and chooses the backend per dtype.
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);

fn is_flash_attn(backend: &str) -> bool {
    matches!(
        backend.trim(),
        "FLASH_ATTN" | "FLASH_ATTENTION_2" | "FLASH_ATTENTION" | "FLASH_ATTN_2"
    )
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(fa) = m.package("flash-attn") else {
        return Outcome::clear();
    };
    if m.package("vllm").is_some() {
        return Outcome::clear();
    }
    let w = m.workload();
    if !w.attention_backend().is_some_and(|b| is_flash_attn(&b)) {
        return Outcome::clear();
    }
    let Some(dtype) = w.dtype() else {
        return Outcome::needs("workload.dtype");
    };
    if dtype != "float32" {
        return Outcome::clear();
    }
    // Below 8.0 the capability check raises first.
    if m.weakest_nvidia_gpu().is_some_and(|(_, cc)| cc < AMPERE) {
        return Outcome::clear();
    }
    let mut outcome =
        Outcome::matched().evidence("workload.dtype").evidence("workload.attention_backend");
    if fa.version_text().is_some() {
        outcome = outcome.evidence(fa.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
