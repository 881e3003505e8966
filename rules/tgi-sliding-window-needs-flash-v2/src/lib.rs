//! Text Generation Inference runs sliding-window attention only with
//! FlashAttention-2 (`SUPPORTS_WINDOWING = V2` in
//! server/text_generation_server/layers/attention/cuda.py, v2.1.0 .. v3.3.7),
//! and FlashAttention-2 is used only on compute capability 8.0 and newer
//! (the same file raises "FlashAttention only supports Ampere GPUs or
//! newer." below it and falls back to FlashAttention v1). Since v2.1.0,
//! models/__init__.py then refuses, at load, a model whose config has a
//! `sliding_window` when --max-input-tokens exceeds it (introduced by
//! commit 9b3674d9; absent in v2.0.4). ROCm builds have no windowing either
//! (rocm.py) but are left out here for want of a machine-applicable remedy.
//!
//! The model's window and TGI's --max-input-tokens are not in the manifest
//! contract; the rule reads the proposed `workload.sliding_window` (the
//! config's raw `sliding_window`) and `workload.max_input_tokens`.
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const WINDOW: &str = "workload.sliding_window";
const MAX_INPUT: &str = "workload.max_input_tokens";
const TGI_IMAGE: &str = "text-generation-inference";

/// The release in an image tag (`...:2.3.0`, `...:sha-...` gives `None`).
fn image_version(image: &str) -> Option<Version> {
    let tag = image.rsplit_once(':')?.1;
    Version::parse(tag).ok()
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let image = m.image();
    let tgi_image = image.as_deref().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    let is_tgi =
        tgi_image || matches!(engine.as_deref(), Some("tgi" | "text-generation-inference"));
    if !is_tgi {
        return Outcome::clear();
    }
    // Before v2.1.0 TGI did not refuse these models at load.
    if let Some(version) = image.as_deref().filter(|_| tgi_image).and_then(image_version)
        && Version::parse("2.1.0").is_ok_and(|first| version < first)
    {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    let Some(window) = m.number(WINDOW) else {
        return Outcome::needs(WINDOW);
    };
    if window <= 0.0 {
        return Outcome::clear();
    }
    let Some(max_input) = m.number(MAX_INPUT) else {
        // --max-input-tokens is below --max-total-tokens: a total within the window is safe.
        return match m.workload().max_model_len() {
            Some(total) if total <= window => Outcome::clear(),
            _ => Outcome::needs(MAX_INPUT),
        };
    };
    if max_input <= window {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(WINDOW)
        .evidence(MAX_INPUT)
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
        .param_int("window", window as i64)
        .param_int("max_input", max_input as i64)
}

pitfall_sdk::export_rule!(evaluate);
