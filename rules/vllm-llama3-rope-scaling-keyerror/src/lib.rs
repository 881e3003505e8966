//! Llama 3.1 and 3.2 checkpoints describe their RoPE scaling with the key
//! `rope_type` (`"rope_scaling": {"factor": 8.0, ..., "rope_type":
//! "llama3"}`, no `type`). vLLM 0.2.0 to 0.5.3 index `rope_scaling["type"]`
//! (0.2.0: layers/attention.py; 0.3.0 to 0.5.3: config.py
//! `_get_and_verify_max_len` and layers/rotary_embedding.py `get_rope`,
//! read in the PyPI sdists of 0.2.0, 0.3.0, 0.4.2, 0.5.0, 0.5.1, 0.5.2 and
//! 0.5.3), so loading such a model raises `KeyError: 'type'`. 0.5.3.post1
//! reads `type`, else `rope_type`, and implements `llama3` (config.py,
//! rotary_embedding.py in its sdist; vLLM issue 6692: "Please update to
//! v0.5.3.post1"). 0.1.7 has no rope scaling at all (no KeyError).
//!
//! The checkpoint's scaling type is `workload.rope_scaling_type` (its
//! config.json's `rope_scaling.rope_type`, or `type`); without it, a model
//! id naming Llama 3.1 or 3.2 is taken to carry `llama3`.
#![no_std]

use pitfall_sdk::prelude::*;

const ROPE: &str = "workload.rope_scaling_type";
const MODEL: &str = "workload.model";
const MODEL_TYPE: &str = "workload.model_type";
/// The releases that index `rope_scaling["type"]`.
const AFFECTED: &str = ">=0.2.0,<0.5.3.post1";

/// Whether a model id names Llama 3.1 or 3.2 (`meta-llama/Llama-3.1-8B`,
/// `Meta-Llama-3.1-405B-Instruct-FP8`, `Llama-3.2-3B-Instruct`).
fn names_llama_31_or_32(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    ["llama-3.1", "llama-3.2", "llama3.1", "llama3.2"].iter().any(|f| lower.contains(f))
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else {
        return Ok(Outcome::clear());
    };
    if !vllm.need_version_in(AFFECTED)? {
        return Ok(Outcome::clear());
    }
    let evidence = match m.text(ROPE) {
        Some(rope) if rope.trim() == "llama3" => ROPE,
        Some(_) => return Ok(Outcome::clear()),
        None => match m.text(MODEL) {
            Some(id) if names_llama_31_or_32(&id) => MODEL,
            _ => {
                // Out of scope: the llama3 scaling is a `llama` checkpoint's.
                if m.text(MODEL_TYPE).is_some_and(|t| t.trim() != "llama") {
                    return Ok(Outcome::clear());
                }
                return Err(Outcome::needs(ROPE));
            }
        },
    };
    let model = m.text(MODEL).unwrap_or_else(|| String::from("this checkpoint"));
    Ok(Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence(evidence)
        .param_field("version", vllm.version_path().as_str())
        .param("model", &model))
}

pitfall_sdk::export_rule!(evaluate);
