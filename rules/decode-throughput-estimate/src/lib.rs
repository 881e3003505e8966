//! Single-stream decode is memory-bandwidth bound: every token reads all the
//! weights once, so tokens/s ≈ bandwidth ÷ weight bytes (KNOWLEDGE.md A7).
#![no_std]

use pitfall_sdk::prelude::*;

/// Below this many tokens/s for one stream, say so.
const SLOW_TOKENS_PER_S: f64 = 30.0;

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
    let Some(params_b) = w.parameters_b() else {
        return Outcome::needs("workload.parameters_b");
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
    let tokens_per_s = bandwidth * f64::from(tp) / weights_gb;
    if tokens_per_s >= SLOW_TOKENS_PER_S {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut outcome = Outcome::matched()
        .evidence("workload.parameters_b")
        .evidence(gpu.field_path("memory_bandwidth_gbps").as_str())
        .param_decimal("tokens_per_s", tokens_per_s, 1)
        .param_decimal("weights_gb", weights_gb, 1)
        .param_decimal("params_b", params_b, 2)
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
