//! FlashAttention-3 forced where it does not run (KNOWLEDGE.md B5). Three
//! checks, kept apart:
//! - vLLM's own FA3 selection with `VLLM_FLASH_ATTN_VERSION=3` (read from
//!   0.8.0 to 0.14.x; 0.15.0 dropped the variable): its bundled
//!   FlashAttention accepts 8.0+ except 8.6, 8.9 and 10+ up to 0.11.x, and
//!   9.x only from 0.12.0 (`_is_fa3_supported` in
//!   vllm/vllm_flash_attn/flash_attn_interface.py at those tags); Blackwell
//!   10.x falls back to FA2 (fa_utils.py), other refusals fail.
//! - FA3 proper, the `flash-attn-3` package: kernels for sm_80, sm_90a and
//!   sm_100a only (hopper/setup.py), and CUDA >= 12.3 (README).
//! - FA3's first builds, the `flashattn-hopper` package (hopper/setup.py's
//!   name from 7f67966c, 2024-07-11, to 7a802796, 2025-01-07): every
//!   entry point checks `major == 9` ("FlashAttention only supports Hopper
//!   GPUs or newer.") and only sm_90a is compiled; Ampere came with
//!   7bc3f031 (2025-01-08), after the rename.
#![no_std]

use pitfall_sdk::prelude::*;

const FA3_ENV: &str = "VLLM_FLASH_ATTN_VERSION";
const FA3_ENV_PATH: &str = "env.VLLM_FLASH_ATTN_VERSION";
const FA3_PACKAGE: &str = "flash-attn-3";
/// The name of FA3's builds before Ampere support (hopper/setup.py's
/// `PACKAGE_NAME` until 7a802796).
const HOPPER_ONLY_PACKAGE: &str = "flashattn-hopper";
/// The releases that read the variable.
const READS_ENV: &str = ">=0.8.0,<0.15.0";
/// From 0.12.0 vLLM's FA3 check accepts Hopper (9.x) only.
const HOPPER_ONLY: &str = ">=0.12.0";
const SM80: ComputeCapability = ComputeCapability::new(8, 0);

const REMEDY_UNSET_ENV: u32 = 0;
const REMEDY_REMOVE_PACKAGE: u32 = 1;
const REMEDY_NEWER_CUDA: u32 = 2;
const REMEDY_REMOVE_HOPPER_ONLY: u32 = 3;

fn is_flash_attn(value: &str) -> bool {
    let v = value.trim();
    ["FLASH_ATTN", "FLASH-ATTN", "FLASH_ATTN_VLLM_V1"]
        .iter()
        .any(|name| v.eq_ignore_ascii_case(name))
}

/// The stack's CUDA: `drivers.cuda_runtime`, else a `+cuXYZ` torch wheel.
fn stack_cuda(m: &Manifest) -> Option<(u64, u64, &'static str)> {
    if let Some(d) = m.text("drivers.cuda_runtime").and_then(|t| Dotted::parse(&t).ok()) {
        return Some((d.major(), d.minor(), "drivers.cuda_runtime"));
    }
    let torch = m.package("torch")?;
    let (major, minor) = torch.version()?.cuda_build()?;
    Some((major, minor, "packages.torch.version"))
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
    let via_env = env_fa3 && vllm.is_some() && backend_set.as_deref().is_none_or(is_flash_attn);
    let hopper_only = m.package(HOPPER_ONLY_PACKAGE);
    if package.is_none() && hopper_only.is_none() && !via_env {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let cc_text = cc.write_to(&mut cc_buf);

    // (1) vLLM's FA3 selection. Below 8.0 vLLM never picks FlashAttention;
    // on 10.x it falls back to FA2 with a warning.
    if via_env
        && cc >= SM80
        && cc.major != 10
        && let Some(vllm) = &vllm
    {
        let Some(reads) = vllm.version_in(READS_ENV) else {
            return Outcome::needs("packages.vllm.version");
        };
        let Some(hopper_only) = vllm.version_in(HOPPER_ONLY) else {
            return Outcome::needs("packages.vllm.version");
        };
        let refused = if hopper_only {
            cc.major != 9
        } else {
            cc.major > 9 || (cc.major == 8 && (cc.minor == 6 || cc.minor == 9))
        };
        if reads && refused {
            let reason = if hopper_only {
                "vLLM 0.12.0 to 0.14.x accept FA3 on compute capability 9.x only"
            } else {
                "vLLM 0.8.0 to 0.11.x accept FA3 on compute capability 8.0 and up, except 8.6, 8.9 and 10 and up"
            };
            return Outcome::matched()
                .evidence(FA3_ENV_PATH)
                .evidence(gpu.field_path("compute_capability").as_str())
                .evidence(vllm.version_path().as_str())
                .param("via", "VLLM_FLASH_ATTN_VERSION=3")
                .param("gpu", &gpu_name)
                .param("cc", cc_text)
                .param("reason", reason)
                .remedy(REMEDY_UNSET_ENV);
        }
    }

    // (3) flashattn-hopper: compute capability 9.x only, Blackwell too is
    // refused. Any GPU of the job that is not 9.x fails.
    if let Some(old) = &hopper_only {
        let mut refused = (cc.major != 9).then(|| (gpu.clone(), cc));
        if refused.is_none() {
            refused = m
                .nvidia_gpus()
                .filter_map(|g| g.compute_capability().map(|c| (g, c)))
                .find(|(_, c)| c.major != 9);
        }
        if let Some((gpu, cc)) = refused {
            let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
            let mut cc_buf = [0u8; 24];
            let mut outcome = Outcome::matched()
                .evidence(gpu.field_path("compute_capability").as_str())
                .param("via", "the flashattn-hopper package")
                .param("gpu", &gpu_name)
                .param("cc", cc.write_to(&mut cc_buf))
                .param(
                    "reason",
                    "builds named flashattn-hopper (flash-attention's hopper/ before 2025-01-07) accept compute capability 9.x only and carry sm_90a kernels only",
                )
                .remedy(REMEDY_REMOVE_HOPPER_ONLY);
            if old.version_text().is_some() {
                outcome = outcome.evidence(old.version_path().as_str());
            }
            return outcome;
        }
    }

    // (2) The flash-attn-3 package.
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
    if cc < SM80 {
        return outcome
            .param("reason", "its kernels are built for sm_80, sm_90a and sm_100a only")
            .remedy(REMEDY_REMOVE_PACKAGE);
    }
    if cc.major == 9
        && let Some((major, minor, path)) = stack_cuda(m)
        && (major, minor) < (12, 3)
    {
        let mut reason =
            String::from("FlashAttention-3 needs CUDA 12.3 or newer, but the stack's CUDA is ");
        pitfall_sdk::text::push_int(&mut reason, major as i64);
        reason.push('.');
        pitfall_sdk::text::push_int(&mut reason, minor as i64);
        return outcome
            .evidence(path)
            .param("reason", &reason)
            .remedy(REMEDY_NEWER_CUDA)
            .remedy(REMEDY_REMOVE_PACKAGE);
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
