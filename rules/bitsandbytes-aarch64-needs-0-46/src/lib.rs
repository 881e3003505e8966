//! bitsandbytes has Linux aarch64 CUDA wheels on PyPI from 0.46.0 only
//! (KNOWLEDGE.md D24). Checked against PyPI with pip (manylinux aarch64
//! platforms, Python 3.11): 0.42.0 and older are one py3-none-any wheel whose
//! CUDA libraries are x86-64 builds; 0.43.0 to 0.45.5 have no aarch64 wheel
//! and no source distribution, so pip finds nothing to install; 0.46.0 is
//! the first with a manylinux_2_24_aarch64 wheel (libbitsandbytes_cuda118 ..
//! cuda128 inside). Its build matrix moved to native ubuntu-22.04-arm
//! runners in 0.46.0 (.github/workflows/python-package.yml at 0.45.5 and
//! 0.46.0). Jetson boards are left out: the aarch64 wheels are built for
//! server (SBSA) CUDA, not for JetPack (docs/source/installation.mdx at
//! 0.50.0), so upgrading does not help there.
#![no_std]

use pitfall_sdk::prelude::*;

const BNB: &str = "bitsandbytes";
const BEFORE_AARCH64_WHEELS: &str = "<0.46.0";
/// 0.42.0 and older: one wheel for every platform, x86-64 CUDA libraries.
const ANY_WHEEL: &str = "<0.43.0";

const REASON_NO_WHEEL: &str = "PyPI has no aarch64 wheel (and no source distribution) for bitsandbytes 0.43.0 to 0.45.5, so pip cannot install it";
const REASON_X86_LIBS: &str = "bitsandbytes 0.42.0 and older ship x86-64 CUDA libraries only, so its CUDA setup fails on aarch64";

/// Jetson integrated GPUs (compute capability 5.3, 6.2, 7.2, 8.7).
fn is_jetson(cc: ComputeCapability) -> bool {
    matches!(cc.sm(), 53 | 62 | 72 | 87)
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("aarch64") {
        return Outcome::clear();
    }
    let Some(bnb) = m.package(BNB) else {
        return Outcome::clear();
    };
    if m.built_from_source(BNB) || bnb.ecosystem().is_some_and(|e| e != "pypi") {
        return Outcome::clear();
    }
    let Some(old) = bnb.version_in(BEFORE_AARCH64_WHEELS) else {
        return Outcome::needs(bnb.version_path().as_str());
    };
    if !old {
        return Outcome::clear();
    }
    if m.nvidia_gpus().any(|g| g.compute_capability().is_some_and(is_jetson)) {
        return Outcome::clear();
    }
    let reason = if bnb.version_in(ANY_WHEEL) == Some(true) {
        // The x86-64 libraries matter only when a GPU is to be used.
        if m.nvidia_gpus().next().is_none() {
            return Outcome::clear();
        }
        REASON_X86_LIBS
    } else {
        REASON_NO_WHEEL
    };
    Outcome::matched()
        .evidence("host.arch")
        .evidence(bnb.version_path().as_str())
        .param_field("version", bnb.version_path().as_str())
        .param("reason", reason)
}

pitfall_sdk::export_rule!(evaluate);
