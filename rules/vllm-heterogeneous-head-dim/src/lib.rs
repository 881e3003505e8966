//! vLLM before 0.19.0 has no Gemma 4 (KNOWLEDGE.md A4): Gemma 4 mixes head
//! sizes (256 sliding, 512 global) and first appears in the 0.19.0 model
//! registry (0.18.1 has no Gemma4 entry). From 0.19.0, gemma4.py builds each
//! layer with its own head size and models/config.py forces TRITON_ATTN
//! when they differ. The transformers 5.15 breakage of 0.19.0-0.27.1 is
//! `gemma4-transformers-5-15-breaks-vllm`'s; 0.28.0 clears both.
#![no_std]

use pitfall_sdk::prelude::*;

/// The first release with Gemma 4.
const AFFECTED: &str = "<0.19.0";
/// Spellings of Gemma 4 in a model id or architecture, asked about
/// (`text_contains`), never read.
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
    let Some(affected) = vllm.version_in(AFFECTED) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !affected {
        return Outcome::clear();
    }
    let outcome = Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str());
    if by_model {
        outcome.evidence("workload.model").param_field("model", "workload.model")
    } else {
        outcome.evidence("workload.architecture").param("model", "The model")
    }
}

pitfall_sdk::export_rule!(evaluate);
