//! FlashInfer's release wheels up to 0.1.5 carry kernels for compute
//! capability 8.0+ only (release_wheel.yml TORCH_CUDA_ARCH_LIST at each
//! tag); 0.1.6 adds 7.5. SGLang on a T4/V100 with such a wheel fails at the
//! first prefill batch (issue 748).
#![no_std]

use pitfall_sdk::prelude::*;

const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const NO_SM75: &str = "<0.1.6";

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_GPU: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("sglang").is_none() {
        return Outcome::clear();
    }
    // 0.1.x wheels are `flashinfer`: the host files them under the PyPI name.
    let Some(flashinfer) = m.package("flashinfer-python") else {
        return Outcome::clear();
    };
    match flashinfer.version_in(NO_SM75) {
        None => return Outcome::needs(flashinfer.version_path().as_str()),
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
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence(flashinfer.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("flashinfer", flashinfer.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    // 0.1.6 adds 7.5 only; older GPUs need another GPU.
    if cc >= TURING {
        outcome.remedy(REMEDY_UPGRADE).remedy(REMEDY_GPU)
    } else {
        outcome.remedy(REMEDY_GPU)
    }
}

pitfall_sdk::export_rule!(evaluate);
