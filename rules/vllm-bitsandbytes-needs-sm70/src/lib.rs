//! vLLM's bitsandbytes quantization declares a minimum compute capability
//! of 70 (`BitsAndBytesConfig.get_min_capability`), and vLLM checks it at
//! start-up: "The quantization method bitsandbytes is not supported for
//! the current GPU. Minimum capability: 70. Current capability: ...".
//! Read as 70 in the PyPI sdists of 0.5.0 (the first release with
//! bitsandbytes), 0.5.3.post1, 0.5.4, 0.5.5, 0.6.0 to 0.6.6.post1, 0.7.0 to
//! 0.7.3, 0.8.0, 0.9.0, 0.10.0, 0.11.0, 0.12.0, 0.13.0, 0.20.0, 0.27.0 and
//! 0.27.1; the other releases up to the removal in 0.28.0 were not read.
//! It bites where vLLM itself runs below 7.0 (community Pascal builds);
//! `vllm-needs-sm70` covers vLLM as a whole.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
/// Releases with bitsandbytes (0.5.0 added it, 0.28.0 removed it).
const WITH_BNB: &str = ">=0.5.0,<0.28.0";

const REMEDY_GPU: u32 = 0;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("bitsandbytes") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= VOLTA {
        return Outcome::clear();
    }
    match vllm.need_version_in(WITH_BNB) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("workload.quantization")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(vllm.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .remedy(REMEDY_GPU)
}

pitfall_sdk::export_rule!(evaluate);
