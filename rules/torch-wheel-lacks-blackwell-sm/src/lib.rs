//! PyTorch wheels without the GPU's SM in their arch list (KNOWLEDGE.md B8),
//! for the case the field sees most: Blackwell GPUs (B200 and GB200 at
//! compute capability 10.x, RTX 50xx and RTX PRO Blackwell at 12.x).
//!
//! sm_100 and sm_120 first shipped in PyTorch's CUDA 12.8 builds, which
//! begin with release 2.7. Every release wheel before 2.7, and every build
//! for CUDA 12.6 or older (`+cu126`, `+cu124`, `+cu118`, ...), stops at
//! sm_90 without PTX, so these GPUs get no kernel at all. A cubin for
//! sm_100 / sm_120 also serves 10.3 / 12.1 (same major), so any `+cu128` or
//! newer build is taken as covering them.
#![no_std]

use pitfall_sdk::prelude::*;

/// The first PyTorch release with CUDA 12.8 builds.
const FIRST_CU128_RELEASE: &str = "2.7.0";
/// CUDA 12.8, as PyTorch's local tags spell it.
const FIRST_CU_TAG: u32 = 128;

/// `cu128` → 128; `None` for other labels (`cpu`, `rocm6.2`, ...).
fn cu_tag(local: &str) -> Option<u32> {
    pitfall_sdk::version::cuda_tag(local).map(|(major, minor)| (major * 10 + minor) as u32)
}

fn is_blackwell(cc: ComputeCapability) -> bool {
    cc.major == 10 || cc.major == 12
}

/// Whether this torch build lacks Blackwell kernels: `Some(true)` it lacks
/// them, `Some(false)` it has them (or is not a CUDA build), `None` unknown.
fn lacks_blackwell(v: &Version) -> Option<bool> {
    let first = Version::parse(FIRST_CU128_RELEASE).ok()?;
    match v.local() {
        Some(local) => Some(cu_tag(local).is_some_and(|tag| tag < FIRST_CU_TAG)),
        // A release wheel without a local tag: none before 2.7 has sm_100/sm_120;
        // from 2.7 on the CUDA build behind an untagged version is unknown.
        None if v.without_local() < first => Some(true),
        None => None,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    if m.built_from_source("torch") {
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
    match lacks_blackwell(&version) {
        Some(false) => return Outcome::clear(),
        None if gpu.is_some() => return Outcome::needs(torch.version_path().as_str()),
        None => return Outcome::clear(),
        Some(true) => {}
    }
    let Some((gpu, cc)) = gpu else {
        return match unknown_gpu {
            Some(g) => Outcome::needs(g.field_path("compute_capability").as_str()),
            None => Outcome::clear(),
        };
    };
    let public = version.without_local();
    let fix_base = match Version::parse(FIRST_CU128_RELEASE) {
        Ok(first) if public >= first => String::from(public.as_str()),
        _ => String::from(FIRST_CU128_RELEASE),
    };
    let mut fix = fix_base;
    fix.push_str("+cu128");
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
