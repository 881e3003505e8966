//! A max_model_len the KV cache cannot hold even for one sequence
//! (KNOWLEDGE.md B19), estimated from the GPU memory left after the weights
//! and the KV bytes per token: 2 (K and V) × layers × KV heads × head_dim ×
//! bytes per element, per GPU after tensor and pipeline splits. Without
//! `--max-model-len` vLLM uses the model's full context (`workload.max_context`).
//! The estimate ignores activations and CUDA graphs, so the real KV cache is
//! smaller still.
#![no_std]

use pitfall_sdk::prelude::*;

const DEFAULT_UTILIZATION: f64 = 0.9;
const MIB: f64 = 1_048_576.0;
const GB: f64 = 1e9;
/// vLLM's default KV block size; the suggested length is a multiple of it.
const BLOCK: u64 = 16;

/// Bytes per KV-cache element: `--kv-cache-dtype`, else the model dtype.
fn kv_bytes(kv_cache_dtype: Option<&str>, dtype: Option<&str>) -> f64 {
    match kv_cache_dtype {
        Some(k) if k.starts_with("fp8") || k == "int8" => 1.0,
        _ if dtype == Some("float32") => 4.0,
        _ => 2.0,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    // No `--max-model-len`: vLLM takes the model's own context length.
    let (max_len, len_path, implied) = match w.max_model_len().filter(|l| *l >= 1.0) {
        Some(l) => (l, "workload.max_model_len", ""),
        None => match m.number("workload.max_context").filter(|l| *l >= 1.0) {
            Some(l) => (l, "workload.max_context", " (the model's full context, as none was set)"),
            None => {
                return Outcome::needs("workload.max_context").missing("workload.max_model_len");
            }
        },
    };
    let Some(params_b) = w.parameters_b().filter(|p| *p > 0.0) else {
        return Outcome::clear();
    };
    let mut smallest: Option<f64> = None;
    for gpu in m.nvidia_gpus() {
        let Some(mib) = gpu.memory_mib().filter(|v| *v > 0.0) else {
            return Outcome::needs(gpu.field_path("memory_mib").as_str());
        };
        if smallest.is_none_or(|s| mib < s) {
            smallest = Some(mib);
        }
    }
    let Some(mem_mib) = smallest else {
        return Outcome::clear();
    };
    let util =
        w.gpu_memory_utilization().filter(|u| *u > 0.0 && *u <= 1.0).unwrap_or(DEFAULT_UTILIZATION);
    let tp = w.tensor_parallel_size().unwrap_or(1).max(1);
    let pp = w.pipeline_parallel_size().unwrap_or(1).max(1);
    let dtype = w.dtype();
    let weights_gb = params_b
        * pitfall_sdk::view::weight_precision(w.quantization().as_deref(), dtype.as_deref()).0;
    let per_gpu_weights_gb = weights_gb / f64::from(tp.saturating_mul(pp));
    let free_gb = mem_mib * util * MIB / GB - per_gpu_weights_gb;
    if free_gb <= 0.0 {
        // The weights do not fit at all: the weights rule's finding.
        return Outcome::clear();
    }

    // The model table's `num_hidden_layers`; `num_layers` is the old name.
    let (layers, layers_path) = match m.number("workload.num_hidden_layers").filter(|l| *l >= 1.0) {
        Some(l) => (Some(l), "workload.num_hidden_layers"),
        None => (m.number("workload.num_layers").filter(|l| *l >= 1.0), "workload.num_layers"),
    };
    let kv_heads = w.num_kv_heads().filter(|k| *k > 0);
    let head_dim = w.head_dims().into_iter().filter(|d| *d > 0).min();
    let (Some(layers), Some(kv_heads), Some(head_dim)) = (layers, kv_heads, head_dim) else {
        let mut outcome = Outcome::undetermined();
        if layers.is_none() {
            outcome = outcome.missing("workload.num_hidden_layers");
        }
        if kv_heads.is_none() {
            outcome = outcome.missing("workload.num_kv_heads");
        }
        if head_dim.is_none() {
            outcome = outcome.missing("workload.head_dims");
        }
        return outcome;
    };

    let element = kv_bytes(w.kv_cache_dtype().as_deref(), dtype.as_deref());
    // KV heads split over TP ranks; with more ranks than heads each rank
    // keeps one (replicated) head. Layers split over pipeline stages.
    let heads_per_gpu = if kv_heads >= tp { f64::from(kv_heads) / f64::from(tp) } else { 1.0 };
    let per_token = 2.0 * (layers / f64::from(pp)) * heads_per_gpu * f64::from(head_dim) * element;
    let tokens = free_gb * GB / per_token;
    if max_len <= tokens {
        return Outcome::clear();
    }
    let fit = (tokens as u64) / BLOCK * BLOCK;
    if fit < BLOCK {
        // The weights leave no room worth the name: not a length question.
        return Outcome::clear();
    }

    let mut outcome = Outcome::matched()
        .evidence(len_path)
        .evidence(layers_path)
        .evidence("workload.num_kv_heads")
        .evidence("workload.parameters_b")
        .param_int("max_len", max_len as i64)
        .param("implied", implied)
        .param_int("tokens", tokens as i64)
        .param_int("fit", fit as i64)
        .param_decimal("free_gb", free_gb, 1)
        .param_decimal("weights_gb", per_gpu_weights_gb, 1)
        .param_decimal("kib_per_token", per_token / 1024.0, 1)
        .remedy(0);
    // An 8-bit KV cache holds `element` times as many tokens.
    if element > 1.0 && max_len <= tokens * element {
        outcome = outcome.remedy(1);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
