//! The driver is at or above its CUDA major's floor but older than the CUDA
//! minor release the stack runs (KNOWLEDGE.md B11, D12). Minor-version
//! compatibility starts it "with limited feature-set" (CUDA compatibility
//! guide); what fails is PTX JIT: PTX from a newer toolkit than the driver
//! is refused with cudaErrorUnsupportedPtxVersion (vllm issue 47397).
//! Below the floor is `cuda-driver-too-old`'s finding.
#![no_std]

#[path = "../../cuda-driver-too-old/src/cuda.rs"]
mod cuda;

use pitfall_sdk::prelude::*;

const REMEDY_DRIVER: u32 = 0;
const REMEDY_OLDER_CUDA: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(required) = cuda::required_cuda(m) else {
        return Outcome::clear();
    };
    let Some((floor_major, _)) = cuda::driver_floor(required.major) else {
        return Outcome::clear();
    };
    if cuda::compat_covers(m, &required) {
        return Outcome::clear();
    }
    let ga = cuda::ga_driver(required.major, required.minor);
    let driver = m.nvidia_driver();
    if driver.as_ref().is_some_and(|d| d.major() < floor_major) {
        return Outcome::clear();
    }
    // The driver's CUDA: from its version where the GA table decides, else
    // nvidia-smi's figure, else derived from the version.
    let (driver_major, driver_minor, driver_text, driver_path) = match (&driver, ga) {
        (Some(d), Some(ga_text)) => {
            let Ok(ga_version) = Dotted::parse(ga_text) else {
                return Outcome::clear();
            };
            if *d >= ga_version {
                return Outcome::clear();
            }
            let Some((major, minor)) = cuda::supported_by_driver(d) else {
                return Outcome::clear();
            };
            (major, minor, String::from(d.as_str()), "drivers.nvidia")
        }
        _ => match cuda::driver_cuda(m) {
            Some(dc) => {
                let text = match &driver {
                    Some(d) => String::from(d.as_str()),
                    None => String::from("installed"),
                };
                (dc.major, dc.minor, text, "drivers.cuda_driver")
            }
            None => match &driver {
                Some(d) if (required.major, required.minor) <= cuda::newest_known() => {
                    let Some((major, minor)) = cuda::supported_by_driver(d) else {
                        return Outcome::clear();
                    };
                    (major, minor, String::from(d.as_str()), "drivers.nvidia")
                }
                Some(_) => return Outcome::needs("drivers.cuda_driver"),
                None => return Outcome::needs("drivers.nvidia"),
            },
        },
    };
    // Another major: below is the floor rule's, above is backward compatible.
    if driver_major != required.major || driver_minor >= required.minor {
        return Outcome::clear();
    }
    let mut major = String::new();
    cuda::push_u64(&mut major, required.major);
    let driver_cuda = cuda::cuda_text(driver_major, driver_minor);
    let mut outcome = Outcome::matched()
        .evidence(driver_path)
        .evidence(&required.path)
        .param("driver", &driver_text)
        .param("driver_cuda", &driver_cuda)
        .param("cuda", &required.text)
        .param("source", &required.source)
        .param("major", &major);
    match ga {
        Some(ga_text) => {
            let mut note = String::from(" (its GA driver is ");
            note.push_str(ga_text);
            note.push(')');
            outcome = outcome
                .param("ga_note", &note)
                .param("ga", ga_text)
                .remedy(REMEDY_DRIVER)
                .remedy(REMEDY_OLDER_CUDA);
        }
        None => outcome = outcome.param("ga_note", "").remedy(REMEDY_OLDER_CUDA),
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
