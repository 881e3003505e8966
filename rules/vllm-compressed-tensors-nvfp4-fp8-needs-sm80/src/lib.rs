//! compressed-tensors NVFP4 and FP8 checkpoints run weight-only below their
//! native GPUs (CompressedTensorsW4A16Fp4, CompressedTensorsW8A16Fp8), and
//! those schemes declare compute capability 8.0 up to vLLM 0.15.1 and 7.5 from
//! 0.16.0 (PR 33076; schemes/*.py read in the PyPI sdists and wheels). The
//! check runs per layer in compressed_tensors.py `_check_scheme_supported`.
#![no_std]

use pitfall_sdk::prelude::*;

const SM80: ComputeCapability = ComputeCapability::new(8, 0);
const SM75: ComputeCapability = ComputeCapability::new(7, 5);
const SCHEME: &str = "workload.quantization_scheme";
/// The release that lowers both schemes to 7.5.
const LOWERED: &str = ">=0.16.0";
/// Spellings of `workload.quantization_scheme` per family, with the first
/// release read that has the scheme (llm-compressor presets: NVFP4A16,
/// NVFP4, FP8, FP8_DYNAMIC).
const NVFP4_WEIGHT_ONLY: [&str; 3] = ["nvfp4a16", "w4a16-nvfp4", "w4a16_nvfp4"];
const NVFP4_W4A4: [&str; 4] = ["nvfp4", "nvfp4a4", "w4a4-nvfp4", "w4a4_nvfp4"];
const FP8: [&str; 7] =
    ["fp8", "fp8-dynamic", "fp8_dynamic", "w8a8-fp8", "w8a8_fp8", "w8a16-fp8", "w8a16_fp8"];

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_GPU: u32 = 1;

/// The releases that have the scheme, for a scheme this rule knows.
fn releases(scheme: &str) -> Option<&'static str> {
    if NVFP4_WEIGHT_ONLY.contains(&scheme) {
        Some(">=0.9.0")
    } else if NVFP4_W4A4.contains(&scheme) {
        Some(">=0.9.1")
    } else if FP8.contains(&scheme) {
        Some(">=0.5.4")
    } else {
        None
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let q = m.workload().quantization();
    if !matches!(q.as_deref(), Some("compressed-tensors" | "compressed_tensors")) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= SM80 {
        return Outcome::clear();
    }
    let Some(scheme) = m.text(SCHEME) else {
        return Outcome::needs(SCHEME);
    };
    let scheme = scheme.trim().to_ascii_lowercase();
    let Some(since) = releases(&scheme) else {
        return Outcome::clear();
    };
    match vllm.need_version_in(since) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    let lowered = match vllm.need_version_in(LOWERED) {
        Ok(lowered) => lowered,
        Err(outcome) => return outcome,
    };
    let min = if lowered { SM75 } else { SM80 };
    if cc >= min {
        return Outcome::clear();
    }
    let outcome = below_capability_floor(SCHEME, &vllm, &gpu, cc, min).param("scheme", &scheme);
    // 0.16.0 helps Turing; Volta needs another GPU.
    if !lowered && cc >= SM75 {
        outcome.remedy(REMEDY_UPGRADE).remedy(REMEDY_GPU)
    } else {
        outcome.remedy(REMEDY_GPU)
    }
}

pitfall_sdk::export_rule!(evaluate);
