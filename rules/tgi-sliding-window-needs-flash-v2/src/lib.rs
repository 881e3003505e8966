//! Text Generation Inference runs sliding-window attention only with
//! FlashAttention-2, which it uses on compute capability 8.0 and newer
//! (utils/flash_attn.py, later layers/attention/cuda.py: FlashAttention v1
//! below 8.0, none below 7.5). What a release does with a sliding-window
//! model on an older GPU (server/text_generation_server/models/__init__.py
//! at each tag):
//!
//! - v1.1.0 .. v1.3.3: Mistral (and from v1.3.0 Mixtral) exist only as
//!   FlashAttention-2 implementations, whose modules raise ImportError
//!   without it; get_model then refuses every `mistral` (`mixtral`) model
//!   at load, window or not: "Mistral model(s) requires flash attention v2".
//! - v1.3.4 .. v2.0.4: a `mistral`/`mixtral` (from v1.4.3 also `starcoder2`,
//!   `qwen2`) model whose config sets `sliding_window` falls back to the
//!   padded transformers implementation (CausalLM), which serves it
//!   unsharded; sharded, it is refused at load ("sharded is not supported
//!   for AutoModel", from v1.4.3 "Sharded Mistral requires Flash Attention
//!   enabled models."). CausalLM never passes sliding_window to Model, so
//!   model.py's "sliding_window is not implemented with padding" is not
//!   reached on this path.
//! - v2.1.0 and later (commit 9b3674d9; `SUPPORTS_WINDOWING = V2`): any
//!   model whose config sets `sliding_window` is refused at load when
//!   --max-input-tokens exceeds the window. An image without a readable
//!   release (`latest`, `sha-...`, engine `tgi` without an image) is taken
//!   to be such a release.
//!
//! ROCm builds have no windowing either but are left out here for want of
//! a machine-applicable remedy. The rule reads `workload.sliding_window`
//! (the config's raw `sliding_window`), `workload.max_input_tokens`,
//! `workload.model_type` and `workload.tensor_parallel_size` (--num-shard).
#![no_std]

use pitfall_sdk::prelude::*;
use pitfall_sdk::text;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const WINDOW: &str = "workload.sliding_window";
const MAX_INPUT: &str = "workload.max_input_tokens";
const MODEL_TYPE: &str = "workload.model_type";
const SHARDS: &str = "workload.tensor_parallel_size";
const TGI_IMAGE: &str = "text-generation-inference";

/// Whether `v` is below the release `bound`.
fn below(v: &Version, bound: &str) -> bool {
    Version::parse(bound).is_ok_and(|b| *v < b)
}

/// What a release does with the model on a GPU without FlashAttention-2.
enum Era {
    /// Before v1.1.0: no Mistral support, no windowing: out of scope.
    Before,
    /// v1.1.0 .. v1.3.3: Mistral (Mixtral) only with FlashAttention-2.
    FlashOnly,
    /// v1.3.4 .. v2.0.4: the transformers fallback, unsharded only.
    Fallback,
    /// v2.1.0 and later: refused when --max-input-tokens exceeds the window.
    Refusal,
}

fn era(version: Option<&Version>) -> Era {
    match version {
        None => Era::Refusal,
        Some(v) if below(v, "1.1.0") => Era::Before,
        Some(v) if below(v, "1.3.4") => Era::FlashOnly,
        Some(v) if below(v, "2.1.0") => Era::Fallback,
        Some(_) => Era::Refusal,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let image = m.image();
    let tgi_image = image.as_deref().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    let is_tgi =
        tgi_image || matches!(engine.as_deref(), Some("tgi" | "text-generation-inference"));
    if !is_tgi {
        return Outcome::clear();
    }
    let version = image
        .as_deref()
        .filter(|_| tgi_image)
        .and_then(pitfall_sdk::image::release)
        .and_then(|r| Version::parse(r).ok());
    let era = era(version.as_ref());
    if matches!(era, Era::Before) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    let found = Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf));
    let release = version.as_ref().map_or("", |v| v.as_str());
    let mut what = String::new();
    match era {
        Era::Before => Outcome::clear(),
        Era::FlashOnly => {
            let Some(model_type) = m.text(MODEL_TYPE) else {
                return Outcome::needs(MODEL_TYPE);
            };
            let mixtral = version.as_ref().is_some_and(|v| !below(v, "1.3.0"));
            if !(model_type == "mistral" || (mixtral && model_type == "mixtral")) {
                return Outcome::clear();
            }
            what.push_str("TGI ");
            what.push_str(release);
            what.push_str(" refuses any ");
            what.push_str(&model_type);
            what.push_str(
                " model at load: releases 1.1.0 to 1.3.3 run Mistral and Mixtral only through FlashAttention-2",
            );
            found.evidence(MODEL_TYPE).param("what", &what).remedy(0)
        }
        Era::Fallback => {
            let shards = m.workload().tensor_parallel_size().unwrap_or(1);
            if shards < 2 {
                // Served, slowly, through the transformers fallback.
                return Outcome::clear();
            }
            let Some(model_type) = m.text(MODEL_TYPE) else {
                return Outcome::needs(MODEL_TYPE);
            };
            let later = version.as_ref().is_some_and(|v| !below(v, "1.4.3"));
            let windowed = matches!(model_type.as_str(), "mistral" | "mixtral")
                || (later && matches!(model_type.as_str(), "starcoder2" | "qwen2"));
            if !windowed {
                return Outcome::clear();
            }
            let Some(window) = m.number(WINDOW) else {
                return Outcome::needs(WINDOW);
            };
            if window <= 0.0 {
                return Outcome::clear();
            }
            what.push_str("TGI ");
            what.push_str(release);
            what.push_str(" serves the model's sliding window (");
            text::push_int(&mut what, window as i64);
            what.push_str(" tokens) only unsharded, through its transformers fallback, and refuses it at load over ");
            text::push_int(&mut what, i64::from(shards));
            what.push_str(" shards");
            found
                .evidence(MODEL_TYPE)
                .evidence(WINDOW)
                .evidence(SHARDS)
                .param("what", &what)
                .remedy(0)
                .remedy(1)
        }
        Era::Refusal => {
            let Some(window) = m.number(WINDOW) else {
                return Outcome::needs(WINDOW);
            };
            if window <= 0.0 {
                return Outcome::clear();
            }
            let Some(max_input) = m.number(MAX_INPUT) else {
                // --max-input-tokens is below --max-total-tokens: a total within the window is safe.
                return match m.workload().max_model_len() {
                    Some(total) if total <= window => Outcome::clear(),
                    _ => Outcome::needs(MAX_INPUT),
                };
            };
            if max_input <= window {
                return Outcome::clear();
            }
            what.push_str("it cannot run the model's sliding window (");
            text::push_int(&mut what, window as i64);
            what.push_str(" tokens) with --max-input-tokens ");
            text::push_int(&mut what, max_input as i64);
            what.push_str(": it refuses the model at load");
            found.evidence(WINDOW).evidence(MAX_INPUT).param("what", &what).remedy(0)
        }
    }
}

pitfall_sdk::export_rule!(evaluate);
