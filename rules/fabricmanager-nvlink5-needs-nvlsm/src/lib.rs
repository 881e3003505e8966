//! On NVLink5 boards (DGX/HGX B100, B200, B300: fourth-generation
//! NVSwitches behind a ConnectX-7 bridge) Fabric Manager needs the NVLink
//! Subnet Manager, package `nvlsm`, to program the NVSwitches. Without it
//! the GPUs never finish fabric registration and CUDA fails with 802
//! (Fabric Manager user guide; NVIDIA/gpu-driver-container installs nvlsm
//! for branch 570 and later and starts it through nvidia-fabricmanager-start.sh).
//!
//! Reads the GPU model (canonical from the hardware table), the proposed
//! `accelerators[].interconnect` and `host.system_packages_listed`.
#![no_std]

use pitfall_sdk::prelude::*;

/// The GPUs of the fourth-generation NVSwitch baseboards the guide names.
/// GB200/GB300 are left out: in an NVL72 rack NVLSM runs in NVOS on the
/// switch trays, not on the compute node.
const NVLINK5_BOARDS: &[&str] = &["B100", "B200", "B300"];

fn on_nvlink5_board(gpu: &Accelerator) -> bool {
    let model = gpu.model();
    let named = model.as_deref().is_some_and(|m| NVLINK5_BOARDS.contains(&m));
    // B100 and B200 are 10.0, B300 10.3: a capability the client states
    // outside 10.x is not one of these GPUs.
    named && gpu.compute_capability().is_none_or(|cc| cc.major == 10)
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(gpu) = m.nvidia_gpus().find(on_nvlink5_board) else {
        return Outcome::clear();
    };
    // On these boards every GPU-to-GPU NVLink runs through the NVSwitches,
    // so `nvlink` (what nvidia-smi topo shows) means the NVSwitch fabric too.
    match gpu.interconnect().as_deref() {
        Some("nvswitch" | "nvlink") => {}
        Some(_) => return Outcome::clear(),
        None => return Outcome::needs(gpu.field_path("interconnect").as_str()),
    }
    if m.package("nvlsm").is_some() {
        return Outcome::clear();
    }
    // An absent entry only means "not installed" when the OS packages were listed.
    if m.boolean("host.system_packages_listed") != Some(true) {
        return Outcome::needs("host.system_packages_listed");
    }
    let name = gpu.model().unwrap_or_else(|| String::from("B200"));
    Outcome::matched()
        .evidence(gpu.field_path("model").as_str())
        .evidence(gpu.field_path("interconnect").as_str())
        .evidence("host.system_packages_listed")
        .param("gpu", &name)
}

pitfall_sdk::export_rule!(evaluate);
