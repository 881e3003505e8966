//! vLLM's fp8 quantization has a minimum compute capability that moved with
//! its releases (KNOWLEDGE.md B6), read in fp8.py `get_min_capability` at each
//! tag: 9.0 in 0.4.1, 8.9 from 0.4.2, 8.0 from 0.5.1 (FP8 Marlin, weight-only
//! on Ampere), 7.5 from 0.14.0 (FP8 Marlin on Turing). Volta is refused by
//! every release. GPUs below 7.0 are `vllm-needs-sm70`'s.
#![no_std]

use pitfall_sdk::prelude::*;

const VOLTA: ComputeCapability = ComputeCapability::new(7, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const FP8_HW: ComputeCapability = ComputeCapability::new(8, 9);

/// (releases, minimum capability): fp8.py at 0.4.1, 0.4.2, 0.5.1, 0.14.0.
const FLOORS: [(&str, ComputeCapability); 4] = [
    ("==0.4.1", ComputeCapability::new(9, 0)),
    (">=0.4.2,<0.5.1", ComputeCapability::new(8, 9)),
    (">=0.5.1,<0.14.0", ComputeCapability::new(8, 0)),
    (">=0.14.0", TURING),
];

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_FP8_GPU: u32 = 1;
const REMEDY_NO_FP8: u32 = 2;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    if m.workload().quantization().as_deref() != Some("fp8") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= FP8_HW || cc < VOLTA {
        return Outcome::clear();
    }
    // Volta: no release runs fp8 there, whatever the version.
    let min = if cc < TURING {
        TURING
    } else {
        let mut floor = None;
        for (releases, min) in FLOORS.iter() {
            match vllm.version_in(releases) {
                None => return Outcome::needs("packages.vllm.version"),
                Some(true) => floor = Some(*min),
                Some(false) => {}
            }
        }
        // Before 0.4.1 there is no fp8 method to refuse.
        match floor {
            Some(min) if cc < min => min,
            _ => return Outcome::clear(),
        }
    };
    let mut outcome = below_capability_floor("workload.quantization", &vllm, &gpu, cc, min);
    // A newer release runs fp8 weight-only from 7.5 (0.14.0) or 8.0 (0.5.1).
    if cc >= TURING {
        let fix = if cc >= ComputeCapability::new(8, 0) { "0.5.1" } else { "0.14.0" };
        outcome = outcome.param("fix", fix).remedy(REMEDY_UPGRADE);
    }
    outcome.remedy(REMEDY_FP8_GPU).remedy(REMEDY_NO_FP8)
}

pitfall_sdk::export_rule!(evaluate);
