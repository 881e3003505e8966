//! transformers must know a checkpoint's `model_type` to load its config
//! (KNOWLEDGE.md D19). The first release whose CONFIG_MAPPING_NAMES
//! (transformers/models/auto/configuration_auto.py) lists each type was
//! read in the PyPI wheels of every minor release 4.34.0 .. 4.57.0 and of
//! 5.0.0 .. 5.5.0 (absent in the previous minor's .0 release, present in
//! the one named). Older releases fail in AutoConfig: before 4.37 with
//! `KeyError: '<type>'`, from 4.37 with "The checkpoint you are trying to
//! load has model type `<type>` but Transformers does not recognize this
//! architecture".
//!
//! The table keeps model types that load without remote code; vLLM's own
//! config registry may cover some types for older transformers, so types
//! whose vLLM support could not be checked (qwen3_next) are left out. The
//! model table's `workload.min_transformers`, when present, takes
//! precedence.
#![no_std]

use pitfall_sdk::prelude::*;

const MIN_FIELD: &str = "workload.min_transformers";
const TYPE_FIELD: &str = "workload.model_type";

/// (model_type, first transformers release that knows it).
const FIRST_RELEASE: [(&str, &str); 23] = [
    ("mixtral", "4.36.0"),
    ("qwen2", "4.37.0"),
    ("gemma", "4.38.0"),
    ("starcoder2", "4.39.0"),
    ("qwen2_moe", "4.40.0"),
    ("gemma2", "4.42.0"),
    ("qwen2_vl", "4.45.0"),
    ("mllama", "4.45.0"),
    ("qwen2_5_vl", "4.49.0"),
    ("gemma3", "4.50.0"),
    ("gemma3_text", "4.50.0"),
    ("mistral3", "4.50.0"),
    ("qwen3", "4.51.0"),
    ("qwen3_moe", "4.51.0"),
    ("llama4", "4.51.0"),
    ("gemma3n", "4.53.0"),
    ("smollm3", "4.53.0"),
    ("gpt_oss", "4.55.0"),
    ("qwen3_vl", "4.57.0"),
    ("qwen3_vl_moe", "4.57.0"),
    ("qwen3_5", "5.2.0"),
    ("qwen3_5_moe", "5.2.0"),
    ("gemma4", "5.5.0"),
];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(tf) = m.package("transformers") else {
        return Outcome::clear();
    };
    let model_type = m.text(TYPE_FIELD);
    let from_table = model_type
        .as_deref()
        .and_then(|t| FIRST_RELEASE.iter().find(|(name, _)| *name == t.trim()))
        .map(|(_, first)| String::from(*first));
    let (min, evidence) = match m.text(MIN_FIELD) {
        Some(min) => (min, MIN_FIELD),
        None => match from_table {
            Some(min) => (min, TYPE_FIELD),
            None if model_type.is_none() && m.has("workload.model") => {
                return Outcome::needs(TYPE_FIELD);
            }
            None => return Outcome::clear(),
        },
    };
    let mut spec = String::from("<");
    spec.push_str(min.trim());
    // A minimum that is not a version makes no spec: nothing to compare.
    if Version::parse(min.trim()).is_err() {
        return Outcome::clear();
    }
    match tf.version_in(&spec) {
        None => return Outcome::needs(tf.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let mut outcome = Outcome::matched().evidence(tf.version_path().as_str()).evidence(evidence);
    if evidence == MIN_FIELD && model_type.is_some() {
        outcome = outcome.evidence(TYPE_FIELD);
    }
    outcome
        .param_field("version", tf.version_path().as_str())
        .param("model_type", model_type.as_deref().unwrap_or("of this model"))
        .param("min", min.trim())
}

pitfall_sdk::export_rule!(evaluate);
