//! vLLM refuses bfloat16 on GPUs below compute capability 8.0 (KNOWLEDGE.md
//! B1). An explicit `--dtype bfloat16` fails in every release. `auto` (the
//! default) takes the checkpoint's dtype before 0.9.0 (vllm/config.py
//! `_get_and_verify_dtype` at 0.8.5); from 0.9.0 (PR 17265) it falls back
//! to a dtype the GPU supports (config.py at 0.9.0), which is
//! `vllm-auto-dtype-fp32-fallback`'s concern, not a failure.
#![no_std]

use pitfall_sdk::prelude::*;

const BF16_MIN: ComputeCapability = ComputeCapability::new(8, 0);
/// Releases whose `auto` falls back instead of failing (first: 0.9.0).
const AUTO_FALLS_BACK: &str = ">=0.9.0";
/// Model types vLLM 0.9.1+ refuses in float16 (`_FLOAT16_NOT_SUPPORTED_MODELS`
/// at 0.9.1, 0.10.2 and 0.34.0; plamo2 was listed from 0.9.1 to 0.26.x).
const FP16_REFUSED: [&str; 5] = ["gemma2", "gemma3", "gemma3_text", "glm4", "plamo2"];

const REMEDY_HALF: u32 = 0;
const REMEDY_FLOAT32: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    // The check is vLLM's own (its `applies_to` says so).
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= BF16_MIN {
        return Outcome::clear();
    }
    // vLLM's default dtype is `auto` (ModelConfig.dtype).
    let dtype = m.workload().dtype().unwrap_or_else(|| String::from("auto"));
    let mut how = String::new();
    if dtype == "bfloat16" {
        how.push_str("dtype bfloat16 was requested");
    } else if dtype == "auto" {
        let Some(falls_back) = vllm.version_in(AUTO_FALLS_BACK) else {
            return Outcome::needs("packages.vllm.version");
        };
        if falls_back {
            return Outcome::clear();
        }
        let Some(model_dtype) = m.text("workload.model_dtype") else {
            return Outcome::needs("workload.model_dtype");
        };
        if model_dtype != "bfloat16" && model_dtype != "bf16" {
            return Outcome::clear();
        }
        how.push_str("vLLM ");
        how.push_str(&vllm.version_text().unwrap_or_default());
        how.push_str(" resolves dtype auto to the checkpoint's bfloat16");
    } else {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("how", &how)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    outcome = if dtype == "auto" {
        outcome.evidence("workload.model_dtype").evidence(vllm.version_path().as_str())
    } else {
        outcome.evidence("workload.dtype")
    };
    // The remedy depends on the model family: float16 is refused (0.9.1+)
    // or unstable for some, and then only float32 is left below 8.0.
    match m.text("workload.model_type") {
        Some(t) if FP16_REFUSED.contains(&t.as_str()) => {
            outcome.evidence("workload.model_type").param("model_type", &t).remedy(REMEDY_FLOAT32)
        }
        Some(_) => outcome.remedy(REMEDY_HALF),
        None => outcome
            .param("model_type", "gemma2, gemma3, gemma3_text and glm4")
            .remedy(REMEDY_HALF)
            .remedy(REMEDY_FLOAT32),
    }
}

pitfall_sdk::export_rule!(evaluate);
