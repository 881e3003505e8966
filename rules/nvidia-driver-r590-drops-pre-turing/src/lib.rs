//! R580 is the last NVIDIA driver branch for Maxwell, Pascal and Volta
//! (KNOWLEDGE.md D21; NVIDIA's Unix deprecation schedule). Newer drivers
//! ignore these GPUs ("supported through the NVIDIA 580.xx Legacy drivers",
//! NixOS/nixos-hardware issue 1828, driver 595.58.03).
#![no_std]

use pitfall_sdk::prelude::*;

/// Turing, the first architecture newer drivers keep.
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
/// The first driver branch without Maxwell, Pascal and Volta.
const FIRST_DROPPING_BRANCH: u64 = 590;

fn architecture(cc: &ComputeCapability) -> &'static str {
    match cc.major {
        5 => "Maxwell",
        6 => "Pascal",
        7 => "Volta",
        _ => "pre-Maxwell",
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::needs("drivers.nvidia");
    };
    if driver.major() < FIRST_DROPPING_BRANCH {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("drivers.nvidia")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("driver", "drivers.nvidia")
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("arch", architecture(&cc))
}

pitfall_sdk::export_rule!(evaluate);
