//! vLLM's compressed-tensors int8 W8A8 scheme (`CompressedTensorsW8A8Int8`,
//! CUTLASS `cutlass_scaled_mm`) needs compute capability 7.5, and vLLM
//! 0.6.3 / 0.6.3.post1 fail on exactly 7.5 too (issue 9419).
//!
//! Read in the PyPI sdists:
//! - `get_min_capability` of the int8 scheme is 75 ("turing and up") in
//!   0.5.3, 0.5.4, 0.6.2, 0.6.3, 0.6.3.post1, 0.6.4, 0.7.0, 0.9.0, 0.12.0,
//!   0.20.0 and 0.34.0; `_check_scheme_supported` refuses a lower GPU per
//!   layer. 0.5.1 and 0.5.2 refuse below 75 for the whole method, 0.4.3
//!   (the first release with compressed-tensors) and 0.5.0 stop in the
//!   kernel (`TORCH_CHECK(version_num >= 75)`).
//! - 0.6.3 and 0.6.3.post1 `scaled_mm_entry.cu` run the sm75 kernel for
//!   7.x without returning, then raise "No compiled cutlass_scaled_mm for a
//!   compute capability less than CUDA device capability: 75"; 0.6.2 (an
//!   if/else chain) and 0.6.4 (PR 9487's `return`) do not. Only the
//!   symmetric path (`cutlass_scaled_mm`) lacks the return; the asymmetric
//!   one (`cutlass_scaled_mm_azp`) returns.
//!
//! GPUs below 7.0 are left to `vllm-needs-sm70`. The scheme comes from the
//! proposed `workload.quantization_scheme` (as in
//! `vllm-cutlass-int8-blackwell`).
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const SCHEME: &str = "workload.quantization_scheme";
/// Releases with compressed-tensors (0.4.3 is the first).
const WITH_COMPRESSED_TENSORS: &str = ">=0.4.3";
/// Releases whose symmetric int8 `cutlass_scaled_mm` falls through to the
/// error after running the sm75 kernel.
const TURING_BUG: &str = ">=0.6.3,<0.6.4";

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_GPU: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    match m.workload().quantization().as_deref() {
        Some("compressed-tensors") | Some("compressed_tensors") => {}
        _ => return Outcome::clear(),
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    // Ampere and newer run the scheme; below Volta vLLM does not run at all.
    if cc >= AMPERE || cc < VOLTA {
        return Outcome::clear();
    }
    let Some(int8) = m.workload().scheme_is_int8_w8a8() else {
        return Outcome::needs(SCHEME);
    };
    if !int8 {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence("workload.quantization")
        .evidence(SCHEME)
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf));
    if cc < TURING {
        // Refused by every release with compressed-tensors; the version,
        // when known, only rules out releases before the method existed.
        if vllm.version_in(WITH_COMPRESSED_TENSORS) == Some(false) {
            return Outcome::clear();
        }
        let outcome = if vllm.version_text().is_some() {
            outcome
                .evidence(vllm.version_path().as_str())
                .param_field("vllm", vllm.version_path().as_str())
        } else {
            outcome.param("vllm", "(any release with compressed-tensors)")
        };
        return outcome
            .param("why", "the int8 W8A8 scheme declares a minimum compute capability of 7.5")
            .remedy(REMEDY_GPU);
    }
    // 7.5: only 0.6.3 and 0.6.3.post1 fail.
    match vllm.need_version_in(TURING_BUG) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    outcome
        .evidence(vllm.version_path().as_str())
        .param_field("vllm", vllm.version_path().as_str())
        .param(
            "why",
            "its symmetric int8 cutlass_scaled_mm runs the Turing kernel and then raises \
             'No compiled cutlass_scaled_mm' anyway (fixed in 0.6.4)",
        )
        .remedy(REMEDY_UPGRADE)
        .remedy(REMEDY_GPU)
}

pitfall_sdk::export_rule!(evaluate);
