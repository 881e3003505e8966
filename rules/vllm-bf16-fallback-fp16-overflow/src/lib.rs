//! vLLM falls back from bfloat16 to float16 below compute capability 8.0
//! (`_resolve_auto_dtype`, vllm/config/model.py at 0.34.0). Gemma 4 Unified's
//! vision `patch_dense` overflows float16 (issue 48231, PR 48233); the model
//! is registered from 0.23.0 and unchanged at 0.34.0.
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
/// Architectures whose float16 forward is known to overflow.
const OVERFLOWING: [&str; 1] = ["Gemma4UnifiedForConditionalGeneration"];

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    match vllm.version_in(">=0.23.0") {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    // float16 is served for `auto` (the default) and for an explicit float16;
    // bfloat16 is refused (vllm-bf16-needs-sm80), float32 is safe.
    let dtype = m.workload().dtype();
    if !matches!(dtype.as_deref(), None | Some("auto") | Some("float16")) {
        return Outcome::clear();
    }
    let arch = match m.text("workload.architecture") {
        Some(a) => a,
        // Without the model table's architecture, only a Gemma model needs it.
        None => {
            return match m.workload().model_mentions(&["gemma"]) {
                Some(true) => Outcome::needs("workload.architecture"),
                Some(false) => Outcome::clear(),
                None => Outcome::needs("workload.architecture"),
            };
        }
    };
    let arch = arch.trim();
    if !OVERFLOWING.contains(&arch) {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("workload.architecture")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(vllm.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param("arch", arch)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if dtype.is_some() {
        outcome = outcome.evidence("workload.dtype");
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
