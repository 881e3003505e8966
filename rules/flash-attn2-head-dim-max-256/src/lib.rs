//! FlashAttention-2 supports head dimensions up to 256 (KNOWLEDGE.md B4;
//! flash_api.cpp at v2.0.0 to v2.8.3: "FlashAttention forward only supports
//! head dimension at most 256").
//!
//! Models with a larger head (Gemma 4's global layers use 512) fail when the
//! FlashAttention backend is forced. vLLM's V0 engine (before 0.8.0, or
//! `VLLM_USE_V1=0` before 0.11.0, which has no V0 model runner) logs "Cannot
//! use FlashAttention-2 backend for head size ..." and falls back to xFormers
//! (selector.py from 0.4.3, platforms/cuda.py to 0.10.x). The V1 engine
//! refuses the head size: FlashAttentionImpl raises at 0.8.x to 0.11.x, and
//! from 0.12.0 the forced backend is rejected ("head_size not supported").
//! From 0.20.0 vLLM's FLASH_ATTN backend accepts heads up to 512 when its
//! bundled FA4 is supported, which is on compute capability 9.x, 10.x and
//! 11.x only (flash_attn.py supports_head_size and vllm_flash_attn
//! _is_fa4_supported at 0.20.0 and 0.34.0; absent at 0.19.1): there the rule
//! stays silent. GPUs below 8.0 are left to `flash-attn2-needs-sm80`.
//!
//! On AMD GPUs flash-attn's ROCm build uses Composable Kernel (csrc/
//! flash_attn_ck, from v2.6.2; v2.6.1 has none), whose forward raises "CK
//! only supports head dimension at most 256" (mha_fwd.cpp and
//! mha_varlen_fwd.cpp at v2.6.2 to v2.8.3.post1 and on main). Judged only
//! without vLLM (whose ROCm attention backends are others) and without
//! FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE (the Triton backend, not read).
#![no_std]

use pitfall_sdk::prelude::*;

#[path = "../../flash-attn2-needs-sm80/src/selection.rs"]
mod selection;
use selection::Selection;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
/// FlashAttention-2's largest head dimension (flash_api.cpp).
const FA2_MAX_HEAD_DIM: u32 = 256;
/// FA4's largest head dimension in vLLM's FLASH_ATTN backend (flash_attn.py
/// supports_head_size from 0.20.0).
const FA4_MAX_HEAD_DIM: u32 = 512;
/// vLLM before its V1 engine, which refuses the head size, was the default
/// (envs.py: VLLM_USE_V1 defaults to "0" at 0.7.3 and "1" at 0.8.0).
const VLLM_BEFORE_V1_DEFAULT: &str = "<0.8.0";
/// vLLM that still has the V0 engine `VLLM_USE_V1=0` selects (its model
/// runner, vllm/worker/model_runner.py, is in 0.10.2 and gone in 0.11.0).
const VLLM_BEFORE_V0_REMOVED: &str = "<0.11.0";
/// vLLM whose FLASH_ATTN backend takes heads up to 512 through FA4.
const VLLM_FA4_HEADS: &str = ">=0.20.0";
/// flash-attn releases with the Composable Kernel ROCm backend.
const FLASH_ATTN_CK: &str = ">=2.6.2";
/// flash-attn's switch to its Triton backend on ROCm (setup.py, runtime).
const TRITON_AMD: &str = "FLASH_ATTENTION_TRITON_AMD_ENABLE";

/// FA4's GPU families (vllm_flash_attn `_is_fa4_supported`: 9.x, 10.x, 11.x).
fn fa4_family(cc: ComputeCapability) -> bool {
    matches!(cc.major, 9..=11)
}

/// The largest head dimension and its index, or the outcome to return.
fn largest_head(m: &Manifest) -> Result<(usize, u32), Outcome> {
    let head_dims = m.workload().head_dims();
    head_dims
        .iter()
        .copied()
        .enumerate()
        .max_by_key(|&(_, d)| d)
        .ok_or_else(|| Outcome::needs("workload.head_dims"))
}

/// flash-attn's Composable Kernel backend on AMD GPUs.
fn evaluate_amd(m: &Manifest, amd: &Accelerator) -> Outcome {
    let Some(selection) = Selection::of(m) else {
        return Outcome::clear();
    };
    // vLLM on ROCm has its own attention backends; not judged here.
    if m.package("vllm").is_some() {
        return Outcome::clear();
    }
    if m.env(TRITON_AMD).is_some_and(|v| v.trim().eq_ignore_ascii_case("TRUE")) {
        return Outcome::clear();
    }
    let flash_attn = m.package("flash-attn");
    if let Some(fa) = &flash_attn
        && fa.version_in(FLASH_ATTN_CK) == Some(false)
    {
        return Outcome::clear();
    }
    let (index, head_dim) = match largest_head(m) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if head_dim <= FA2_MAX_HEAD_DIM {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched()
        .evidence(Path::new("workload.head_dims").index(index).as_str())
        .evidence(amd.field_path("vendor").as_str());
    outcome = selection.cite(outcome);
    if let Some(fa) = &flash_attn
        && fa.version_text().is_some()
    {
        outcome = outcome.evidence(fa.version_path().as_str());
    }
    outcome.param_int("head_dim", i64::from(head_dim))
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        // AMD GPUs: flash-attn's CK backend has the same limit.
        return match m.accelerators().find(|a| a.vendor().as_deref() == Some("amd")) {
            Some(amd) => evaluate_amd(m, &amd),
            None => Outcome::clear(),
        };
    }
    let Some(selection) = Selection::of(m) else {
        return Outcome::clear();
    };
    let weakest = m.weakest_nvidia_gpu();
    if weakest.as_ref().is_some_and(|(_, cc)| *cc < AMPERE) {
        return Outcome::clear();
    }
    let (index, head_dim) = match largest_head(m) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if head_dim <= FA2_MAX_HEAD_DIM {
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
        if head_dim <= FA4_MAX_HEAD_DIM && vllm.version_in(VLLM_FA4_HEADS) == Some(true) {
            // FA4 takes the head on 9.x to 11.x; every GPU must be one.
            let Some(cc) = weakest.as_ref().map(|(_, cc)| *cc) else {
                return match m.nvidia_gpus().next() {
                    Some(g) => Outcome::needs(g.field_path("compute_capability").as_str()),
                    None => Outcome::clear(),
                };
            };
            let all_fa4 = m.nvidia_gpus().all(|g| g.compute_capability().is_some_and(fa4_family));
            if all_fa4 && fa4_family(cc) {
                return Outcome::clear();
            }
        }
    }
    let mut outcome =
        Outcome::matched().evidence(Path::new("workload.head_dims").index(index).as_str());
    outcome = selection.cite(outcome);
    if let Some(vllm) = &vllm {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    if let Some((gpu, _)) = &weakest {
        outcome = outcome.evidence(gpu.field_path("compute_capability").as_str());
    }
    outcome.param_int("head_dim", i64::from(head_dim))
}

pitfall_sdk::export_rule!(evaluate);
