//! vLLM shards attention heads across tensor-parallel ranks, so the TP size
//! must divide the attention head count, and the KV head count must divide
//! by it or (when TP exceeds the KV heads) divide it (KNOWLEDGE.md B14).
#![no_std]

use pitfall_sdk::prelude::*;

/// Whether vLLM can split `kv` KV heads over `tp` ranks: it divides them
/// when there are at least as many heads as ranks, else replicates each
/// head over `tp / kv` ranks.
fn kv_fits(kv: u32, tp: u32) -> bool {
    if tp >= kv { tp.is_multiple_of(kv) } else { kv.is_multiple_of(tp) }
}

fn fits(heads: u32, kv: Option<u32>, tp: u32) -> bool {
    heads.is_multiple_of(tp) && kv.is_none_or(|kv| kv_fits(kv, tp))
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let tp = w.tensor_parallel_size().unwrap_or(1);
    if tp <= 1 {
        return Outcome::clear();
    }
    let Some(heads) = w.num_attention_heads() else {
        return Outcome::needs("workload.num_attention_heads");
    };
    if heads == 0 {
        return Outcome::clear();
    }
    let kv = w.num_kv_heads().filter(|&k| k > 0);
    if fits(heads, kv, tp) {
        return Outcome::clear();
    }
    let devices = m.device_count();
    let cap = if devices > 0 { tp.min(devices) } else { tp };
    // 1 always fits, so this finds a size.
    let tp_fix = (1..=cap).rev().find(|&t| fits(heads, kv, t)).unwrap_or(1);
    let pp = w.pipeline_parallel_size().unwrap_or(1).max(1);
    let mut outcome = Outcome::matched()
        .evidence("workload.tensor_parallel_size")
        .param_int("tp", i64::from(tp))
        .param_int("tp_fix", i64::from(tp_fix))
        .param_int("cap", i64::from(cap));
    outcome = if !heads.is_multiple_of(tp) {
        outcome
            .evidence("workload.num_attention_heads")
            .param_int("count", i64::from(heads))
            .param("what", "attention heads")
            .param(
                "requirement",
                "vLLM needs the attention head count to be divisible by the TP size",
            )
    } else {
        outcome
            .evidence("workload.num_kv_heads")
            .param_int("count", i64::from(kv.unwrap_or(0)))
            .param("what", "KV heads")
            .param(
                "requirement",
                "vLLM needs the KV head count to be divisible by the TP size, or the TP size to be a multiple of it",
            )
    };
    // Keep the GPUs busy: the TP size that was cut moves to pipeline stages.
    let pp_fix = pp.saturating_mul(tp / tp_fix);
    outcome = outcome.param_int("pp_fix", i64::from(pp_fix)).remedy(0);
    if tp.is_multiple_of(tp_fix) {
        outcome = outcome.remedy(1);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
