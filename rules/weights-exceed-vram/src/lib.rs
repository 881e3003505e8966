//! Model weights that do not fit in the GPUs' usable memory (KNOWLEDGE.md
//! B18): weights ≈ parameters × bytes per parameter, split over
//! tensor_parallel_size × pipeline_parallel_size GPUs, against each GPU's
//! memory × gpu_memory_utilization. Weights alone over that budget fail at
//! load (CUDA OOM) or leave no memory for the KV cache.
#![no_std]

use pitfall_sdk::prelude::*;

/// vLLM's default `gpu_memory_utilization`.
const DEFAULT_UTILIZATION: f64 = 0.9;
const MIB: f64 = 1_048_576.0;
const GB: f64 = 1e9;

/// The smallest power of two that is at least `x` (x > 0).
fn next_pow2_at_least(x: f64) -> u32 {
    let mut n: u32 = 1;
    while f64::from(n) < x && n < (1 << 20) {
        n *= 2;
    }
    n
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let Some(params_b) = w.parameters_b().filter(|p| *p > 0.0) else {
        return Outcome::clear();
    };
    // The GPU with the least memory bounds every shard.
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
    let util =
        w.gpu_memory_utilization().filter(|u| *u > 0.0 && *u <= 1.0).unwrap_or(DEFAULT_UTILIZATION);
    let tp = w.tensor_parallel_size().unwrap_or(1).max(1);
    let pp = w.pipeline_parallel_size().unwrap_or(1).max(1);
    let shards = tp.saturating_mul(pp);
    let quantization = w.quantization();
    let dtype = w.dtype();
    let (bytes, label) =
        pitfall_sdk::view::weight_precision(quantization.as_deref(), dtype.as_deref());

    let weights_gb = params_b * bytes;
    let per_gpu_gb = weights_gb / f64::from(shards);
    let usable_gb = mem_mib * util * MIB / GB;
    if per_gpu_gb <= usable_gb {
        return Outcome::clear();
    }

    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut outcome = Outcome::matched()
        .evidence("workload.parameters_b")
        .evidence(gpu.field_path("memory_mib").as_str());
    for path in [
        "workload.dtype",
        "workload.quantization",
        "workload.tensor_parallel_size",
        "workload.pipeline_parallel_size",
        "workload.gpu_memory_utilization",
    ] {
        if m.has(path) {
            outcome = outcome.evidence(path);
        }
    }
    outcome = outcome
        .param_decimal(
            "params_b",
            params_b,
            if params_b == f64::from(params_b as u32) { 0 } else { 1 },
        )
        .param("precision", label)
        .param("weights_gb", &pitfall_sdk::text::fixed(weights_gb, 1))
        .param("per_gpu_gb", &pitfall_sdk::text::fixed(per_gpu_gb, 1))
        .param_int("shards", i64::from(shards))
        .param("gpu", &name)
        .param("usable_gb", &pitfall_sdk::text::fixed(usable_gb, 1))
        .param_int("mem_mib", mem_mib as i64)
        .param_decimal("util", util, 2);

    // Remedy 0: 4-bit weights on the same GPUs.
    let four_bit_gb = params_b * 0.5;
    outcome = outcome.param("four_bit_gb", &pitfall_sdk::text::fixed(four_bit_gb, 1));
    let mut offered = false;
    if bytes > 0.5 && four_bit_gb / f64::from(shards) <= usable_gb {
        outcome = outcome.remedy(0);
        offered = true;
    }
    // More tensor-parallel ranks (a power of two, as head counts usually
    // are): remedy 1 on the GPUs present; remedies 2-4 on 2, 4 or 8 GPUs of
    // the same model (an action's GPU count cannot be a parameter).
    let tp_need =
        next_pow2_at_least(weights_gb / (f64::from(pp) * usable_gb)).max(tp.saturating_add(1));
    let gpus_need = tp_need.saturating_mul(pp);
    outcome = outcome
        .param_int("tp_need", i64::from(tp_need))
        .param_int("gpus_need", i64::from(gpus_need));
    let more_gpus = match gpus_need {
        2 => Some(2),
        4 => Some(3),
        8 => Some(4),
        _ => None,
    };
    if gpus_need <= m.device_count() {
        outcome = outcome.remedy(1);
    } else if let (Some(index), Some(_), 1) = (more_gpus, gpu.model(), pp) {
        outcome = outcome.remedy(index);
    } else if !offered {
        outcome = outcome.remedy(1);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
