//! Gemma 2's logit soft-capping is refused by early vLLM attention backends
//! (read in the PyPI wheels): 0.5.1-0.5.3 accept only FlashInfer (and ROCm
//! cannot select it); 0.5.4-0.6.4 refuse it in XFormers (the backend below
//! compute capability 8.0); 0.5.4-0.7.0 refuse it in ROCmFlashAttention.
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
/// Every non-FlashInfer backend refuses (model_runner / metadata builders).
const ONLY_FLASHINFER: &str = ">=0.5.1,<0.5.4";
/// XFormers refuses soft-capping (raises; 0.6.5 only warns).
const XFORMERS_REFUSES: &str = ">=0.5.4,<0.6.5";
/// ROCmFlashAttention refuses soft-capping unconditionally.
const ROCM_REFUSES: &str = ">=0.5.1,<0.7.1";

const REMEDY_FLASHINFER: u32 = 0;
const REMEDY_UPGRADE: u32 = 1;
const REMEDY_ROCM: u32 = 2;

/// Whether the model is Gemma 2: the model table's type or architecture
/// decide; without them, the model id's name.
fn is_gemma2(m: &Manifest) -> Option<bool> {
    if let Some(model_type) = m.text("workload.model_type") {
        return Some(model_type.trim() == "gemma2");
    }
    if let Some(arch) = m.text("workload.architecture") {
        return Some(arch.trim() == "Gemma2ForCausalLM");
    }
    m.workload().model_mentions(&["gemma-2", "gemma2"])
}

/// The attention backend the user forced, upper case, and where it was set.
fn forced_backend(m: &Manifest) -> Option<(String, &'static str)> {
    if let Some(b) = m.workload().attention_backend() {
        return Some((b, "workload.attention_backend"));
    }
    m.env("VLLM_ATTENTION_BACKEND")
        .map(|b| (b.trim().to_ascii_uppercase(), "env.VLLM_ATTENTION_BACKEND"))
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let in_range = |spec: &str| vllm.version_in(spec);
    match in_range(ROCM_REFUSES) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    match is_gemma2(m) {
        None => return Outcome::needs("workload.model_type"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let forced = forced_backend(m);
    let version_path = vllm.version_path();

    // AMD: the ROCm selector ignores the requested backend.
    if let Some(amd) = m.accelerators().find(|a| a.vendor().as_deref() == Some("amd")) {
        let name = amd.model().unwrap_or_else(|| String::from("AMD GPU"));
        let mut outcome = Outcome::matched()
            .evidence(version_path.as_str())
            .evidence(amd.field_path("vendor").as_str())
            .param_field("vllm", version_path.as_str())
            .param("backend", "ROCm")
            .param("where", &name);
        if let Some((_, path)) = &forced {
            outcome = outcome.evidence(path);
        }
        return outcome.remedy(REMEDY_ROCM);
    }

    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let backend = forced.as_ref().map(|(b, _)| b.as_str());
    if backend == Some("FLASHINFER") {
        return Outcome::clear();
    }
    let only_flashinfer = in_range(ONLY_FLASHINFER) == Some(true);
    let xformers_refuses = in_range(XFORMERS_REFUSES) == Some(true);
    // The backend vLLM runs: the forced one, else FlashAttention from 8.0
    // and XFormers below.
    // (A forced FLASH_ATTN falls back to XFormers below 8.0: selector.py.)
    let running = match backend {
        Some("FLASH_ATTN") if cc < AMPERE => "XFORMERS",
        Some(b) => b,
        None if cc >= AMPERE => "FLASH_ATTN",
        None => "XFORMERS",
    };
    let refused = only_flashinfer || (xformers_refuses && running == "XFORMERS");
    if !refused {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut where_buf = String::with_capacity(48);
    where_buf.push_str("the ");
    where_buf.push_str(&gpu_name);
    where_buf.push_str(" (compute capability ");
    where_buf.push_str(cc.write_to(&mut cc_buf));
    where_buf.push(')');
    let mut outcome = Outcome::matched()
        .evidence(version_path.as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("vllm", version_path.as_str())
        .param("backend", running)
        .param("where", &where_buf);
    if let Some((_, path)) = &forced {
        outcome = outcome.evidence(path);
    }
    if cc >= AMPERE && running != "XFORMERS" {
        // FlashInfer (vLLM's own advice), or FlashAttention from 0.5.4.
        outcome
            .remedy(REMEDY_FLASHINFER)
            .param("fix", "0.5.4")
            .param("note", " (FlashAttention)")
            .remedy(REMEDY_UPGRADE)
    } else if cc >= AMPERE {
        // XFormers forced on Ampere or newer: FlashInfer, or 0.6.5's warning.
        outcome
            .remedy(REMEDY_FLASHINFER)
            .param("fix", "0.6.5")
            .param("note", " with a warning that outputs may be slightly off (XFormers)")
            .remedy(REMEDY_UPGRADE)
    } else {
        // Below 8.0 only XFormers remains; from 0.6.5 it warns instead.
        outcome
            .param("fix", "0.6.5")
            .param("note", " with a warning that outputs may be slightly off (XFormers)")
            .remedy(REMEDY_UPGRADE)
    }
}

pitfall_sdk::export_rule!(evaluate);
