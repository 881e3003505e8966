//! TensorFlow's GPU runtime (XLA's stream executor, `CudnnSupport::Init`
//! in cuda_dnn.cc) refuses a cuDNN whose major differs from, or whose minor
//! is below, the one it was compiled with: "Loaded runtime CuDNN library:
//! X but source was compiled with: Y", then "DNN library initialization
//! failed" / "DNN library is not found" on the first cuDNN op. A cuDNN of
//! another major is tensorflow-gpu-cuda-libraries-mismatch's case; this
//! rule handles the same major with a lower minor.
//!
//! The cuDNN each release was compiled with was read in its PyPI wheel
//! (cp311 manylinux x86_64): the constants `CudnnSupport::Init` passes to
//! the check and prints as "compiled with" in
//! tensorflow/libtensorflow_framework.so.2 (2.16.1: libtensorflow_cc.so.2).
//! build_info.py's `cudnn_version` holds only the major ("8", "9").
//!
//! TensorFlow dlopens libcudnn.so.<major> from libtensorflow_framework.so.2,
//! whose RUNPATH lists $ORIGIN/../nvidia/cudnn/lib from 2.14 on, except
//! 2.16.1 (only nvidia/cuda_runtime/lib): there the wheel's cuDNN is not
//! what it loads, so 2.16.1 is not judged, nor are 2.12-2.13 (RUNPATH
//! $ORIGIN/ only). Every nvidia-cudnn-cu11/cu12/cu13 wheel of one cuDNN
//! major installs the same nvidia/cudnn/lib/libcudnn.so.<major>.
#![no_std]

use pitfall_sdk::cudnn;
use pitfall_sdk::prelude::*;

/// A torch whose cuDNN pin TensorFlow accepts, for torch releases whose
/// pin it refuses.
struct TorchFix {
    /// The torch releases whose pin is too old (PEP 440 specifier).
    old: &'static str,
    /// The torch release to move to, and its nvidia-cudnn-cu12 pin.
    torch: &'static str,
    cudnn: &'static str,
}

/// The cuDNN a run of TensorFlow releases was compiled with.
struct Build {
    /// The releases, as read on PyPI.
    releases: &'static [&'static str],
    /// The compiled cuDNN as major.minor.patch, and its major and minor.
    cudnn: &'static str,
    major: u32,
    minor: u32,
    /// The cuDNN wheel of the release's `and-cuda` extra and its pin (the
    /// floor from 2.20 on).
    wheel: &'static str,
    pin: &'static str,
    torch: Option<TorchFix>,
}

const TORCH_FOR_CUDNN_8_9: TorchFix = TorchFix { old: "<2.1", torch: "2.3.1", cudnn: "8.9.2.26" };
const TORCH_FOR_CUDNN_9_3: TorchFix =
    TorchFix { old: ">=2.4,<2.7", torch: "2.8.0", cudnn: "9.10.2.21" };

const BUILDS: &[Build] = &[
    Build {
        releases: &["2.14.0", "2.14.1"],
        cudnn: "8.6.0",
        major: 8,
        minor: 6,
        wheel: "nvidia-cudnn-cu11",
        pin: "8.7.0.84",
        // torch 1.13-2.0 pin nvidia-cudnn-cu11 8.5.0.96; later ones are
        // CUDA 12 builds.
        torch: None,
    },
    Build {
        releases: &["2.15.0", "2.15.0.post1", "2.15.1"],
        cudnn: "8.9.4",
        major: 8,
        minor: 9,
        wheel: "nvidia-cudnn-cu12",
        pin: "8.9.4.25",
        torch: Some(TORCH_FOR_CUDNN_8_9),
    },
    Build {
        releases: &["2.16.2", "2.17.0", "2.17.1"],
        cudnn: "8.9.6",
        major: 8,
        minor: 9,
        wheel: "nvidia-cudnn-cu12",
        pin: "8.9.7.29",
        torch: Some(TORCH_FOR_CUDNN_8_9),
    },
    Build {
        releases: &["2.18.0", "2.18.1", "2.19.0", "2.19.1", "2.20.0", "2.21.0"],
        cudnn: "9.3.0",
        major: 9,
        minor: 3,
        wheel: "nvidia-cudnn-cu12",
        pin: "9.3.0.75",
        torch: Some(TORCH_FOR_CUDNN_9_3),
    },
];

