//! FlashAttention-2 needs compute capability 8.0 (Ampere) or newer
//! (KNOWLEDGE.md B3; flash_api.cpp at v2.0.0 to v2.8.3 checks it:
//! "FlashAttention only supports Ampere GPUs or newer.").
//!
//! The backend is chosen by `workload.attention_backend` (vLLM's
//! `--attention-backend`, or transformers' `attn_implementation`) or vLLM's
//! `VLLM_ATTENTION_BACKEND` variable. vLLM before 0.10.2 runs GPUs below 8.0
//! on its V0 engine (0.10.1.1 arg_utils.py: "Compute Capability < 8.0 is not
//! supported by the V1 Engine. Falling back to V0."), whose selector logs
//! "Cannot use FlashAttention-2 backend for Volta and Turing GPUs." and
//! takes xFormers: nothing fails. From 0.10.2 (no such fallback) V1 takes
//! the forced backend: 0.10.2 and 0.11.x without checking the GPU (its FA2
//! kernels are built for 8.0 and newer only, and vllm_flash_attn's version
//! probe says "FA2 is only supported on devices with compute capability >=
//! 8"), 0.12.0 and later refuse it at start-up ("compute capability not
//! supported"). Other engines call the flash-attn package, which raises at
//! its first call.
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
