//! vLLM's Triton unified attention kernel asks for about 96 KiB of shared
//! memory per block at head_dim 512; Turing GPUs allow 64 KiB, so it fails
//! with `OutOfResources` (KNOWLEDGE.md A5).
#![no_std]

use pitfall_sdk::prelude::*;

/// Shared memory per block the kernel needs at head_dim 512 (field reports).
const NEEDED_KIB: f64 = 96.0;
/// The head size at which the field reports saw the kernel ask for that much.
const LARGE_HEAD_DIM: u32 = 512;
/// FlashAttention's largest head size: above it vLLM cannot pick FlashAttention.
const FLASH_ATTN_MAX_HEAD_DIM: u32 = 256;

/// Model families known to use head_dim 512, for manifests without `head_dims`.
const KNOWN_HEAD_DIMS: &[(&str, &[u32])] = &[("gemma-4", &[256, 512]), ("gemma4", &[256, 512])];

fn evaluate(m: &Manifest) -> Outcome {
    // The kernel is vLLM's (its `applies_to` says so): other engines pick
    // their own attention kernels.
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    // 1. Which attention backend: explicit, or the one vLLM falls back to.
    let (backend, backend_path) = match (w.attention_backend(), m.env("VLLM_ATTENTION_BACKEND")) {
        (Some(b), _) => (Some(b), "workload.attention_backend"),
        (None, Some(b)) => (Some(b.trim().to_ascii_uppercase()), "env.VLLM_ATTENTION_BACKEND"),
        (None, None) => (None, ""),
    };
    if backend.as_deref().is_some_and(|b| !b.starts_with("TRITON_ATTN")) {
        return Outcome::clear();
    }
    // 2. The largest head size.
    let mut dims = w.head_dims();
    let from_model = dims.is_empty();
    if from_model {
        // The model id is asked about (`text_contains`), never read: the
        // registry answers every id of another family from one evaluation.
        if let Some((_, known)) =
            KNOWN_HEAD_DIMS.iter().find(|(family, _)| w.model_mentions(&[family]) == Some(true))
        {
            dims.extend_from_slice(known);
        }
    }
    let max_dim = dims.iter().copied().max();
    if max_dim.is_some_and(|d| d < LARGE_HEAD_DIM) {
        return Outcome::clear();
    }
    // 3. The GPU with the least shared memory per block.
    let mut smallest: Option<(Accelerator, f64)> = None;
    let mut unknown: Option<Accelerator> = None;
    for gpu in m.nvidia_gpus() {
        match gpu.shared_memory_per_block_kib() {
            Some(kib) if smallest.as_ref().is_none_or(|(_, s)| kib < *s) => {
                smallest = Some((gpu, kib))
            }
            Some(_) => {}
            None => unknown = unknown.or(Some(gpu)),
        }
    }
    let tight = smallest.filter(|(_, kib)| *kib < NEEDED_KIB);
    let Some((gpu, kib)) = tight else {
        return match unknown {
            Some(gpu) => {
                let outcome =
                    Outcome::needs(gpu.field_path("shared_memory_per_block_kib").as_str());
                if max_dim.is_none() { outcome.missing("workload.head_dims") } else { outcome }
            }
            None => Outcome::clear(),
        };
    };
    let Some(max_dim) = max_dim else {
        return Outcome::needs("workload.head_dims");
    };
    // Without an explicit backend, a head size above FlashAttention's limit
    // leaves vLLM the Triton kernel (it also forces Triton for models that
    // mix head sizes, such as Gemma 4).
    let note = if backend.is_some() {
        "the Triton attention backend is selected"
    } else if max_dim > FLASH_ATTN_MAX_HEAD_DIM {
        "no backend is set, and FlashAttention stops at head_dim 256, so vLLM uses Triton attention"
    } else {
        return Outcome::clear();
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("shared_memory_per_block_kib").as_str())
        .evidence(if from_model { "workload.model" } else { "workload.head_dims" });
    if backend.is_some() {
        outcome = outcome.evidence(backend_path);
    }
    outcome
        .param_int("head_dim", i64::from(max_dim))
        .param("gpu", &gpu_name)
        .param_decimal("smem_kib", kib, 0)
        .param("backend_note", note)
}

pitfall_sdk::export_rule!(evaluate);
