//! vLLM 0.9.1 to 0.10.0 run compressed-tensors NVFP4 W4A4 through the CUTLASS
//! NVFP4 GEMM (`cutlass_scaled_fp4_mm`), but their official wheels carry it
//! for SM100 only (`cutlass_scaled_fp4_mm_sm100a` is the one kernel in
//! `_C.abi3.so`; the SM120 kernel file first ships in 0.10.1), so RTX
//! Blackwell GPUs (compute capability 12.x) cannot serve such checkpoints
//! (llm-compressor issue 1643; "we don't have NVFP4A4 support yet for SM120").
#![no_std]

use pitfall_sdk::prelude::*;

/// Releases with the W4A4 scheme and only the SM100 NVFP4 GEMM.
const RELEASES: &str = ">=0.9.1,<0.10.1";
/// From 0.9.2, VLLM_USE_NVFP4_CT_EMULATIONS=1 runs the scheme emulated.
const EMULATION_ENV: &str = ">=0.9.2";
/// llm-compressor's W4A4 preset is `NVFP4`; `NVFP4A16` is weight-only.
const W4A4_SCHEMES: [&str; 4] = ["nvfp4", "nvfp4a4", "w4a4-nvfp4", "w4a4_nvfp4"];
const WEIGHT_ONLY_SCHEMES: [&str; 3] = ["nvfp4a16", "w4a16-nvfp4", "w4a16_nvfp4"];

const REMEDY_WEIGHT_ONLY: u32 = 0;
const REMEDY_EMULATION: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let emulation_available = match vllm.version_in(RELEASES) {
        None => return Outcome::needs(vllm.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => vllm.version_in(EMULATION_ENV) == Some(true),
    };
    let w = m.workload();
    if w.quantization().is_some_and(|q| q != "compressed-tensors" && q != "compressed_tensors") {
        return Outcome::clear();
    }
    let scheme = m.text("workload.quantization_scheme").map(|s| s.trim().to_ascii_lowercase());
    let Some(scheme) = scheme else {
        return Outcome::needs("workload.quantization_scheme");
    };
    if WEIGHT_ONLY_SCHEMES.contains(&scheme.as_str()) || !W4A4_SCHEMES.contains(&scheme.as_str()) {
        return Outcome::clear();
    }
    let mut rtx_blackwell = None;
    let mut unknown = None;
    for gpu in m.nvidia_gpus() {
        match gpu.compute_capability() {
            Some(cc) if cc.major == 12 => {
                rtx_blackwell = rtx_blackwell.or(Some((gpu, cc)));
            }
            Some(_) => {}
            None => unknown = unknown.or(Some(gpu)),
        }
    }
    let Some((gpu, cc)) = rtx_blackwell else {
        return match unknown {
            Some(gpu) => Outcome::needs(gpu.field_path("compute_capability").as_str()),
            None => Outcome::clear(),
        };
    };
    if emulation_available
        && m.env("VLLM_USE_NVFP4_CT_EMULATIONS").is_some_and(|v| v.trim() != "0" && !v.is_empty())
    {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence("workload.quantization_scheme")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .remedy(REMEDY_WEIGHT_ONLY);
    if emulation_available { outcome.remedy(REMEDY_EMULATION) } else { outcome }
}

pitfall_sdk::export_rule!(evaluate);
