//! TGI v2.1.0-v2.2.x import FlashAttention-2 without checking the GPU
//! (layers/attention/cuda.py), so GPUs below compute capability 8.0 fail
//! at warmup in flash-attn's own check. v2.0.4 and v2.3.0+ check first.
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const TGI_IMAGE: &str = "text-generation-inference";

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_NO_FLASH: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let image = m.image();
    let tgi_image = image.as_deref().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    if !tgi_image && !matches!(engine.as_deref(), Some("tgi" | "text-generation-inference")) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    if m.env("USE_FLASH_ATTENTION").is_some_and(|v| v.trim().eq_ignore_ascii_case("false")) {
        return Outcome::clear();
    }
    // The release comes from the official image's tag.
    let Some(image) = image.filter(|_| tgi_image) else {
        return Outcome::needs("container.image");
    };
    let Some(release) = pitfall_sdk::image::release(&image) else {
        return Outcome::needs("container.image");
    };
    let affected =
        pep440_ge(release, "2.1.0") == Some(true) && pep440_lt(release, "2.3.0") == Some(true);
    if !affected {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence("container.image")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("tgi", release)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    // 2.3.0 falls back to FlashAttention v1, which supports 7.5 only.
    if cc >= TURING {
        outcome.remedy(REMEDY_UPGRADE).remedy(REMEDY_NO_FLASH)
    } else {
        outcome.remedy(REMEDY_NO_FLASH)
    }
}

pitfall_sdk::export_rule!(evaluate);
