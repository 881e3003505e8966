//! Text Generation Inference before 1.1.0 has no Mistral model: get_model
//! (server/text_generation_server/models/__init__.py, read at v0.9.0,
//! v0.9.3, v0.9.4, v1.0.0 .. v1.0.3) has no `mistral` branch, and its fallback to
//! transformers' AutoModel needs the type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
//! which the pinned transformers (4.29.2 .. 4.32.1; `mistral` first in
//! 4.34.0) lacks. So a `mistral` checkpoint is refused at load: "ValueError:
//! Unsupported model type mistral" (TGI issue 1078, 1.0.3), or "sharded is
//! not supported for AutoModel" over several shards. v1.1.0 added it (PR
//! 1071, `if model_type == "mistral"`).
//!
//! The release is read from the official image's tag; a tag without a
//! release (`latest`, `sha-...`) is taken to be a current release.
#![no_std]

use pitfall_sdk::prelude::*;

const TGI_IMAGE: &str = "text-generation-inference";
const IMAGE: &str = "container.image";
const MODEL_TYPE: &str = "workload.model_type";

fn evaluate(m: &Manifest) -> Outcome {
    let image = m.image();
    let tgi_image = image.as_deref().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    let tgi_engine = matches!(engine.as_deref(), Some("tgi" | "text-generation-inference"));
    if !tgi_image && !tgi_engine {
        return Outcome::clear();
    }
    let model_type = m.text(MODEL_TYPE);
    let mistral = model_type.as_deref().map(|t| t.trim() == "mistral");
    if !tgi_image {
        // TGI named as the engine, its release unknown: it matters only
        // for a Mistral model.
        return if mistral == Some(true) { Outcome::needs(IMAGE) } else { Outcome::clear() };
    }
    let Some(version) =
        image.as_deref().and_then(pitfall_sdk::image::release).and_then(|r| Version::parse(r).ok())
    else {
        return Outcome::clear();
    };
    if Version::parse("1.1.0").is_ok_and(|first| version >= first) {
        return Outcome::clear();
    }
    match mistral {
        None => Outcome::needs(MODEL_TYPE),
        Some(false) => Outcome::clear(),
        Some(true) => Outcome::matched()
            .evidence(IMAGE)
            .evidence(MODEL_TYPE)
            .param("version", version.as_str()),
    }
}

pitfall_sdk::export_rule!(evaluate);
