//! vLLM's V1 engine did not run on GPUs below compute capability 8.0 until
//! 0.10.2 (KNOWLEDGE.md B20). From 0.8.0 V1 is the default, but on such a
//! GPU vLLM falls back to V0 on its own; only `VLLM_USE_V1=1` forces V1,
//! and then start-up fails (in 0.7.x, V1 was opt-in through the same
//! variable and failed in its FlashAttention backend).
#![no_std]

use pitfall_sdk::prelude::*;

const SM80: ComputeCapability = ComputeCapability::new(8, 0);
/// From the first release with the V1 engine to the fix.
const AFFECTED: &str = ">=0.7.0,<0.10.2";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    // vLLM reads the variable as an integer: `bool(int(...))`.
    let Some(v1) = m.env("VLLM_USE_V1") else {
        return Outcome::clear();
    };
    if !v1.trim().parse::<i64>().is_ok_and(|n| n != 0) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= SM80 {
        return Outcome::clear();
    }
    // The host compares (`version_in`) and fills the version into the
    // message (`param_field`): the rule never reads it, so the registry
    // answers every affected release from one evaluation.
    let Some(affected) = vllm.version_in(AFFECTED) else {
        return Outcome::needs("packages.vllm.version");
    };
    if !affected {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence("env.VLLM_USE_V1")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("v1", v1.trim())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
