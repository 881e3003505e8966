//! flash-attn (FlashAttention-2) on Blackwell GPUs (compute capability 10.x,
//! 12.x) needs 2.8.0 or newer from PyPI. Read at the tags:
//! - before 2.7.3, csrc/flash_attn/flash_api.cpp accepts only 8.x and 9.0
//!   (`is_sm90 || is_sm8x`) and raises "FlashAttention only supports Ampere
//!   GPUs or newer." on anything else, source builds included (v2.7.2.post1);
//!   2.7.3 generalised the check to `cc_major >= 8` (commit bbb21d65) and
//!   setup.py adds sm_100 / sm_120 code when nvcc is 12.8 or newer;
//! - the prebuilt wheels of 2.7.3 to 2.7.4.post1 were built with CUDA 12.3.2 /
//!   12.4.1 (publish.yml at those tags), so they have no sm_100 / sm_120
//!   code: "no kernel image is available";
//! - 2.8.0's wheels are built with CUDA 12.9 and cover sm_100 and sm_120
//!   (FLASH_ATTN_CUDA_ARCHS default "80;90;100;120").
//!
//! A 10.0 cubin also serves 10.3, and 12.0 serves 12.1. Compute capability
//! 11.x (sm_110) is in no release's list and is left out here.
#![no_std]

use pitfall_sdk::prelude::*;

const FA: &str = "flash-attn";
const OLD_CHECK: &str = "<2.7.3";
const WHEELS_WITHOUT_BLACKWELL: &str = ">=2.7.3,<2.8.0";

const REASON_CHECK: &str = "releases before 2.7.3 accept only compute capability 8.x and 9.0 and raise 'FlashAttention only supports Ampere GPUs or newer.'";
const REASON_WHEEL: &str = "the prebuilt wheels of 2.7.3 to 2.7.4.post1 were compiled with CUDA 12.3/12.4, without sm_100/sm_120 code, so kernels fail with 'no kernel image is available'";

fn is_blackwell(cc: ComputeCapability) -> bool {
    cc.major == 10 || cc.major == 12
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(fa) = m.package(FA) else {
        return Outcome::clear();
    };
    let (gpu, cc) = match m.need_nvidia_gpu_where(is_blackwell) {
        Ok(Some(found)) => found,
        Ok(None) => return Outcome::clear(),
        Err(outcome) => return outcome,
    };
    let Some(old_check) = fa.version_in(OLD_CHECK) else {
        return Outcome::needs(fa.version_path().as_str());
    };
    let reason = if old_check {
        REASON_CHECK
    } else if fa.version_in(WHEELS_WITHOUT_BLACKWELL) == Some(true) && !m.built_from_source(FA) {
        REASON_WHEEL
    } else {
        return Outcome::clear();
    };
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(fa.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", fa.version_path().as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
        .param("reason", reason)
}

pitfall_sdk::export_rule!(evaluate);
