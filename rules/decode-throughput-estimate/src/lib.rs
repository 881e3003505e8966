//! Single-stream decode is memory-bandwidth bound (KNOWLEDGE.md A7): each
//! token reads the weights it passes through (the effective / active
//! parameters) and the KV cache so far, so tokens/s <= bandwidth ÷ bytes
//! read per token. On the field report's T4G this bound is about 60 tokens/s
//! for Gemma 4 E2B (2.3B effective, bf16, 277 GB/s), where 43 were measured.
#![no_std]

use pitfall_sdk::prelude::*;

/// Below this many tokens/s for one stream at the start of a sequence, say so.
const SLOW_TOKENS_PER_S: f64 = 30.0;
const GB: f64 = 1e9;

/// Remedy indices in rule.json.
const REMEDY_QUANTIZE: u32 = 0;
const REMEDY_MORE_TP: u32 = 1;
const REMEDY_FASTER_GPU: u32 = 2;

/// vLLM quantization methods with 4-bit weights.
const FOUR_BIT: &[&str] = &[
    "awq",
    "awq_marlin",
    "gptq",
    "gptq_marlin",
    "gptq_bitblas",
    "marlin",
    "bitsandbytes",
    "nvfp4",
    "mxfp4",
    "modelopt_fp4",
];
/// vLLM quantization methods with 8-bit weights.
const EIGHT_BIT: &[&str] =
    &["fp8", "int8", "w8a8", "fbgemm_fp8", "ptpc_fp8", "experts_int8", "modelopt"];

/// Bytes read per parameter and what decides it, or `None` when unknown.
fn bytes_per_param(m: &Manifest) -> Option<(f64, String)> {
    let w = m.workload();
    match w.quantization() {
        Some(q) if q != "none" => {
            if FOUR_BIT.contains(&q.as_str()) {
                Some((0.5, q))
            } else if EIGHT_BIT.contains(&q.as_str()) {
                Some((1.0, q))
            } else {
                None
            }
        }
        _ => {
            // vLLM's default `auto` takes the checkpoint's dtype, 16-bit for current models.
            let dtype = w.dtype().unwrap_or_else(|| String::from("auto"));
            match dtype.as_str() {
                "auto" | "float16" | "bfloat16" => Some((2.0, dtype)),
                "float32" => Some((4.0, dtype)),
                _ => None,
            }
        }
    }
}

/// KV-cache bytes one GPU reads per token at `context` tokens, when the
/// model's geometry is known: 2 (K and V) × layers × KV heads per GPU ×
/// the largest head size × bytes per element × context.
fn kv_bytes(m: &Manifest, tp: u32, weight_bytes: f64) -> Option<(f64, f64)> {
    let w = m.workload();
    let layers = m.number("workload.num_hidden_layers").filter(|l| *l >= 1.0)?;
    let kv_heads = w.num_kv_heads().filter(|k| *k > 0)?;
    let head_dim = w.head_dims().into_iter().max().filter(|d| *d > 0)?;
    let context =
        w.max_model_len().or_else(|| m.number("workload.max_context")).filter(|c| *c >= 1.0)?;
    let element = match w.kv_cache_dtype() {
        Some(k) if k.starts_with("fp8") || k == "int8" => 1.0,
        _ => weight_bytes.clamp(2.0, 4.0),
    };
    // KV heads split over TP ranks; a rank keeps at least one.
    let heads = if kv_heads >= tp { f64::from(kv_heads) / f64::from(tp) } else { 1.0 };
    Some((2.0 * layers * heads * f64::from(head_dim) * element * context, context))
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.has("workload") {
        return Outcome::clear();
    }
    let w = m.workload();
    // The slowest GPU sets the pace.
    let mut slowest: Option<(Accelerator, f64)> = None;
    for gpu in m.nvidia_gpus() {
        match gpu.memory_bandwidth_gbps() {
            Some(bw) if bw > 0.0 => {
                if slowest.as_ref().is_none_or(|(_, s)| bw < *s) {
                    slowest = Some((gpu, bw));
                }
            }
            _ => return Outcome::needs(gpu.field_path("memory_bandwidth_gbps").as_str()),
        }
    }
    let Some((gpu, bandwidth)) = slowest else {
        return Outcome::clear();
    };
    // The bytes a token reads: effective (active) parameters where known.
    let (params_b, which, params_path) =
        match m.number("workload.active_parameters_b").filter(|p| *p > 0.0) {
            Some(active) => (active, "effective", "workload.active_parameters_b"),
            None => match w.parameters_b() {
                Some(total) => (total, "total", "workload.parameters_b"),
                None => {
                    return Outcome::needs("workload.parameters_b")
                        .missing("workload.active_parameters_b");
                }
            },
        };
    if params_b <= 0.0 {
        return Outcome::clear();
    }
    let Some((bytes, format)) = bytes_per_param(m) else {
        return Outcome::clear();
    };
    // Tensor parallelism splits the weights: each GPU reads its share per token.
    let devices = m.device_count().max(1);
    let tp = w.tensor_parallel_size().unwrap_or(1).clamp(1, devices);
    let weights_gb = params_b * bytes;
    let per_gpu_gb = weights_gb / f64::from(tp);
    let tokens_per_s = bandwidth / per_gpu_gb;
    if tokens_per_s >= SLOW_TOKENS_PER_S {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut kv_note = String::new();
    if let Some((kv, context)) = kv_bytes(m, tp, bytes) {
        let at_context = bandwidth / (per_gpu_gb + kv / GB);
        kv_note.push_str(", falling to about ");
        kv_note.push_str(&pitfall_sdk::text::fixed(at_context, 1));
        kv_note.push_str(" tokens/s at ");
        pitfall_sdk::text::push_int(&mut kv_note, context as i64);
        kv_note.push_str(" tokens of context (KV cache reads)");
    }
    let mut outcome = Outcome::matched()
        .evidence(params_path)
        .evidence(gpu.field_path("memory_bandwidth_gbps").as_str())
        .param_decimal("tokens_per_s", tokens_per_s, 1)
        .param("kv_note", &kv_note)
        .param_decimal("weights_gb", weights_gb, 1)
        .param_decimal("params_b", params_b, 2)
        .param("which", which)
        .param_decimal("bytes", bytes, 1)
        .param("format", &format)
        .param_decimal("bandwidth_gbps", bandwidth, 0)
        .param("gpu", &gpu_name)
        .param_int("tp", i64::from(tp))
        .param_int("tp_next", i64::from(tp) * 2);
    if w.quantization().is_some() {
        outcome = outcome.evidence("workload.quantization");
    } else if w.dtype().is_some() {
        outcome = outcome.evidence("workload.dtype");
    }
    let can_quantize = bytes > 0.5;
    let can_split = devices >= tp.saturating_mul(2);
    if can_quantize {
        outcome = outcome.remedy(REMEDY_QUANTIZE);
    }
    if can_split {
        outcome = outcome.remedy(REMEDY_MORE_TP);
    }
    if !can_quantize && !can_split {
        outcome = outcome.remedy(REMEDY_FASTER_GPU);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
