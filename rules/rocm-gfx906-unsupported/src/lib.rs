//! gfx906 (Instinct MI50/MI60, Radeon VII, Radeon Pro VII) is in ROCm
//! maintenance mode since 6.0 (ROCm CHANGELOG) and not among vLLM's ROCm
//! GPUs; vLLM builds for it fail (issue 6565) or cannot run its Triton
//! kernels (PR 33811).
#![no_std]

use pitfall_sdk::prelude::*;

const GFX906_NAMES: [&str; 4] = ["MI50", "MI60", "Radeon VII", "Radeon Pro VII"];
const FROM_SOURCE: &str = "building it fails in its ROCm custom kernels (v_dot2c_f32_f16: 'instruction not supported on this GPU'), and ROCm Triton has no gfx906 backend.";
const PREBUILT: &str =
    "its ROCm builds and images target other GPUs, and ROCm Triton has no gfx906 backend.";

fn evaluate(m: &Manifest) -> Outcome {
    let vllm = m.package("vllm");
    if vllm.is_none() && m.workload().engine().as_deref() != Some("vllm") {
        return Outcome::clear();
    }
    for gpu in m.accelerators().filter(|a| a.vendor().as_deref() == Some("amd")) {
        let gfx_path = gpu.field_path("gfx_target");
        let model_path = gpu.field_path("model");
        let (is_gfx906, evidence) = match m.text(gfx_path.as_str()) {
            Some(gfx) => (gfx.trim().eq_ignore_ascii_case("gfx906"), gfx_path.clone()),
            None => match m.text_contains_any(model_path.as_str(), &GFX906_NAMES) {
                Some(found) => (found, model_path.clone()),
                None => return Outcome::needs(gfx_path.as_str()),
            },
        };
        if !is_gfx906 {
            continue;
        }
        let name = gpu.model().unwrap_or_else(|| String::from("AMD GPU"));
        let what = if m.built_from_source("vllm") { FROM_SOURCE } else { PREBUILT };
        let mut outcome =
            Outcome::matched().evidence(evidence.as_str()).param("gpu", &name).param("what", what);
        if m.built_from_source("vllm") {
            outcome = outcome.evidence("build.from_source");
        }
        if let Some(vllm) = &vllm
            && vllm.version_text().is_some()
        {
            outcome = outcome.evidence(vllm.version_path().as_str());
        }
        return outcome;
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
