//! vLLM 0.9.1 and later refuse float16 for model types whose activations
//! overflow in it (`_FLOAT16_NOT_SUPPORTED_MODELS`, vllm/config.py at 0.9.1,
//! vllm/config/model.py at 0.27.0 and 0.34.0; KNOWLEDGE.md D13).
#![no_std]

use pitfall_sdk::prelude::*;

const BF16_MIN: ComputeCapability = ComputeCapability::new(8, 0);

/// The refused model types and the releases that list each one.
const REFUSED: [(&str, &str); 5] = [
    ("gemma2", ">=0.9.1"),
    ("gemma3", ">=0.9.1"),
    ("glm4", ">=0.9.1"),
    ("gemma3_text", ">=0.10.2"),
    ("plamo2", ">=0.9.1,<0.27.0"),
];

const REMEDY_BF16: u32 = 0;
const REMEDY_FLOAT32: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().dtype().as_deref() != Some("float16") {
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
    let outcome = Outcome::matched()
        .evidence("workload.dtype")
        .evidence("workload.model_type")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("model_type", &model_type);
    // bfloat16 needs 8.0; below it only float32 is left.
    match m.weakest_nvidia_gpu() {
        Some((_, cc)) if cc < BF16_MIN => outcome.remedy(REMEDY_FLOAT32),
        Some(_) => outcome.remedy(REMEDY_BF16),
        None => outcome.remedy(REMEDY_BF16).remedy(REMEDY_FLOAT32),
    }
}

pitfall_sdk::export_rule!(evaluate);
