//! vLLM 0.5.0 to 0.6.6.post1 loads bitsandbytes weights only into model
//! classes that declare `bitsandbytes_stacked_params_mapping`; for any other
//! the loader (model_loader/loader.py, `BitsAndBytesModelLoader`) raises
//! "Model {class} does not support BitsAndBytes quantization yet." (up to
//! 0.5.4 it names `type(self)`, the loader: "Model BitsAndBytesModelLoader
//! does not support ..."; 0.5.5 names the model class). Which registry
//! architectures declare it (directly or through a base class, as Mistral
//! through Llama) was read in the PyPI sdists of 0.5.0, 0.5.1, 0.5.2,
//! 0.5.3, 0.5.3.post1, 0.5.4, 0.5.5, 0.6.0, 0.6.1, 0.6.2, 0.6.3,
//! 0.6.3.post1, 0.6.4, 0.6.4.post1, 0.6.5, 0.6.6 and 0.6.6.post1. From
//! 0.7.0 the loader checks `packed_modules_mapping` instead, which this
//! rule does not judge.
#![no_std]

use pitfall_sdk::prelude::*;

/// Releases whose loader checks `bitsandbytes_stacked_params_mapping`.
const CHECKED: &str = ">=0.5.0,<0.7.0";

/// (architecture, first release read with it in the registry, first
/// release whose class declares the mapping). Llama-family architectures
/// had it from 0.5.0 and are absent; architectures that got it only in
/// 0.7.0 (through `packed_modules_mapping`) are left out.
const FIRST_BNB: &[(&str, &str, &str)] = &[
    ("Gemma2ForCausalLM", "0.5.1", "0.6.2"),
    ("FalconForCausalLM", "0.5.0", "0.6.3"),
    ("RWForCausalLM", "0.5.0", "0.6.3"),
    ("GemmaForCausalLM", "0.5.0", "0.6.3"),
    ("OPTForCausalLM", "0.5.0", "0.6.3"),
    ("PhiForCausalLM", "0.5.0", "0.6.3"),
    ("Qwen2ForCausalLM", "0.5.0", "0.6.4"),
    ("MllamaForConditionalGeneration", "0.6.2", "0.6.4"),
    ("BaiChuanForCausalLM", "0.5.0", "0.6.5"),
    ("BaichuanForCausalLM", "0.5.0", "0.6.5"),
    ("LlavaForConditionalGeneration", "0.5.0", "0.6.5"),
    ("MiniCPMForCausalLM", "0.5.0", "0.6.5"),
    ("MiniCPM3ForCausalLM", "0.6.2", "0.6.5"),
    ("XverseForCausalLM", "0.5.0", "0.6.5"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("bitsandbytes") {
        return Outcome::clear();
    }
    match vllm.need_version_in(CHECKED) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    let Some(architecture) = m.text("workload.architecture") else {
        return Outcome::needs("workload.architecture");
    };
    let Some((_, present, first)) = FIRST_BNB.iter().find(|(a, _, _)| *a == architecture.as_str())
    else {
        return Outcome::clear();
    };
    let mut range = String::from(">=");
    range.push_str(present);
    range.push_str(",<");
    range.push_str(first);
    if vllm.version_in(&range) != Some(true) {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence("workload.architecture")
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("architecture", &architecture)
        .param("first", first)
}

pitfall_sdk::export_rule!(evaluate);
