//! transformers 5.15 makes Gemma 4's `head_dim` a per-layer attribute and
//! raises on global access; vLLM releases before the fix (vLLM PR 49797, on
//! main after 0.27.1) read it globally and fail at start-up (KNOWLEDGE.md B22).
#![no_std]

use pitfall_sdk::prelude::*;

/// vLLM's first release with Gemma 4 support.
const FIRST_GEMMA4: &str = "0.19.0";
/// Builds from main after 0.27.1 carry the fix (the field reports' nightly).
const FIXED: &str = "0.27.2rc0";
/// The transformers release that made per-layer attributes ambiguous.
const BREAKING_TRANSFORMERS: &str = "5.15.0";

fn is_gemma4(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    lower.contains("gemma-4") || lower.contains("gemma4") || lower.contains("gemma_4")
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if !m.workload().model().is_some_and(|id| is_gemma4(&id)) {
        return Outcome::clear();
    }
    let Some(vllm_version) = vllm.version() else {
        return Outcome::needs("packages.vllm.version");
    };
    let affected = pep440_ge(vllm_version.as_str(), FIRST_GEMMA4) == Some(true)
        && pep440_lt(vllm_version.as_str(), FIXED) == Some(true);
    if !affected {
        return Outcome::clear();
    }
    let Some(transformers) = m.package("transformers").and_then(|p| p.version()) else {
        return Outcome::needs("packages.transformers.version");
    };
    if pep440_ge(transformers.as_str(), BREAKING_TRANSFORMERS) != Some(true) {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence("workload.model")
        .evidence(vllm.version_path().as_str())
        .evidence("packages.transformers.version")
        .param("transformers", transformers.as_str())
        .param("vllm", vllm_version.as_str())
}

pitfall_sdk::export_rule!(evaluate);
