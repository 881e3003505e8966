//! PCIe ACS redirects GPU peer-to-peer traffic through the root complex;
//! NCCL's P2P transport then crawls or hangs (NVIDIA/nccl issue 199).
//! `host.pcie_acs_enabled` is a proposed field (lspci -vvv ACSCtl of the
//! bridges above the GPUs).
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    let gpus: u32 = m.nvidia_gpus().map(|g| g.count().unwrap_or(1)).sum();
    if gpus < 2 {
        return Outcome::clear();
    }
    if m.env("NCCL_P2P_DISABLE").is_some_and(|v| v.trim() == "1") {
        return Outcome::clear();
    }
    // ACS only sits on PCIe paths; NVLink/NVSwitch traffic does not cross it.
    let first = match m.nvidia_pcie_only() {
        Ok(Some(gpu)) => gpu,
        Ok(None) => return Outcome::clear(),
        Err(gpu) => return Outcome::needs(gpu.field_path("interconnect").as_str()),
    };
    match m.boolean("host.pcie_acs_enabled") {
        Some(true) => Outcome::matched()
            .evidence("host.pcie_acs_enabled")
            .evidence(first.field_path("interconnect").as_str()),
        Some(false) => Outcome::clear(),
        None => Outcome::needs("host.pcie_acs_enabled"),
    }
}

pitfall_sdk::export_rule!(evaluate);
