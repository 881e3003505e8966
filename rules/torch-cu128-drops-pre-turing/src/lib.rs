//! PyTorch's CUDA 12.8/12.9 builds have no code for Maxwell and Pascal, and
//! from 2.11 none for Volta either (KNOWLEDGE.md B9, corrected).
//!
//! What each build carries, per release (Linux x86_64 and Windows):
//! - 2.8 to 2.10, CUDA 12.8 (PyPI's default build, untagged, and `+cu128`):
//!   7.0, 7.5, 8.0, 8.6, 9.0, 10.0, 12.0 (read from the 2.8.0, 2.9.0 and
//!   2.10.0 PyPI wheels, release table; RELEASE.md's matrix "for Release
//!   2.9 and 2.10", as pytorch PR 175253 quotes it);
//! - 2.8, CUDA 12.9 (`+cu129`): 7.0 ... 12.0+PTX (.ci/manywheel/build_cuda.sh
//!   at 00c7a380, the 2.8-era script whose CUDA set 12.6/12.8/12.9 is 2.8's);
//! - 2.11, CUDA 12.8 (`+cu128`, not PyPI's): 7.5 ... 12.0, Volta dropped
//!   (PR 175253, RFC issue 172352; WhisperJAV issue 333, a V100 on
//!   2.11.0+cu128 failing);
//! - the CUDA 12.6 builds keep 5.0 to 9.0 (same sources), so they are the fix.
//!
//! Not judged: 2.7's `+cu128` (its list was not read), releases without a
//! CUDA 12.8/12.9 x86 build (2.12 and later), CUDA 13 builds (PyPI's default
//! from 2.11: `cuda13-no-pre-turing-gpus`), aarch64 builds. A build whose
//! arch list is known (`packages.torch.cuda_arch_list`, from the release
//! table or the collector) is `torch-wheel-arch-list-lacks-gpu`'s to judge,
//! so this rule adds the builds the table has no list for: `+cu128`/`+cu129`
//! variants and the patch releases of 2.8 to 2.10.
#![no_std]

use pitfall_sdk::prelude::*;

const LIST: &str = "packages.torch.cuda_arch_list";
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
/// Releases whose PyPI wheel (no local label) is a CUDA 12.8 build
/// (release table: 2.8.0, 2.9.0, 2.10.0; patches share their .0's CUDA).
const PYPI_CU128: &str = ">=2.8,<2.11";
/// CUDA 12.8 builds with Volta (7.0 and up)...
const CU128_FROM_VOLTA: &str = ">=2.8,<2.11";
/// ...and without (7.5 and up).
const CU128_FROM_TURING: &str = ">=2.11,<2.12";
/// CUDA 12.9 builds (7.0 and up).
const CU129_FROM_VOLTA: &str = ">=2.8,<2.9";

/// `+cu128` → 128; `None` for other labels (`cpu`, `rocm6.2`, ...).
fn cu_tag(local: &str) -> Option<u32> {
    pitfall_sdk::version::cuda_tag(local).map(|(major, minor)| (major * 10 + minor) as u32)
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
    // A known arch list is torch-wheel-arch-list-lacks-gpu's to judge.
    if m.len(LIST).is_some() {
        return Outcome::clear();
    }
    let Some(version) = torch.version() else {
        return match m.weakest_nvidia_gpu() {
            Some((_, cc)) if cc < TURING => Outcome::needs(torch.version_path().as_str()),
            _ => Outcome::clear(),
        };
    };
    let tag = match version.local() {
        Some(local) => match cu_tag(local) {
            Some(tag @ 128..=129) => tag,
            _ => return Outcome::clear(),
        },
        // An untagged version is PyPI's wheel, unless it came from elsewhere.
        None if torch.ecosystem().is_some_and(|e| e != "pypi") => return Outcome::clear(),
        None if torch.version_in(PYPI_CU128) == Some(true) => 128,
        None => return Outcome::clear(),
    };
    let lowest = if tag == 128 && torch.version_in(CU128_FROM_VOLTA) == Some(true) {
        VOLTA
    } else if tag == 128 && torch.version_in(CU128_FROM_TURING) == Some(true) {
        TURING
    } else if tag == 129 && torch.version_in(CU129_FROM_VOLTA) == Some(true) {
        VOLTA
    } else {
        return Outcome::clear();
    };
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= lowest {
        return Outcome::clear();
    }
    let cuda = if tag == 129 { "12.9" } else { "12.8" };
    let mut fix = String::from(version.without_local().as_str());
    fix.push_str("+cu126");
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut lowest_buf = [0u8; 24];
    Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("torch", version.as_str())
        .param("cuda", cuda)
        .param("lowest", lowest.write_to(&mut lowest_buf))
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("fix", &fix)
}

pitfall_sdk::export_rule!(evaluate);
