//! The NVIDIA driver is below the first branch of the stack's CUDA major
//! (KNOWLEDGE.md B11): CUDA does not initialise (PyTorch: "The NVIDIA
//! driver on your system is too old", Fooocus issue 1313).
//!
//! Minor-version compatibility (CUDA compatibility guide, Table 1) lets any
//! CUDA X.y run on the first driver branch of major X: 11.x on 450.80.02+,
//! 12.x on 525.60.13+, 13.x on 580.65.06+. Only a driver below that floor is
//! reported here; one above it but older than X.y's own GA driver starts
//! with limits (no JIT of newer PTX), which `cuda-driver-older-than-runtime`
//! reports.
//!
//! A `cuda-compat` package that provides the needed CUDA (forward
//! compatibility) makes an older driver work on data-center GPUs, so the
//! rule stays silent then. On consumer GPUs forward compatibility fails
//! with its own error; that is `cuda-forward-compat-datacenter-only`'s finding.
#![no_std]

mod cuda;

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(required) = cuda::required_cuda(m) else {
        return Outcome::clear();
    };
    let Some((floor_major, floor)) = cuda::driver_floor(required.major) else {
        return Outcome::clear();
    };
    if cuda::compat_covers(m, &required) {
        return Outcome::clear();
    }
    // The driver: its version, else the CUDA version nvidia-smi prints.
    let (driver_text, driver_path) = if let Some(driver) = m.nvidia_driver() {
        if driver.major() >= floor_major || cuda::forward_compat_on_consumer(m, &driver) {
            return Outcome::clear();
        }
        (String::from(driver.as_str()), "drivers.nvidia")
    } else if let Some(dc) = cuda::driver_cuda(m) {
        // A driver whose own CUDA has the stack's major is on a branch at
        // or above the floor (the first GA of each major is the floor).
        if dc.major >= required.major {
            return Outcome::clear();
        }
        let mut text = String::from("one for CUDA ");
        text.push_str(&dc.text);
        text.push_str(" (drivers.cuda_driver)");
        (text, "drivers.cuda_driver")
    } else {
        return Outcome::needs("drivers.nvidia");
    };
    let ga_note = match cuda::ga_driver(required.major, required.minor) {
        Some(ga) => {
            let mut note = String::from(" (CUDA ");
            note.push_str(&required.text);
            note.push_str(" itself shipped with driver ");
            note.push_str(ga);
            note.push(')');
            note
        }
        None => String::new(),
    };
    let mut major = String::new();
    cuda::push_u64(&mut major, required.major);
    Outcome::matched()
        .evidence(driver_path)
        .evidence(&required.path)
        .param("cuda", &required.text)
        .param("source", &required.source)
        .param("major", &major)
        .param("floor", floor)
        .param("ga_note", &ga_note)
        .param("driver", &driver_text)
}

pitfall_sdk::export_rule!(evaluate);
