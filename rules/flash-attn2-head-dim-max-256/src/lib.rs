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

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const MAX_HEAD_DIM: u32 = 256;
const ENV: &str = "VLLM_ATTENTION_BACKEND";
const ENV_PATH: &str = "env.VLLM_ATTENTION_BACKEND";
const BACKEND_PATH: &str = "workload.attention_backend";
/// vLLM's V1 engine, which validates the forced backend, is the default from here.
const VLLM_V1_DEFAULT: &str = "0.8.0";
/// The V0 engine (and `VLLM_USE_V1=0`) is gone from here.
const VLLM_V0_REMOVED: &str = "0.11.0";

fn is_flash_attn(value: &str) -> bool {
    let v = value.trim();
    // FLASH_ATTN_VLLM_V1 is the V1 engine's older name for the same backend.
    ["FLASH_ATTN", "FLASH-ATTN", "FLASH_ATTN_VLLM_V1"]
        .iter()
        .any(|name| v.eq_ignore_ascii_case(name))
}

fn lt(v: &Version, bound: &str) -> bool {
    Version::parse(bound).is_ok_and(|b| *v < b)
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m
        .accelerators()
        .any(|a| a.vendor().as_deref() == Some("nvidia"))
    {
        return Outcome::clear();
    }
    let by_workload = m
        .workload()
        .attention_backend()
        .is_some_and(|b| is_flash_attn(&b));
    // The variable is vLLM's; it selects nothing elsewhere.
    let by_env = m.package("vllm").is_some() && m.env(ENV).is_some_and(|b| is_flash_attn(&b));
    if !by_workload && !by_env {
        return Outcome::clear();
    }
    if m.weakest_nvidia_gpu().is_some_and(|(_, cc)| cc < AMPERE) {
        return Outcome::clear();
    }
    let head_dims = m.workload().head_dims();
    let Some((index, head_dim)) = head_dims
        .iter()
        .copied()
        .enumerate()
        .max_by_key(|&(_, d)| d)
    else {
        return Outcome::needs("workload.head_dims");
    };
    if head_dim <= MAX_HEAD_DIM {
        return Outcome::clear();
    }
    let vllm = m.package("vllm");
    if let Some(vllm) = &vllm {
        let Some(version) = vllm.version() else {
            return Outcome::needs("packages.vllm.version");
        };
        if lt(&version, VLLM_V1_DEFAULT) {
            return Outcome::clear();
        }
        let v0_forced = m.env("VLLM_USE_V1").is_some_and(|v| v.trim() == "0");
        if v0_forced && lt(&version, VLLM_V0_REMOVED) {
            return Outcome::clear();
        }
    }
    let mut outcome =
        Outcome::matched().evidence(Path::new("workload.head_dims").index(index).as_str());
    if by_workload {
        outcome = outcome.evidence(BACKEND_PATH);
    }
    if by_env {
        outcome = outcome.evidence(ENV_PATH);
    }
    if let Some(vllm) = &vllm {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    let via = match (by_workload, by_env) {
        (true, true) => "workload.attention_backend and VLLM_ATTENTION_BACKEND",
        (true, false) => "workload.attention_backend",
        _ => "VLLM_ATTENTION_BACKEND",
    };
    let remedy = match (by_workload, by_env) {
        (true, true) => 2,
        (true, false) => 0,
        _ => 1,
    };
    outcome
        .param("via", via)
        .param_int("head_dim", i64::from(head_dim))
        .remedy(remedy)
}

pitfall_sdk::export_rule!(evaluate);
