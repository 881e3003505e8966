//! Gemma 4 E2B/E4B unquantized want one GPU with 24 GB or more per the vLLM
//! recipe; on a 16 GB card (T4G) the weights leave little or no room for the
//! KV cache (KNOWLEDGE.md B23).
#![no_std]

use pitfall_sdk::prelude::*;

/// "24 GB" cards report about 22.5 GiB (A10G 23,028 MiB, L4 23,034 MiB);
/// 16 GB cards about 15,360 MiB.
const MIN_MIB: f64 = 22_000.0;

/// Markers of a quantized checkpoint in a model id.
const QUANTIZED_MARKERS: [&str; 12] = [
    "awq", "gptq", "fp8", "nvfp4", "mxfp4", "int4", "int8", "w4a16", "w8a8", "bnb", "4bit", "gguf",
];

/// Which small Gemma 4 the model id names. The id is asked about
/// (`text_contains`), never read: the registry answers every model id that
/// names neither from one evaluation.
fn variant(w: &Workload<'_>) -> Option<&'static str> {
    if w.model_mentions(&["gemma-4-e2b"])? {
        Some("E2B")
    } else if w.model_mentions(&["gemma-4-e4b"])? {
        Some("E4B")
    } else {
        None
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let Some(variant) = variant(&w) else {
        return Outcome::clear();
    };
    if w.quantization().is_some_and(|q| !q.is_empty() && q != "none") {
        return Outcome::clear();
    }
    if w.model_mentions(&QUANTIZED_MARKERS) == Some(true) {
        return Outcome::clear();
    }
    let mut smallest: Option<(Accelerator, f64)> = None;
    for gpu in m.nvidia_gpus() {
        let Some(mib) = gpu.memory_mib().filter(|v| *v > 0.0) else {
            return Outcome::needs(gpu.field_path("memory_mib").as_str());
        };
        if smallest.as_ref().is_none_or(|(_, s)| mib < *s) {
            smallest = Some((gpu, mib));
        }
    }
    let Some((gpu, mem_mib)) = smallest else {
        return Outcome::clear();
    };
    // Tensor parallelism over several cards pools their memory.
    let tp = w.tensor_parallel_size().unwrap_or(1).max(1);
    let ranks = tp.min(m.device_count().max(1));
    if mem_mib * f64::from(ranks) >= MIN_MIB {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut outcome = Outcome::matched()
        .evidence("workload.model")
        .evidence(gpu.field_path("memory_mib").as_str())
        .param("variant", variant)
        .param("gpu", &name)
        .param_int("mem_mib", mem_mib as i64)
        .param_decimal("mem_gib", mem_mib / 1024.0, 1);
    if m.has("workload.dtype") {
        outcome = outcome.evidence("workload.dtype");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
