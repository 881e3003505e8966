//! transformers 5.15 makes Gemma 4's `head_dim` a per-layer attribute and
//! raises on global access; vLLM releases before the fix (vLLM PR 49797, on
//! main after 0.27.1) read it globally and fail at start-up (KNOWLEDGE.md B22).
#![no_std]

use pitfall_sdk::prelude::*;

/// vLLM from its first release with Gemma 4 support to the fix: builds
/// from main after 0.27.1 carry it (the field reports' nightly).
const AFFECTED_VLLM: &str = ">=0.19.0,<0.27.2rc0";
/// transformers from the release that made per-layer attributes ambiguous.
const BREAKING_TRANSFORMERS: &str = ">=5.15.0";

/// Spellings of Gemma 4 in a model id. The id is asked about
/// (`text_contains`), never read: the registry answers every other model
/// id from one evaluation.
const GEMMA4: [&str; 3] = ["gemma-4", "gemma4", "gemma_4"];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().model_mentions(&GEMMA4) != Some(true) {
        return Outcome::clear();
    }
    // Both versions are asked about (`version_in`) and quoted through
    // parameters bound to their fields (`param_field`), never read: the
    // registry answers every release with the same answers from one
    // evaluation.
    let Some(affected) = vllm.version_in(AFFECTED_VLLM) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !affected {
        return Outcome::clear();
    }
    let transformers = m.package("transformers");
    let Some(breaking) = transformers.as_ref().and_then(|p| p.version_in(BREAKING_TRANSFORMERS))
    else {
        return Outcome::needs("packages.transformers.version");
    };
    if !breaking {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.model")
        .evidence(vllm.version_path().as_str())
        .evidence("packages.transformers.version")
        .param_field("transformers", "packages.transformers.version")
        .param_field("vllm", vllm.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
