//! `--dtype auto` on a GPU without bfloat16 falls back to the first dtype
//! both the GPU and the model type allow (`_resolve_auto_dtype`, vllm/config.py
//! at 0.9.1): for the model types vLLM refuses in float16 that is float32,
//! twice the memory of the 16-bit checkpoint (KNOWLEDGE.md B1, D13).
#![no_std]

use pitfall_sdk::prelude::*;

const BF16_MIN: ComputeCapability = ComputeCapability::new(8, 0);

/// Model types refused in float16 and the releases that list each one
/// (`_FLOAT16_NOT_SUPPORTED_MODELS` at 0.9.1, 0.10.2, 0.26.0, 0.27.0, 0.34.0).
const REFUSED: [(&str, &str); 5] = [
    ("gemma2", ">=0.9.1"),
    ("gemma3", ">=0.9.1"),
    ("glm4", ">=0.9.1"),
    ("gemma3_text", ">=0.10.2"),
    ("plamo2", ">=0.9.1,<0.27.0"),
];

fn evaluate(m: &Manifest) -> Outcome {
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
    // Only `auto` (the default) falls back; an explicit dtype is the user's.
    if m.workload().dtype().is_some_and(|d| d != "auto") {
        return Outcome::clear();
    }
    let Some(model_type) = m.text("workload.model_type") else {
        return Outcome::needs("workload.model_type");
    };
    let Some((_, releases)) = REFUSED.iter().find(|(t, _)| *t == model_type.as_str()) else {
        return Outcome::clear();
    };
    match vllm.version_in(releases) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    // A float32 checkpoint stays float32: nothing grows.
    if m.text("workload.model_dtype").as_deref() == Some("float32") {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("workload.model_type")
        .evidence(vllm.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("model_type", &model_type)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
