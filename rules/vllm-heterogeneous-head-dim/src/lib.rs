//! vLLM before 0.27.2rc0 cannot initialise a model whose attention layers
//! have different head sizes (Gemma 4: 256 on sliding-window layers, 512 on
//! global layers) (KNOWLEDGE.md A4).
#![no_std]

use pitfall_sdk::prelude::*;

/// The first vLLM version that serves heterogeneous head sizes.
const FIXED_IN: &str = "0.27.2rc0";

/// Model families known to mix head sizes, for manifests without `head_dims`:
/// Gemma 4 uses 256 on sliding-window layers and 512 on global layers.
const KNOWN_HETEROGENEOUS: &[(&str, &[u32])] = &[("gemma-4", &[256, 512]), ("gemma4", &[256, 512])];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let model = m.workload().model();
    let mut dims = m.workload().head_dims();
    let from_model = dims.is_empty();
    if from_model {
        let lower = model.as_deref().unwrap_or("").to_ascii_lowercase();
        if let Some((_, known)) =
            KNOWN_HETEROGENEOUS.iter().find(|(family, _)| lower.contains(family))
        {
            dims.extend_from_slice(known);
        }
    }
    dims.sort_unstable();
    dims.dedup();
    let geometry_known = !dims.is_empty();
    if geometry_known && dims.len() < 2 {
        return Outcome::clear();
    }
    let version_path = vllm.version_path();
    let Some(version_text) = vllm.version_text() else {
        let outcome = Outcome::needs(version_path.as_str());
        return if geometry_known { outcome } else { outcome.missing("workload.head_dims") };
    };
    // A version that is not PEP 440 (a branch name) cannot be placed; do not guess.
    if pep440_lt(&version_text, FIXED_IN) != Some(true) {
        return Outcome::clear();
    }
    if !geometry_known {
        return Outcome::needs("workload.head_dims");
    }
    let mut dims_text = String::new();
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            dims_text.push_str(if i + 1 == dims.len() { " and " } else { ", " });
        }
        pitfall_sdk::text::push_int(&mut dims_text, i64::from(*d));
    }
    Outcome::matched()
        .evidence(version_path.as_str())
        .evidence(if from_model { "workload.model" } else { "workload.head_dims" })
        .param("model", model.as_deref().unwrap_or("The model"))
        .param("head_dims", &dims_text)
        .param("version", &version_text)
}

pitfall_sdk::export_rule!(evaluate);
