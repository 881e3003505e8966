//! NVFP4 (ModelOpt FP4) floors per vLLM release, read in modelopt.py
//! `get_min_capability` at each tag: 10.0 in 0.8.x (modelopt_nvfp4), 8.0
//! from 0.9.0 (modelopt_fp4, FP4 Marlin weight-only below 10.0), 7.5 from
//! 0.14.0.
//!
//! Above the floor, 0.11.2 to 0.15.1 still fail below 10.0 when FlashInfer is
//! usable: ModelOptNvFp4LinearMethod picks `flashinfer-cutlass` whenever
//! `has_flashinfer()` (FlashInfer importable, and nvcc on PATH or
//! flashinfer-cubin) with no capability check (read in the sdists 0.11.2,
//! 0.12.0, 0.13.0, 0.14.0, 0.14.1 and the wheels 0.15.0, 0.15.1, each
//! requiring flashinfer-python 0.5.2, 0.5.3 or 0.6.1), and FlashInfer's
//! `mm_fp4` accepts backend `cutlass` only at capability 10.0, 10.3, 11.0,
//! 12.0 and 12.1 (flashinfer/gemm at v0.5.2, v0.5.3, v0.6.1), raising "mm_fp4
//! does not support backend 'cutlass' with capability 75". 0.16.0 picks
//! FlashInfer only at capability 10.0 and up (`select_nvfp4_linear_backend`).
#![no_std]

use pitfall_sdk::prelude::*;

const METHOD: &str = "workload.quantization";
const METHODS: [&str; 3] = ["modelopt_fp4", "modelopt_nvfp4", "nvfp4"];
/// (releases, minimum capability).
const FLOORS: [(&str, ComputeCapability); 3] = [
    (">=0.8.0,<0.9.0", BLACKWELL),
    (">=0.9.0,<0.14.0", ComputeCapability::new(8, 0)),
    (">=0.14.0", ComputeCapability::new(7, 5)),
];
/// Releases that pick FlashInfer's CUTLASS FP4 GEMM at any capability.
const FLASHINFER_ANY_CC: &str = ">=0.11.2,<0.16.0";
/// The methods ModelOptNvFp4LinearMethod serves in those releases.
const MODELOPT_FP4: &str = "modelopt_fp4";
const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);
const FLASHINFER_REASON: &str = " for its default NVFP4 GEMM: with FlashInfer usable (nvcc on PATH or flashinfer-cubin) it picks FlashInfer's CUTLASS FP4 GEMM, which FlashInfer refuses below 10.0 (mm_fp4 does not support backend 'cutlass')";
const REMEDY_UPGRADE: u32 = 0;
const REMEDY_OTHER: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    let Some(q) = m.workload().quantization() else {
        return Outcome::clear();
    };
    if !METHODS.contains(&q.as_str()) {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let mut floor = None;
    for (releases, min) in FLOORS.iter() {
        match vllm.version_in(releases) {
            None => return Outcome::needs("packages.vllm.version"),
            Some(true) => floor = Some(*min),
            Some(false) => {}
        }
    }
    let Some(min) = floor else {
        return Outcome::clear();
    };
    if cc < min {
        return floor_refuses(&vllm, &gpu, cc, min);
    }
    if cc >= BLACKWELL || q != MODELOPT_FP4 {
        return Outcome::clear();
    }
    flashinfer_refuses(m, &vllm, &gpu, cc)
}

/// Below the release's floor: refused at start-up.
fn floor_refuses(
    vllm: &Package,
    gpu: &Accelerator,
    cc: ComputeCapability,
    min: ComputeCapability,
) -> Outcome {
    let outcome = below_capability_floor(METHOD, vllm, gpu, cc, min).param("reason", "");
    // A later release accepts 8.0 (0.9.0, before FlashInfer's CUTLASS GEMM
    // became the default) or 7.5 (0.16.0: 0.14.x and 0.15.x pick FlashInfer).
    let fix = if cc >= ComputeCapability::new(8, 0) {
        Some("0.9.0")
    } else if cc >= ComputeCapability::new(7, 5) {
        Some("0.16.0")
    } else {
        None
    };
    match fix {
        Some(fix) => outcome.param("fix", fix).remedy(REMEDY_UPGRADE).remedy(REMEDY_OTHER),
        None => outcome.remedy(REMEDY_OTHER),
    }
}

/// Above the floor but below 10.0, in a release that picks FlashInfer's
/// CUTLASS FP4 GEMM whenever FlashInfer is usable.
fn flashinfer_refuses(
    m: &Manifest,
    vllm: &Package,
    gpu: &Accelerator,
    cc: ComputeCapability,
) -> Outcome {
    match vllm.version_in(FLASHINFER_ANY_CC) {
        None => return Outcome::needs("packages.vllm.version"),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    // A backend the user chose is not the default path.
    if m.env("VLLM_NVFP4_GEMM_BACKEND").is_some() {
        return Outcome::clear();
    }
    // has_flashinfer(): flashinfer-cubin, or nvcc on PATH.
    let evidence = if m.package("flashinfer-cubin").is_some() {
        "packages.flashinfer-cubin"
    } else if m
        .env("VLLM_HAS_FLASHINFER_CUBIN")
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    {
        "env.VLLM_HAS_FLASHINFER_CUBIN"
    } else {
        match m.build_tool("nvcc") {
            Some(Some(_)) => "build.tools.nvcc",
            // No nvcc and no cubins: FlashInfer is unusable, Marlin runs.
            Some(None) => return Outcome::clear(),
            None => return Outcome::needs("build.tools.nvcc"),
        }
    };
    below_capability_floor(METHOD, vllm, gpu, cc, BLACKWELL)
        .evidence(evidence)
        .param("reason", FLASHINFER_REASON)
        .param("fix", "0.16.0")
        .remedy(REMEDY_UPGRADE)
        .remedy(REMEDY_OTHER)
}

pitfall_sdk::export_rule!(evaluate);
