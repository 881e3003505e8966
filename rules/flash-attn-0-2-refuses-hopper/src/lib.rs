//! flash-attn before 1.0.0 (PyPI 0.2.0 to 0.2.8) checks the GPU in every
//! forward and backward call of csrc/flash_attn/fmha_api.cpp:
//! `TORCH_CHECK(is_sm8x || is_sm75)` (is_sm8x: major 8; is_sm75: exactly
//! 7.5), and its setup.py compiles sm_75 and sm_80 only. Hopper (9.0: H100,
//! H800, H20) fails the check: torch prints "Expected is_sm8x || is_sm75 to
//! be true, but got false." 1.0.0 ("Support H100") checks `is_sm90 ||
//! is_sm8x || is_sm75` and compiles sm_90 with CUDA 11.8 or newer.
//!
//! Other GPUs these releases refuse are other rules' cases: Blackwell
//! (flash-attn-blackwell-needs-2-8), Volta and older with the FLASH_ATTN
//! backend (flash-attn2-needs-sm80).
#![no_std]

use pitfall_sdk::prelude::*;

const FA: &str = "flash-attn";
/// The releases whose check knows no Hopper.
const NO_HOPPER: &str = "<1.0.0";

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(fa) = m.package(FA) else {
        return Ok(Outcome::clear());
    };
    let Some((gpu, cc)) = m.need_nvidia_gpu_where(|cc| cc.major == 9)? else {
        return Ok(Outcome::clear());
    };
    if !fa.need_version_in(NO_HOPPER)? {
        return Ok(Outcome::clear());
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Ok(Outcome::matched()
        .evidence(fa.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", fa.version_path().as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf)))
}

pitfall_sdk::export_rule!(evaluate);
