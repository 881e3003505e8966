//! FlashAttention-2 needs compute capability 8.0 (Ampere) or newer
//! (KNOWLEDGE.md B3).
//!
//! The attention backend is chosen by `workload.attention_backend` (vLLM's
//! `--attention-backend`) or the `VLLM_ATTENTION_BACKEND` variable. vLLM
//! before 0.10.2 ran Volta and Turing GPUs on its V0 engine, which only
//! logs "Cannot use FlashAttention-2 backend for Volta and Turing GPUs."
//! and falls back to xFormers; from 0.10.2 (V1 on these GPUs) a forced
//! FLASH_ATTN backend fails. Other engines call the flash-attn package,
//! which raises at the first call.
#![no_std]

use pitfall_sdk::prelude::*;

mod selection;
use selection::Selection;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
/// vLLM releases that run compute capability < 8.0 on the V0 engine, before
/// the first that runs them on V1 (B20). PEP 440: 0.10.2's own release
/// candidates are not below it, and carry the V1 change.
const VLLM_V0_ON_TURING: &str = "<0.10.2";

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(selection) = Selection::of(m) else {
        return Outcome::clear();
    };
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    let vllm = m.package("vllm");
    if let Some(vllm) = &vllm {
        // The host compares (`version_in`): the rule never reads the
        // version, so the registry answers every release on one side of
        // the bound from one evaluation.
        match vllm.version_in(VLLM_V0_ON_TURING) {
            None => return Outcome::needs("packages.vllm.version"),
            // V0 engine: falls back to xFormers with a log line, nothing fails.
            Some(true) => return Outcome::clear(),
            Some(false) => {}
        }
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched().evidence(gpu.field_path("compute_capability").as_str());
    outcome = selection.cite(outcome);
    if let Some(vllm) = &vllm {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    outcome.param("gpu", &gpu_name).param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
