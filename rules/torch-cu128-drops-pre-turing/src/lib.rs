//! PyTorch's CUDA 12.8/12.9 wheels have no kernels for Maxwell and Pascal,
//! and none for Volta in some releases (KNOWLEDGE.md B9).
//!
//! Arch lists of the `+cu128` / `+cu129` builds (Linux x86_64 and Windows):
//! - 2.7.x: 7.5 and newer (sm_50..sm_70 left out);
//! - 2.8 to 2.10: 7.0 and newer (Volta was put back for 2.8; Maxwell and
//!   Pascal stay out, 2.8 release notes);
//! - 2.11 and newer: 7.5 and newer (Volta removed, pytorch issue 172352).
//!
//! The `+cu126` builds keep 5.0 to 9.0, so they are the fix. CUDA 13 builds
//! (`+cu130`...) drop the same GPUs; that is the rule
//! `cuda13-no-pre-turing-gpus`, so they are not reported here. On aarch64
//! the CUDA 12.6 builds do not cover these GPUs either (B10), so the
//! remedy would not hold there and the rule stays silent.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
/// The first PyTorch release with CUDA 12.8 builds.
const FIRST_CU128_RELEASE: &str = "2.7.0";
/// Volta is in the cu128/cu129 builds from this release...
const VOLTA_BACK: &str = "2.8.0";
/// ...until this one.
const VOLTA_REMOVED: &str = "2.11.0";

/// `cu128` → 128; `None` for other labels (`cpu`, `rocm6.2`, ...).
fn cu_tag(local: &str) -> Option<u32> {
    pitfall_sdk::version::cuda_tag(local).map(|(major, minor)| (major * 10 + minor) as u32)
}

fn ge(v: &Version, bound: &str) -> bool {
    Version::parse(bound).is_ok_and(|b| *v >= b)
}

enum Build {
    /// A CUDA 12.8 or 12.9 build: its tag number.
    Cu12x(u32),
    /// Not a CUDA 12.8/12.9 build.
    Other,
    /// No local tag on a release that has CUDA 12.8 builds.
    Unknown,
}

fn build_of(v: &Version) -> Build {
    match v.local() {
        Some(local) => match cu_tag(local) {
            Some(tag @ 128..=129) => Build::Cu12x(tag),
            _ => Build::Other,
        },
        None if ge(&v.without_local(), FIRST_CU128_RELEASE) => Build::Unknown,
        None => Build::Other,
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
    if m.built_from_source("torch") || m.arch().as_deref() == Some("aarch64") {
        return Outcome::clear();
    }
    let Some(version) = torch.version() else {
        return match m.weakest_nvidia_gpu() {
            Some((_, cc)) if cc < TURING => Outcome::needs(torch.version_path().as_str()),
            _ => Outcome::clear(),
        };
    };
    let build = build_of(&version);
    if matches!(build, Build::Other) {
        return Outcome::clear();
    }
    let Some((gpu, cc)) = m.weakest_nvidia_gpu() else {
        return match (&build, m.nvidia_gpus().next()) {
            (Build::Cu12x(_), Some(g)) => {
                Outcome::needs(g.field_path("compute_capability").as_str())
            }
            _ => Outcome::clear(),
        };
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    let tag = match build {
        Build::Cu12x(tag) => tag,
        _ => return Outcome::needs(torch.version_path().as_str()),
    };
    let public = version.without_local();
    if cc >= VOLTA && ge(&public, VOLTA_BACK) && !ge(&public, VOLTA_REMOVED) {
        return Outcome::clear();
    }
    let mut cuda = String::from("12.");
    cuda.push(char::from(b'0' + (tag % 10) as u8));
    let mut fix = String::from(public.as_str());
    fix.push_str("+cu126");
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("torch", version.as_str())
        .param("cuda", &cuda)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("fix", &fix)
}

pitfall_sdk::export_rule!(evaluate);
