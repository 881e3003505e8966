//! Several GeForce RTX 4090 in one host: NCCL's P2P transport has been
//! reported to hang collectives; NCCL_P2P_DISABLE=1 avoids it
//! (KNOWLEDGE.md D25; NVIDIA/nccl-tests issue 117, driver 520.56.06).
#![no_std]

use pitfall_sdk::prelude::*;

fn is_rtx_4090(model: &str) -> bool {
    model.to_ascii_lowercase().contains("rtx 4090")
}

fn evaluate(m: &Manifest) -> Outcome {
    let count: u32 = m
        .nvidia_gpus()
        .filter(|g| g.model().is_some_and(|n| is_rtx_4090(&n)))
        .map(|g| g.count().unwrap_or(1))
        .sum();
    if count < 2 {
        // Several NVIDIA GPUs, some of unknown model: they may be 4090s.
        let total: u32 = m.nvidia_gpus().map(|g| g.count().unwrap_or(1)).sum();
        if total >= 2
            && let Some(gpu) = m.nvidia_gpus().find(|g| g.model().is_none())
        {
            return Outcome::needs(gpu.field_path("model").as_str());
        }
        return Outcome::clear();
    }
    if m.env("NCCL_P2P_DISABLE").is_some_and(|v| v.trim() == "1") {
        return Outcome::clear();
    }
    // A workload that says it uses one GPU runs no collectives between them.
    let w = m.workload();
    let tp = w.tensor_parallel_size();
    let pp = w.pipeline_parallel_size();
    if (tp.is_some() || pp.is_some()) && tp.unwrap_or(1) * pp.unwrap_or(1) <= 1 {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched().param_int("count", i64::from(count));
    for gpu in m.nvidia_gpus().filter(|g| g.model().is_some_and(|n| is_rtx_4090(&n))) {
        outcome = outcome.evidence(gpu.field_path("model").as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
