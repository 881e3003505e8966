//! Fabric Manager on a host without NVSwitch: its service fails at start with
//! NV_WARN_NOTHING_TO_DO (cube-studio issue 29), and it is not needed.
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("nvidia-fabricmanager").is_none() {
        return Outcome::clear();
    }
    match m.nvidia_pcie_only() {
        Ok(Some(gpu)) => Outcome::matched()
            .evidence("packages.nvidia-fabricmanager.name")
            .evidence(gpu.field_path("interconnect").as_str()),
        // NVLink or NVSwitch somewhere, or no NVIDIA GPU.
        Ok(None) => Outcome::clear(),
        Err(gpu) => Outcome::needs(gpu.field_path("interconnect").as_str()),
    }
}

pitfall_sdk::export_rule!(evaluate);
