//! A model architecture added to vLLM's model registry after the installed
//! release (KNOWLEDGE.md D19's vLLM side). First releases read in
//! vllm/model_executor/models/registry.py of every PyPI wheel 0.4.0-0.34.0,
//! each checked absent in the release before and present in all later ones.
//! From 0.7.3 a Transformers-backend fallback may still run the model, so
//! this is a warning.
#![no_std]

use pitfall_sdk::prelude::*;

/// (architecture, first vLLM release with it). Gemma 4 is left to
/// `vllm-heterogeneous-head-dim`.
const FIRST_RELEASE: &[(&str, &str)] = &[
    ("Gemma3ForCausalLM", "0.8.0"),
    ("Gemma3ForConditionalGeneration", "0.8.0"),
    ("Llama4ForConditionalGeneration", "0.8.3"),
    ("Mistral3ForConditionalGeneration", "0.8.3"),
    ("Qwen3ForCausalLM", "0.8.4"),
    ("Qwen3MoeForCausalLM", "0.8.4"),
    ("Glm4ForCausalLM", "0.8.4"),
    ("Gemma3nForConditionalGeneration", "0.9.2"),
    ("Glm4MoeForCausalLM", "0.10.0"),
    ("GptOssForCausalLM", "0.10.1"),
    ("Qwen3NextForCausalLM", "0.10.2"),
    ("Qwen3VLForConditionalGeneration", "0.11.0"),
    ("Qwen3VLMoeForConditionalGeneration", "0.11.0"),
    ("DeepseekV32ForCausalLM", "0.11.0"),
    ("Olmo3ForCausalLM", "0.11.0"),
    ("MiniMaxM2ForCausalLM", "0.11.1"),
    ("KimiLinearForCausalLM", "0.11.1"),
    ("MistralLarge3ForCausalLM", "0.12.0"),
    ("KimiK25ForConditionalGeneration", "0.15.0"),
    ("Glm4MoeLiteForCausalLM", "0.15.0"),
    ("GlmMoeDsaForCausalLM", "0.16.0"),
    ("Qwen3_5ForConditionalGeneration", "0.17.0"),
    ("Qwen3_5MoeForConditionalGeneration", "0.17.0"),
    ("DeepseekV4ForCausalLM", "0.20.0"),
    ("MiniMaxM3SparseForCausalLM", "0.24.0"),
    ("KimiK3ForConditionalGeneration", "0.27.0"),
    ("Glm5NextForConditionalGeneration", "0.30.0"),
    ("DeepseekV41ForCausalLM", "0.30.0"),
    ("MistralLarge4ForCausalLM", "0.34.0"),
    ("KimiK31ForConditionalGeneration", "0.34.0"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let Some(architecture) = m.text("workload.architecture") else {
        return if m.has("workload.model") {
            Outcome::needs("workload.architecture")
        } else {
            Outcome::clear()
        };
    };
    let Some((_, first)) = FIRST_RELEASE.iter().find(|(a, _)| *a == architecture.as_str()) else {
        return Outcome::clear();
    };
    let mut before = String::from("<");
    before.push_str(first);
    let Some(older) = vllm.version_in(&before) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !older {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.architecture")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("architecture", &architecture)
        .param("first", first)
}

pitfall_sdk::export_rule!(evaluate);