const TF: &str = "tensorflow";
const TORCH: &str = "torch";
const ARCH: &str = "host.arch";

const REMEDY_UPGRADE_CUDNN: u32 = 0;
const REMEDY_REPLACE_CUDNN: u32 = 1;
const REMEDY_TORCH_UPGRADE: u32 = 2;
const REMEDY_TORCH_SEPARATE: u32 = 3;

fn build(version: &str) -> Option<&'static Build> {
    let version = version.trim();
    BUILDS.iter().find(|b| b.releases.contains(&version))
}

fn is_pypi(p: &Package) -> bool {
    p.ecosystem().is_none_or(|e| e.trim().eq_ignore_ascii_case("pypi"))
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    // Selectors: `package:tensorflow` and `accelerator:nvidia`.
    let Some(tf) = m.package(TF) else {
        return Ok(Outcome::clear());
    };
    if m.nvidia_gpus().next().is_none() || !is_pypi(&tf) {
        return Ok(Outcome::clear());
    }
    let Some(release) = tf.version_text() else {
        return Err(Outcome::needs(tf.version_path().as_str()));
    };
    let Some(b) = build(&release) else {
        return Ok(Outcome::clear());
    };
    // The cuDNN wheels of the build's major: each writes the same
    // nvidia/cudnn/lib/libcudnn.so.<major>. One of another major is the
    // other rule's case (the library TensorFlow opens is missing).
    let wheels = cudnn::WHEELS.iter().filter_map(|n| m.package(n).filter(is_pypi).map(|p| (*n, p)));
    // No such wheel: a system, container or conda cuDNN, not visible here.
    let Some((name, wheel)) = cudnn::all_older_than(wheels, b.major, b.minor)? else {
        return Ok(Outcome::clear());
    };
    // The builds read are the Linux x86_64 wheels.
    if m.need_arch()? != "x86_64" {
        return Ok(Outcome::clear());
    }
    let mut major = String::new();
    push_u32(&mut major, b.major);
    let mut minimum = major.clone();
    minimum.push('.');
    push_u32(&mut minimum, b.minor);
    let mut next_major = String::new();
    push_u32(&mut next_major, b.major + 1);
    let mut found = Outcome::matched()
        .evidence(tf.version_path().as_str())
        .evidence(wheel.version_path().as_str())
        .evidence(ARCH)
        .param_field("tensorflow", tf.version_path().as_str())
        .param("compiled", b.cudnn)
        .param("minimum", &minimum)
        .param("major", &major)
        .param("next_major", &next_major)
        .param("cudnn", name)
        .param_field("cudnn_version", wheel.version_path().as_str())
        .param("tf_cudnn", b.wheel)
        .param("target", b.pin);
    // The old wheel is the one TensorFlow's extra names: upgrade it; a
    // wheel of another CUDA (its files in the same directory): replace it.
    found = found.remedy(if name == b.wheel { REMEDY_UPGRADE_CUDNN } else { REMEDY_REPLACE_CUDNN });
    if let Some(torch) = m.package(TORCH).filter(is_pypi) {
        found = match torch.version_text() {
            Some(_) => found.param_field("torch", torch.version_path().as_str()),
            None => found.param("torch", "(version not reported)"),
        };
        if let Some(fix) = &b.torch
            && torch.version_in(fix.old) == Some(true)
        {
            found = found
                .param("torch_fix", fix.torch)
                .param("torch_cudnn", fix.cudnn)
                .remedy(REMEDY_TORCH_UPGRADE);
        }
        found = found.remedy(REMEDY_TORCH_SEPARATE);
    }
    Ok(found)
}

fn push_u32(out: &mut String, n: u32) {
    pitfall_sdk::text::push_int(out, i64::from(n));
}

pitfall_sdk::export_rule!(evaluate);
