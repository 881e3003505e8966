//! The NVIDIA driver is too old for the CUDA version the stack needs
//! (KNOWLEDGE.md B11).
//!
//! Since CUDA 11, minor-version compatibility lets any CUDA X.y run on the
//! first driver branch of major X (with a limited feature set, e.g. no PTX
//! JIT of newer PTX): 11.x needs 450+, 12.x needs 525+, 13.x needs 580+.
//! Below that floor nothing runs. Only that case is reported; a driver
//! older than a minor release's GA driver is a degraded, not a broken, setup.
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
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::clear();
    };
    let Some(required) = cuda::required_cuda(m) else {
        return Outcome::clear();
    };
    let Some((floor_major, floor)) = cuda::driver_floor(required.major) else {
        return Outcome::clear();
    };
    if driver.major() >= floor_major {
        return Outcome::clear();
    }
    if cuda::newest_compat(m)
        .is_some_and(|c| (c.major, c.minor) >= (required.major, required.minor))
    {
        return Outcome::clear();
    }
    if cuda::forward_compat_on_consumer(m, &driver) {
        return Outcome::clear();
    }
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
        .evidence("drivers.nvidia")
        .evidence(&required.path)
        .param("cuda", &required.text)
        .param("source", &required.source)
        .param("major", &major)
        .param("floor", floor)
        .param("ga_note", &ga_note)
        .param("driver", driver.as_str())
}

pitfall_sdk::export_rule!(evaluate);
