//! CUDA forward compatibility works only on data-center GPUs
//! (KNOWLEDGE.md B12; NVIDIA's forward-compatibility guide: "applicable
//! only for systems with NVIDIA Data Center GPUs, select NGC Server Ready
//! SKUs of RTX cards, Jetson boards").
//!
//! A `cuda-compat` package lets a newer CUDA run on an older driver branch.
//! When the driver is below the CUDA major floor of the package's CUDA (525
//! for 12.x, 580 for 13.x: minor-version compatibility cannot help), only
//! the compat libraries can run it, and on a GeForce/TITAN card CUDA then
//! fails to initialise with cudaErrorCompatNotSupportedOnDevice (804). The
//! rule reports that case, and `cuda-driver-too-old` stays silent for it so
//! one cause gives one error. Above the floor, whether the compat libraries
//! are loaded at all depends on the container runtime (the toolkit's
//! enable-cuda-compat hook compares driver versions), so it is not judged.
#![no_std]

// CUDA facts shared with the driver-floor rule (B11), which defers to this
// one for consumer GPUs: one file, so the two can never disagree.
#[path = "../../cuda-driver-too-old/src/cuda.rs"]
mod cuda;

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(compat) = cuda::newest_compat(m) else {
        return Outcome::clear();
    };
    let Some((gpu, gpu_name)) = cuda::consumer_gpu(m) else {
        return Outcome::clear();
    };
    let Some((floor_major, floor)) = cuda::driver_floor(compat.major) else {
        return Outcome::clear();
    };
    let Some(driver) = m.nvidia_driver() else {
        return Outcome::needs("drivers.nvidia");
    };
    if driver.major() >= floor_major {
        return Outcome::clear();
    }
    let mut compat_path = String::from("packages.");
    compat_path.push_str(&compat.name);
    compat_path.push_str(".name");
    let mut cuda_text = String::new();
    cuda::push_u64(&mut cuda_text, compat.major);
    cuda_text.push('.');
    cuda::push_u64(&mut cuda_text, compat.minor);
    Outcome::matched()
        .evidence(&compat_path)
        .evidence("drivers.nvidia")
        .evidence(gpu.field_path("model").as_str())
        .param("compat", &compat.name)
        .param("cuda", &cuda_text)
        .param("driver", driver.as_str())
        .param("gpu", &gpu_name)
        .param("floor", floor)
}

pitfall_sdk::export_rule!(evaluate);
