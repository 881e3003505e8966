//! NVIDIA Container Toolkit 1.17.4 stopped mounting CUDA compat libraries from
//! the container by default; 1.17.5 restored forward compatibility with the
//! enable-cuda-compat hook, and 1.17.7 for the hook-only path (Docker's
//! --gpus) (toolkit release notes; nvidia-container-toolkit issue 934).
//! Matters only when the image's CUDA major is newer than the driver's, which
//! is exactly when forward compatibility is needed.
#![no_std]

use pitfall_sdk::prelude::*;

/// The newest CUDA major a driver branch supports without forward
/// compatibility (CUDA compatibility guide: 13.x >= 580, 12.x >= 525, 11.x >= 450).
fn driver_cuda_major(m: &Manifest) -> Option<u64> {
    let given =
        m.text("drivers.cuda_driver").and_then(|t| Dotted::parse(&t).ok()).map(|d| d.major());
    let derived = m.nvidia_driver().and_then(|d| match d.major() {
        580.. => Some(13),
        525.. => Some(12),
        450.. => Some(11),
        _ => None,
    });
    match (given, derived) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The image's CUDA: the first `cuda>=X` of NVIDIA_REQUIRE_CUDA, else CUDA_VERSION.
fn image_cuda(m: &Manifest) -> Option<Dotted> {
    let from_require = m.env("NVIDIA_REQUIRE_CUDA").and_then(|require| {
        require
            .split(|c: char| c.is_whitespace() || c == ',')
            .find_map(|cond| cond.trim().strip_prefix("cuda>="))
            .and_then(|v| Dotted::parse(v).ok())
    });
    from_require.or_else(|| m.env("CUDA_VERSION").and_then(|v| Dotted::parse(&v).ok()))
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors `container`, `accelerator:nvidia` and the toolkit range.
    if m.image().is_none() || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(toolkit) = m.package("nvidia-container-toolkit") else {
        return Outcome::clear();
    };
    let Some(image) = image_cuda(m) else {
        return Outcome::clear();
    };
    let Some(driver_major) = driver_cuda_major(m) else {
        return Outcome::needs("drivers.cuda_driver");
    };
    if image.major() <= driver_major {
        return Outcome::clear();
    }
    // Forward compatibility is for data-center GPUs; GeForce cards fail anyway
    // (cuda-forward-compat-datacenter-only).
    if m.nvidia_gpus()
        .any(|g| g.model().is_some_and(|n| n.to_ascii_lowercase().contains("geforce")))
    {
        return Outcome::clear();
    }
    let request = m.text("container.gpu_request").map(|t| t.trim().to_ascii_lowercase());
    let gpus_flag = request.as_deref() == Some("gpus_flag");
    let (range, when) = if gpus_flag {
        (">=1.17.4,<1.17.7", "with --gpus (the hook path was fixed in 1.17.7)")
    } else {
        (">=1.17.4,<1.17.5", "(1.17.4 stopped mounting them by default)")
    };
    match toolkit.version_in(range) {
        Some(true) => {}
        Some(false) => {
            // 1.17.5 and 1.17.6 are affected only on the --gpus path.
            if request.is_none() && toolkit.version_in(">=1.17.5,<1.17.7") == Some(true) {
                return Outcome::needs("container.gpu_request");
            }
            return Outcome::clear();
        }
        None => return Outcome::needs("packages.nvidia-container-toolkit.version"),
    }
    let mut image_text = String::new();
    pitfall_sdk::text::push_int(&mut image_text, image.major() as i64);
    image_text.push('.');
    pitfall_sdk::text::push_int(&mut image_text, image.minor() as i64);
    let mut image_major = String::new();
    pitfall_sdk::text::push_int(&mut image_major, image.major() as i64);
    // Drivers seen supporting the major natively: 580.126.09 reports CUDA 13.0
    // (NVIDIA/nvbandwidth issue 61); 550.54.14 is CUDA 12.4's GA driver.
    let driver_to = if image.major() >= 13 { "580.126.09" } else { "550.54.14" };
    let mut outcome = Outcome::matched()
        .evidence(toolkit.version_path().as_str())
        .param_field("version", toolkit.version_path().as_str())
        .param("image_cuda", &image_text)
        .param("image_major", &image_major)
        .param_int("driver_major", driver_major as i64)
        .param("when", when)
        .param("driver_to", driver_to);
    for path in [
        "env.NVIDIA_REQUIRE_CUDA",
        "env.CUDA_VERSION",
        "drivers.cuda_driver",
        "drivers.nvidia",
        "container.gpu_request",
    ] {
        if m.has(path) {
            outcome = outcome.evidence(path);
        }
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
