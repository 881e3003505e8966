//! vLLM has no bitsandbytes before 0.5.0, and loads pre-quantized
//! bitsandbytes 4-bit checkpoints only from 0.5.4 (read in the PyPI sdists
//! of 0.4.3, 0.5.0 to 0.5.3.post1 and 0.5.4):
//! - 0.4.3: `QUANTIZATION_METHODS` has no `bitsandbytes`, and config.py
//!   raises "Unknown quantization method: bitsandbytes. Must be one of
//!   [...]" for `--quantization bitsandbytes` and for a checkpoint whose
//!   config.json says `quant_method: bitsandbytes`;
//! - 0.5.0 to 0.5.3.post1: `bitsandbytes` quantizes full-precision weights
//!   as they load, and `BitsAndBytesConfig.from_config` needs
//!   `adapter_name_or_path`, which a pre-quantized checkpoint's config
//!   lacks: "Cannot find any of ['adapter_name_or_path'] in the model's
//!   quantization config.";
//! - 0.5.4: the loader reads pre-quantized (nf4) checkpoints (`pre_quant`).
//!
//! A pre-quantized checkpoint is recognised by its model id (`-bnb-4bit`,
//! as unsloth names them). The removal in 0.28.0 is
//! `vllm-bitsandbytes-removed`'s.
#![no_std]

use pitfall_sdk::prelude::*;

/// No `bitsandbytes` quantization method at all.
const NO_METHOD: &str = "<0.5.0";
/// No loading of pre-quantized bitsandbytes checkpoints.
const NO_PREQUANT: &str = "<0.5.4";

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else {
        return Ok(Outcome::clear());
    };
    let w = m.workload();
    let quantization = w.quantization();
    let by_quant = quantization.as_deref() == Some("bitsandbytes");
    // Another method asked for explicitly is another rule's business.
    let pre_quantized =
        (quantization.is_none() || by_quant) && w.model_mentions(&["bnb-4bit"]) == Some(true);
    if !by_quant && !pre_quantized {
        return Ok(Outcome::clear());
    }
    let before_method = if pre_quantized {
        if !vllm.need_version_in(NO_PREQUANT)? {
            return Ok(Outcome::clear());
        }
        vllm.need_version_in(NO_METHOD)?
    } else {
        if !vllm.need_version_in(NO_METHOD)? {
            return Ok(Outcome::clear());
        }
        true
    };
    let (what, error) = if before_method {
        (
            if pre_quantized {
                "this pre-quantized bitsandbytes checkpoint"
            } else {
                "bitsandbytes quantization"
            },
            "Unknown quantization method: bitsandbytes",
        )
    } else {
        (
            "this pre-quantized bitsandbytes checkpoint",
            "Cannot find any of ['adapter_name_or_path'] in the model's quantization config",
        )
    };
    let fix = if pre_quantized { "0.5.4" } else { "0.5.0" };
    let mut outcome = Outcome::matched();
    if by_quant {
        outcome = outcome.evidence("workload.quantization");
    }
    if pre_quantized {
        outcome = outcome.evidence("workload.model");
    }
    Ok(outcome
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("what", what)
        .param("error", error)
        .param("fix", fix))
}

pitfall_sdk::export_rule!(evaluate);
