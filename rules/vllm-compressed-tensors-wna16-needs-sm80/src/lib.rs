//! compressed-tensors WNA16 (weight-only W4A16/W8A16) declares compute
//! capability 8.0 up to vLLM 0.11.2 and 7.5 from 0.12.0
//! (schemes/compressed_tensors_wNa16.py at those tags); the check runs per
//! layer in compressed_tensors.py `_check_scheme_supported`.
//!
//! Passing the scheme check is not the end on Turing: the scheme then picks
//! a kernel (kernels/mixed_precision `choose_mp_linear_kernel`). In 0.12.0
//! and 0.13.0 Marlin needs 8.0, so a Turing GPU is left with Exllama (6.0),
//! which takes symmetric weights only (uint4b8, uint8b128): asymmetric
//! (zero-point, AWQ-style) checkpoints fail with "Failed to find a kernel
//! that can implement the WNA16 linear layer" (vLLM PR 30602). From 0.14.0
//! Marlin runs from 7.5 with uint4 zero points. BitBLAS (7.0, an optional
//! package) also takes zero points, so a manifest that lists it is not
//! judged for that case.
#![no_std]

use pitfall_sdk::prelude::*;

const SM80: ComputeCapability = ComputeCapability::new(8, 0);
const SM75: ComputeCapability = ComputeCapability::new(7, 5);
const SCHEME: &str = "workload.quantization_scheme";
/// Spellings of the weight-only schemes in `workload.quantization_scheme`.
const WNA16: [&str; 3] = ["w4a16", "w8a16", "wna16"];
/// The checkpoint's `weights.symmetric` (compressed-tensors config groups).
const SYMMETRIC: &str = "workload.quantization_symmetric";
/// Releases whose scheme check admits Turing.
const SCHEME_ON_TURING: &str = ">=0.12.0";
/// Releases whose Marlin kernel runs on Turing.
const MARLIN_ON_TURING: &str = ">=0.14.0";

const REMEDY_SCHEME: u32 = 0;
const REMEDY_GPU: u32 = 1;
const REMEDY_MARLIN: u32 = 2;

const WHY_ASYMMETRIC: &str = "its weights are asymmetric (zero points), which only the Marlin kernel takes on this GPU, and Marlin needs compute capability 8.0 before vLLM 0.14.0 (Exllama, the kernel left for Turing, takes symmetric weights only)";

/// "the scheme needs compute capability 8.0", without `core::fmt`.
fn why_scheme(min: ComputeCapability) -> String {
    let mut buf = [0u8; 24];
    let mut why = String::from("the scheme needs compute capability ");
    why.push_str(min.write_to(&mut buf));
    why
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else {
        return Ok(Outcome::clear());
    };
    if m.workload().quantization().as_deref() != Some("compressed-tensors") {
        return Ok(Outcome::clear());
    }
    let (gpu, cc) = m.need_weakest_nvidia_gpu()?;
    if cc >= SM80 {
        return Ok(Outcome::clear());
    }
    let scheme = m.need(SCHEME)?.to_ascii_lowercase();
    if !WNA16.contains(&scheme.as_str()) {
        return Ok(Outcome::clear());
    }
    let lowered = vllm.need_version_in(SCHEME_ON_TURING)?;
    let min = if lowered { SM75 } else { SM80 };
    let symmetric = m.boolean(SYMMETRIC);
    // The floor the GPU is below: the scheme's, or Marlin's.
    let (floor, why, remedy) = if cc < min {
        // Turing before 0.12.0: a newer vLLM helps; which one depends on
        // the weights (0.12.0 for symmetric ones, 0.14.0 for any).
        let remedy = match (lowered, cc >= SM75, symmetric) {
            (false, true, Some(true)) => Some(REMEDY_SCHEME),
            (false, true, _) => Some(REMEDY_MARLIN),
            _ => None,
        };
        (min, why_scheme(min), remedy)
    } else {
        // Turing, 0.12.0 or later: the scheme passes; the kernel decides.
        if vllm.need_version_in(MARLIN_ON_TURING)? || m.package("bitblas").is_some() {
            return Ok(Outcome::clear());
        }
        match symmetric {
            None => return Err(Outcome::needs(SYMMETRIC)),
            Some(true) => return Ok(Outcome::clear()),
            Some(false) => (SM80, String::from(WHY_ASYMMETRIC), Some(REMEDY_MARLIN)),
        }
    };
    let mut outcome = below_capability_floor(SCHEME, &vllm, &gpu, cc, floor)
        .param("scheme", &scheme)
        .param("why", &why);
    if symmetric.is_some() {
        outcome = outcome.evidence(SYMMETRIC);
    }
    Ok(match remedy {
        Some(upgrade) => outcome.remedy(upgrade).remedy(REMEDY_GPU),
        None => outcome.remedy(REMEDY_GPU),
    })
}

pitfall_sdk::export_rule!(evaluate);
