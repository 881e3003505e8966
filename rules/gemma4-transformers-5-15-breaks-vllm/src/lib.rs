//! transformers 5.15 makes Gemma 4's `head_dim` a per-layer attribute and
//! raises on global access; vLLM 0.19.0 (its first Gemma 4 release) to 0.27.1
//! read it globally and fail at start-up (KNOWLEDGE.md B22; vllm issues
//! 51744, 52768). 0.28.0 resolves the per-layer config (gemma4_layer_config,
//! vLLM PR 49797). Before 0.19.0 there is no Gemma 4: `vllm-heterogeneous-head-dim`.
#![no_std]

use pitfall_sdk::prelude::*;

/// vLLM from its first Gemma 4 release to the fix (0.28.0 has it; nightlies
/// after 0.27.1 are placed by the field reports' 0.27.2rc0).
const AFFECTED_VLLM: &str = ">=0.19.0,<0.27.2rc0";
/// transformers from the builds that made per-layer attributes ambiguous.
const BREAKING_TRANSFORMERS: &str = ">=5.15.0.dev0";

/// vLLM's official images whose transformers is 5.15.0: 0.27.0 (issue
/// 51744, `vllm/vllm-openai:latest` then) and 0.27.1 (KNOWLEDGE.md B22).
const IMAGE_WITH_BREAKING_TRANSFORMERS: &str = ">=0.27.0,<0.27.2rc0";
const OFFICIAL_IMAGE: &str = "vllm/vllm-openai:";

/// Spellings of Gemma 4 in a model id or architecture, asked about, never read.
const GEMMA4: [&str; 3] = ["gemma-4", "gemma4", "gemma_4"];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let by_model = m.workload().model_mentions(&GEMMA4) == Some(true);
    let by_arch = m.text_contains_any("workload.architecture", &GEMMA4) == Some(true);
    if !by_model && !by_arch {
        return Outcome::clear();
    }
    let Some(affected) = vllm.version_in(AFFECTED_VLLM) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !affected {
        return Outcome::clear();
    }
    // Without transformers listed, the official image of 0.27.0 or 0.27.1
    // still says which: it ships 5.15.0.
    let Some(transformers) = m.package("transformers") else {
        let official = m.image().is_some_and(|i| i.starts_with(OFFICIAL_IMAGE));
        if official && vllm.version_in(IMAGE_WITH_BREAKING_TRANSFORMERS) == Some(true) {
            return Outcome::matched()
                .evidence(if by_model { "workload.model" } else { "workload.architecture" })
                .evidence(vllm.version_path().as_str())
                .evidence("container.image")
                .param("transformers", "5.15.0 (the official image's)")
                .param_field("vllm", vllm.version_path().as_str());
        }
        return Outcome::clear();
    };
    let Some(breaking) = transformers.version_in(BREAKING_TRANSFORMERS) else {
        return Outcome::needs("packages.transformers.version");
    };
    if !breaking {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(if by_model { "workload.model" } else { "workload.architecture" })
        .evidence(vllm.version_path().as_str())
        .evidence(transformers.version_path().as_str())
        .param_field("transformers", transformers.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
