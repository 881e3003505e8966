//! FlashAttention-3 needs a Hopper GPU and CUDA 12.3 or newer
//! (KNOWLEDGE.md B5).
//!
//! Two ways to end up on FlashAttention-3:
//! - the `flash-attn-3` package (Dao-AILab's `hopper/` build), used directly;
//! - vLLM's bundled FlashAttention with `VLLM_FLASH_ATTN_VERSION=3`.
//!
//! What fails, as far as the sources and the code show:
//! - compute capability 8.6 / 8.7 / 8.9: no FA3 kernels fit (vLLM logs
//!   "FA3 is only supported on devices with compute capability >= 8
//!   excluding 8.6 and 8.9" and asserts);
//! - below 8.0 and Blackwell (10.x, 12.x) with the package: no kernels;
//! - Hopper with CUDA older than 12.3 (the package's requirement).
//!
//! Not reported, because it does not fail: compute capability 8.0 (both
//! builds also compile sm80 kernels), vLLM on Blackwell (it falls back to
//! FA2/FA4 with a warning), vLLM on GPUs below 8.0 (it never selects
//! FlashAttention there; forcing it is `flash-attn2-needs-sm80`'s case), and
//! vLLM before 0.8.0 (V0 engine; the variable was new and its fallback is
//! not documented).
#![no_std]

use pitfall_sdk::prelude::*;

const FA3_ENV: &str = "VLLM_FLASH_ATTN_VERSION";
const FA3_ENV_PATH: &str = "env.VLLM_FLASH_ATTN_VERSION";
const FA3_PACKAGE: &str = "flash-attn-3";
const VLLM_V1_DEFAULT: &str = "0.8.0";

const REMEDY_UNSET_ENV: u32 = 0;
const REMEDY_REMOVE_PACKAGE: u32 = 1;
const REMEDY_NEWER_CUDA: u32 = 2;

fn is_flash_attn(value: &str) -> bool {
    let v = value.trim();
    ["FLASH_ATTN", "FLASH-ATTN", "FLASH_ATTN_VLLM_V1"]
        .iter()
        .any(|name| v.eq_ignore_ascii_case(name))
}

/// Why FA3 cannot run on this compute capability, or `None` if it can (or
/// if the sources do not say it cannot).
fn cc_problem(cc: ComputeCapability, via_vllm: bool) -> Option<&'static str> {
    match cc.major {
        9 => None,
        8 if cc.minor == 0 => None,
        8 => Some(
            "FlashAttention-3 has no kernels for compute capability 8.6/8.9 GPUs (it needs Hopper, 9.x)",
        ),
        _ if via_vllm => None,
        _ => Some("FlashAttention-3 has kernels for Hopper (9.x) and A100-class (8.0) GPUs only"),
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let package = m.package(FA3_PACKAGE);
    let env_fa3 = m.env(FA3_ENV).is_some_and(|v| v.trim() == "3");
    let vllm = m.package("vllm");
    // The variable matters only to vLLM, and only when its FlashAttention
    // backend is the one in use (forced, or chosen automatically).
    let backend_set = m.workload().attention_backend().or_else(|| m.env("VLLM_ATTENTION_BACKEND"));
    let vllm_uses_fa = backend_set.as_deref().is_none_or(is_flash_attn);
    let via_env = env_fa3 && vllm.is_some() && vllm_uses_fa;
    if package.is_none() && !via_env {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let cc_text = cc.write_to(&mut cc_buf);

    // vLLM with VLLM_FLASH_ATTN_VERSION=3.
    if via_env && let Some(problem) = cc_problem(cc, true) {
        let Some(version) = vllm.as_ref().and_then(Package::version) else {
            return Outcome::needs("packages.vllm.version");
        };
        if Version::parse(VLLM_V1_DEFAULT).is_ok_and(|v1| version >= v1) {
            let mut outcome = Outcome::matched()
                .evidence(FA3_ENV_PATH)
                .evidence(gpu.field_path("compute_capability").as_str());
            if let Some(vllm) = &vllm {
                outcome = outcome.evidence(vllm.version_path().as_str());
            }
            return outcome
                .param("via", "VLLM_FLASH_ATTN_VERSION=3")
                .param("gpu", &gpu_name)
                .param("cc", cc_text)
                .param("reason", problem)
                .remedy(REMEDY_UNSET_ENV);
        }
    }

    // The flash-attn-3 package.
    let Some(package) = package else {
        return Outcome::clear();
    };
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("via", "the flash-attn-3 package")
        .param("gpu", &gpu_name)
        .param("cc", cc_text);
    if package.version_text().is_some() {
        outcome = outcome.evidence(package.version_path().as_str());
    }
    if let Some(problem) = cc_problem(cc, false) {
        return outcome.param("reason", problem).remedy(REMEDY_REMOVE_PACKAGE);
    }
    if cc.major == 9
        && let (Some(cuda), Ok(min)) = (m.cuda(), Dotted::parse("12.3"))
        && cuda < min
    {
        let mut reason = String::from("FlashAttention-3 needs CUDA 12.3 or newer, but CUDA is ");
        reason.push_str(cuda.as_str());
        return outcome
            .evidence("drivers.cuda")
            .param("reason", &reason)
            .remedy(REMEDY_NEWER_CUDA)
            .remedy(REMEDY_REMOVE_PACKAGE);
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
