//! NVSwitch systems need NVIDIA Fabric Manager, of the driver's exact
//! version, before CUDA can initialise; without it CUDA fails with 802
//! "system not yet initialized" (KNOWLEDGE.md D4; aws-samples DLAMI issue 33).
//!
//! Proposed: scan sets `accelerators[].interconnect` = `nvswitch` (NVSwitch
//! devices present, e.g. /proc/driver/nvidia-nvswitch/devices), reports the
//! branch-suffixed Fabric Manager package as `nvidia-fabricmanager`, and sets
//! `host.system_packages_listed` when it listed the OS packages.
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(gpu) = m.nvidia_gpus().find(|g| g.interconnect().as_deref() == Some("nvswitch"))
    else {
        return Outcome::clear();
    };
    // Its version against the driver's is fabricmanager-version-mismatch's.
    if m.package("nvidia-fabricmanager").is_some() {
        return Outcome::clear();
    }
    if m.boolean("host.system_packages_listed") != Some(true) {
        return Outcome::needs("host.system_packages_listed");
    }
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::needs("drivers.nvidia");
    };
    let name = gpu.model().unwrap_or_else(|| String::from("NVIDIA"));
    Outcome::matched()
        .evidence(gpu.field_path("interconnect").as_str())
        .evidence("host.system_packages_listed")
        .evidence("drivers.nvidia")
        .param("gpu", &name)
        .param_field("driver", "drivers.nvidia")
        .param_int("branch", driver.major() as i64)
}

pitfall_sdk::export_rule!(evaluate);
