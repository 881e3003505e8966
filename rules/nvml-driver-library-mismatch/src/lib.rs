//! The NVIDIA kernel module and the user-space driver libraries must be the
//! same release (KNOWLEDGE.md D1). After a driver package upgrade without a
//! reboot the old module stays loaded and NVML fails with "Driver/library
//! version mismatch" (oddmario/NVIDIA-Ubuntu-Driver-Guide issue 4,
//! tinygrad/open-gpu-kernel-modules issue 47).
//!
//! `drivers.nvidia` is read as the loaded module (/proc/driver/nvidia/version,
//! what nvidia-smi reports when NVML works); `drivers.nvidia_userspace` is a
//! proposed field: the version of libnvidia-ml.so / libcuda.so on disk.
#![no_std]

use pitfall_sdk::prelude::*;

fn dotted(m: &Manifest, path: &str) -> Option<Dotted> {
    m.text(path).and_then(|t| Dotted::parse(&t).ok())
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selector `accelerator:nvidia`: nothing to say without an NVIDIA GPU.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let kernel = dotted(m, "drivers.nvidia");
    let userspace = dotted(m, "drivers.nvidia_userspace");
    let (Some(kernel), Some(userspace)) = (&kernel, &userspace) else {
        let mut outcome = Outcome::undetermined();
        if kernel.is_none() {
            outcome = outcome.missing("drivers.nvidia");
        }
        if userspace.is_none() {
            outcome = outcome.missing("drivers.nvidia_userspace");
        }
        return outcome;
    };
    if kernel == userspace {
        return Outcome::clear();
    }
    // Libraries newer than the module: the usual upgrade-without-reboot case,
    // fixed by loading the installed module. Otherwise the libraries are the
    // stale half and must be reinstalled at the module's version.
    let remedy = if userspace > kernel { 0 } else { 1 };
    Outcome::matched()
        .evidence("drivers.nvidia")
        .evidence("drivers.nvidia_userspace")
        .param_field("kernel", "drivers.nvidia")
        .param_field("userspace", "drivers.nvidia_userspace")
        .remedy(remedy)
}

pitfall_sdk::export_rule!(evaluate);
