//! PyTorch builds without code for a Blackwell GPU (KNOWLEDGE.md B8): B200,
//! GB200 and B300 (10.x), Thor (11.0), RTX 50xx, RTX PRO Blackwell and GB10
//! (12.x).
//!
//! sm_100/sm_120 code needs CUDA 12.8 (pytorch issue 153928, a maintainer:
//! "sm_120 is not supported by CUDA-12.1. You'll need to use 12.8 +
//! PyTorch-2.7.0"), and PyTorch's first CUDA 12.8 builds are 2.7's
//! (release table `cuda_variants`). So a `+cu126` or older build has no
//! Blackwell cubin, and none of the lists read for such builds carries PTX
//! a Blackwell GPU could compile (PyPI wheels 2.0.0 to 2.7.0, variants of
//! 2.0 to 2.5 in pytorch/builder, the 2.8-era build_cuda.sh's 12.6 list,
//! RELEASE.md's 12.6.3 row for 2.9 to 2.11). PyPI's untagged wheels are
//! CUDA 12.4 or older before 2.7 and CUDA 12.6 in 2.7 (5.0 to 9.0, read
//! from the 2.7.0 wheel; vLLM issue 21633 prints the same list for 2.7.1).
//!
//! A build whose arch list is known (`packages.torch.cuda_arch_list`) is
//! `torch-wheel-arch-list-lacks-gpu`'s to judge; this rule adds the builds
//! the release table has no list for, decided from the version alone.
#![no_std]

use pitfall_sdk::prelude::*;

const LIST: &str = "packages.torch.cuda_arch_list";
/// PyPI's untagged wheels before the first CUDA 12.8 default (2.8.0): CUDA
/// 12.6 or older.
const PYPI_BELOW_CU128: &str = "<2.8";
/// The first release with CUDA 12.8 builds.
const FIRST_CU128_RELEASE: &str = "2.7.0";
/// Releases with a `+cu128` build (release table `cuda_variants`: 2.7 to 2.11).
const HAS_CU128_VARIANT: &str = ">=2.7,<2.12";
/// Releases with a `+cu130` build (2.12 to 2.14).
const HAS_CU130_VARIANT: &str = ">=2.12,<2.15";
/// Releases whose variants the table lacks; PyPI's untagged wheel (CUDA 13.2,
/// release table 2.15.0) covers Blackwell.
const PYPI_FROM_2_15: &str = ">=2.15";

/// `cu128` → 128; `None` for other labels (`cpu`, `rocm6.2`, ...).
fn cu_tag(local: &str) -> Option<u32> {
    pitfall_sdk::version::cuda_tag(local).map(|(major, minor)| (major * 10 + minor) as u32)
}

fn is_blackwell(cc: ComputeCapability) -> bool {
    matches!(cc.major, 10..=12)
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    if m.built_from_source("torch") || m.len(LIST).is_some() {
        return Outcome::clear();
    }
    let gpu = m
        .nvidia_gpus()
        .find_map(|g| g.compute_capability().filter(|cc| is_blackwell(*cc)).map(|cc| (g, cc)));
    let unknown_gpu = m.nvidia_gpus().find(|g| g.compute_capability().is_none());
    if gpu.is_none() && unknown_gpu.is_none() {
        return Outcome::clear();
    }
    let Some(version) = torch.version() else {
        return Outcome::needs(torch.version_path().as_str());
    };
    let lacks = match version.local() {
        // CPU and ROCm builds are not this rule's.
        Some(local) => match cu_tag(local) {
            Some(tag) => tag < 128,
            None => return Outcome::clear(),
        },
        None if torch.ecosystem().is_some_and(|e| e != "pypi") => return Outcome::clear(),
        None => torch.version_in(PYPI_BELOW_CU128) == Some(true),
    };
    if !lacks {
        return Outcome::clear();
    }
    let Some((gpu, cc)) = gpu else {
        return match unknown_gpu {
            Some(g) => Outcome::needs(g.field_path("compute_capability").as_str()),
            None => Outcome::clear(),
        };
    };
    // The nearest build with Blackwell code: the same release's +cu128
    // (2.7 to 2.11), +cu130 (2.12 to 2.14) or PyPI wheel (2.15 on), else
    // 2.7.0+cu128.
    let public = version.without_local();
    let mut fix = String::new();
    if torch.version_in(HAS_CU128_VARIANT) == Some(true) {
        fix.push_str(public.as_str());
        fix.push_str("+cu128");
    } else if torch.version_in(HAS_CU130_VARIANT) == Some(true) {
        fix.push_str(public.as_str());
        fix.push_str("+cu130");
    } else if torch.version_in(PYPI_FROM_2_15) == Some(true) {
        // PyPI's own 2.15 wheel is a CUDA 13.2 build with 10.0 and 12.0.
        fix.push_str(public.as_str());
    } else {
        fix.push_str(FIRST_CU128_RELEASE);
        fix.push_str("+cu128");
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("torch", version.as_str())
        .param("gpu", &gpu_name)
        .param_int("sm", i64::from(cc.sm()))
        .param("fix", &fix)
}

pitfall_sdk::export_rule!(evaluate);
