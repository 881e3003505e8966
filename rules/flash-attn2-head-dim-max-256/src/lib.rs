//! FlashAttention-2 supports head dimensions up to 256 (KNOWLEDGE.md B4).
//!
//! Models with a larger head (Gemma 4's global layers use 512) fail when the
//! FLASH_ATTN backend is forced. vLLM's V0 engine (before 0.8.0, or with
//! `VLLM_USE_V1=0` before 0.11.0) logs "Cannot use FlashAttention-2 backend
//! for head size ..." and falls back to xFormers; the V1 engine refuses the
//! selected backend. GPUs below compute capability 8.0 are left to the rule
//! `flash-attn2-needs-sm80`: FlashAttention-2 cannot run there at all.
#![no_std]

use pitfall_sdk::prelude::*;

#[path = "../../flash-attn2-needs-sm80/src/selection.rs"]
mod selection;
use selection::Selection;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const MAX_HEAD_DIM: u32 = 256;
/// vLLM before its V1 engine, which validates the forced backend, was the
/// default (PEP 440 ranges, compared by the host: `version_in`).
const VLLM_BEFORE_V1_DEFAULT: &str = "<0.8.0";
/// vLLM before the V0 engine (and `VLLM_USE_V1=0`) was removed.
const VLLM_BEFORE_V0_REMOVED: &str = "<0.11.0";

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(selection) = Selection::of(m) else {
        return Outcome::clear();
    };
    if m.weakest_nvidia_gpu().is_some_and(|(_, cc)| cc < AMPERE) {
        return Outcome::clear();
    }
    let head_dims = m.workload().head_dims();
    let Some((index, head_dim)) = head_dims.iter().copied().enumerate().max_by_key(|&(_, d)| d)
    else {
        return Outcome::needs("workload.head_dims");
    };
    if head_dim <= MAX_HEAD_DIM {
        return Outcome::clear();
    }
    let vllm = m.package("vllm");
    if let Some(vllm) = &vllm {
        // The rule asks, never reads, the version: the registry answers
        // every release with the same answers from one evaluation.
        let Some(before_v1) = vllm.version_in(VLLM_BEFORE_V1_DEFAULT) else {
            return Outcome::needs("packages.vllm.version");
        };
        if before_v1 {
            return Outcome::clear();
        }
        let v0_forced = m.env("VLLM_USE_V1").is_some_and(|v| v.trim() == "0");
        if v0_forced && vllm.version_in(VLLM_BEFORE_V0_REMOVED) == Some(true) {
            return Outcome::clear();
        }
    }
    let mut outcome =
        Outcome::matched().evidence(Path::new("workload.head_dims").index(index).as_str());
    outcome = selection.cite(outcome);
    if let Some(vllm) = &vllm {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    outcome.param_int("head_dim", i64::from(head_dim))
}

pitfall_sdk::export_rule!(evaluate);
