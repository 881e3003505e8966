//! NVIDIA Fabric Manager must be the driver's exact version, or it exits
//! ("fabric manager NVIDIA GPU driver interface version X don't match with
//! driver version Y") and CUDA on the NVSwitch system fails with 802
//! (gpu-driver-container issue 735, gpu-operator issue 544).
#![no_std]

use pitfall_sdk::prelude::*;

/// The release in a package version: `570.172.08` of `570.172.08-0ubuntu1`
/// or `1:570.172.08-1` (epoch and packaging revision dropped).
fn release(version: &str) -> Option<Dotted> {
    let v = version.trim();
    let v = v.split_once(':').map_or(v, |(_, rest)| rest);
    let end = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    Dotted::parse(&v[..end]).ok()
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.nvidia_gpus().any(|g| g.interconnect().as_deref() == Some("nvswitch")) {
        return Outcome::clear();
    }
    let Some(fm) = m.package("nvidia-fabricmanager") else {
        return Outcome::clear();
    };
    let Some(fm_release) = fm.version_text().as_deref().and_then(release) else {
        return Outcome::needs("packages.nvidia-fabricmanager.version");
    };
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::needs("drivers.nvidia");
    };
    if fm_release == driver {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(fm.version_path().as_str())
        .evidence("drivers.nvidia")
        .param("fm", fm_release.as_str())
        .param_field("driver", "drivers.nvidia")
}

pitfall_sdk::export_rule!(evaluate);
