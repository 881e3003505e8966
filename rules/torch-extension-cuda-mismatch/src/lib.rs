//! A CUDA extension built with torch's `BuildExtension`
//! (`torch.utils.cpp_extension`, a setup.py with `CUDAExtension`: flash-attn,
//! apex, xformers, DeepSpeed's prebuilt ops, causal-conv1d, detectron2)
//! first compares the nvcc of CUDA_HOME with the CUDA torch was built with
//! (`_check_cuda_version`, called from `build_extensions` when a source is
//! `.cu` and the build is not a ROCm one). Read in the PyPI wheels' own
//! torch/utils/cpp_extension.py:
//! - 1.9.1 and older have no such check;
//! - from 1.10.0 a different major version raises RuntimeError (`The
//!   detected CUDA version (X) mismatches the version that was used to
//!   compile` / `PyTorch (Y). Please make sure to use the same CUDA
//!   versions.`, two lines) and a different minor version only warns;
//! - from 2.8.0 the RuntimeError is raised with its format string and the
//!   two versions as separate arguments, so it prints as a tuple:
//!   `('The detected CUDA version (%s) mismatches the version that was used
//!   to compilePyTorch (%s). ...', '12.4', '13.0')`; unchanged to 2.15.0.
//!
//! The check is skipped when nvcc's `--version` has no `release X.Y`, and
//! (from 2.2.0) when torch has no CUDA. vLLM builds with CMake through its
//! own `build_ext` (no `.cu` source in its extensions), and torch itself is
//! not built by BuildExtension, so neither is judged.
#![no_std]

use pitfall_sdk::prelude::*;
use pitfall_sdk::text::push_int;
use pitfall_sdk::torch_cuda::{TORCH_CUDA, TorchCuda, push_cuda, torch_cuda};
use pitfall_sdk::view::package_key;

const NVCC: &str = "build.tools.nvcc";
const FROM_SOURCE: &str = "build.from_source";
/// Releases whose BuildExtension raises on a CUDA major mismatch.
const RAISES: &str = ">=1.10";
/// Releases that raise it with the unformatted tuple.
const TUPLE: &str = ">=2.8";
/// Source builds that do not go through torch's BuildExtension.
const NOT_BUILD_EXTENSION: [&str; 2] = ["torch", "vllm"];

const REMEDY_NVCC: u32 = 0;
const REMEDY_TORCH: u32 = 1;

/// The torch builds whose CUDA major is `major`, as a specifier over
/// PyPI's default wheels (release table: 2.0 is CUDA 11.7, 2.1 to 2.10
/// CUDA 12.x, 2.11 and later CUDA 13.x).
fn torch_for_major(major: u64) -> Option<&'static str> {
    match major {
        11 => Some(">=2.0,<2.1"),
        12 => Some(">=2.1,<2.11"),
        13 => Some(">=2.11"),
        _ => None,
    }
}

/// The first package built from source through torch's BuildExtension.
fn extension_build(m: &Manifest) -> Option<String> {
    let n = m.len(FROM_SOURCE).unwrap_or(0);
    (0..n)
        .filter_map(|i| m.text(Path::new(FROM_SOURCE).index(i).as_str()))
        .find(|p| !NOT_BUILD_EXTENSION.contains(&package_key(p).as_str()))
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    let Some(package) = extension_build(m) else {
        return Outcome::clear();
    };
    // Read without naming it as missing yet (`need_tool_version` would):
    // `Err` when it is not stated or does not parse.
    let nvcc = match m.build_tool("nvcc") {
        Some(None) => Ok(None),
        Some(Some(text)) => Dotted::parse(&text).map(Some).map_err(|_| ()),
        None => Err(()),
    };
    let Some(version) = torch.version() else {
        let path = torch.version_path();
        if torch.version_text().is_some() {
            return Outcome::unreadable(path.as_str());
        }
        let outcome = Outcome::undetermined().missing(path.as_str());
        return if nvcc.is_err() { outcome.missing(NVCC) } else { outcome };
    };
    match torch.need_version_in(RAISES) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(undetermined) => return undetermined,
    }
    let (cuda, from_label) = match torch_cuda(m, Some(&version)) {
        TorchCuda::Known(cuda, from_label) => (Some(cuda), from_label),
        TorchCuda::None => return Outcome::clear(),
        TorchCuda::Unknown => (None, false),
    };
    let nvcc = match nvcc {
        // Listed as absent: torch then stops at "CUDA was not found".
        Ok(None) => return Outcome::clear(),
        Ok(Some(nvcc)) => Some(nvcc),
        Err(_) => None,
    };
    let (Some(cuda), Some(nvcc)) = (cuda, nvcc.as_ref()) else {
        let mut outcome = Outcome::undetermined();
        if cuda.is_none() {
            outcome = outcome.missing(TORCH_CUDA);
        }
        if nvcc.is_none() {
            outcome = outcome.missing(NVCC);
        }
        return outcome;
    };
    if nvcc.major() == cuda.0 {
        // A minor difference only warns ("Most likely this shouldn't be a
        // problem").
        return Outcome::clear();
    }
    let tuple = match torch.need_version_in(TUPLE) {
        Ok(answer) => answer,
        Err(undetermined) => return undetermined,
    };
    let mut detected = String::with_capacity(8);
    push_cuda(&mut detected, (nvcc.major(), nvcc.minor()));
    let mut built = String::with_capacity(8);
    push_cuda(&mut built, cuda);
    let mut error = String::with_capacity(200);
    if tuple {
        error.push_str("RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compilePyTorch (%s). Please make sure to use the same CUDA versions.', '");
        error.push_str(&detected);
        error.push_str("', '");
        error.push_str(&built);
        error.push_str("')");
    } else {
        error.push_str("RuntimeError: The detected CUDA version (");
        error.push_str(&detected);
        error.push_str(") mismatches the version that was used to compile PyTorch (");
        error.push_str(&built);
        error.push(')');
    }
    let mut outcome = Outcome::matched()
        .evidence(FROM_SOURCE)
        .evidence(NVCC)
        .evidence(torch.version_path().as_str());
    if !from_label {
        outcome = outcome.evidence(TORCH_CUDA);
    }
    let mut nvcc_major = String::with_capacity(4);
    push_int(&mut nvcc_major, nvcc.major() as i64);
    outcome = outcome
        .param("package", &package)
        .param("nvcc", nvcc.as_str())
        .param("detected", &detected)
        .param_field("torch", torch.version_path().as_str())
        .param("torch_cuda", &built)
        .param("nvcc_major", &nvcc_major)
        .param("error", &error)
        .remedy(REMEDY_NVCC);
    let Some(spec) = torch_for_major(nvcc.major()) else {
        return outcome.param("fix", "");
    };
    // A release whose PyPI wheel already has the nvcc's major (this one is
    // a `+cuXYZ` variant or another index's build): that wheel.
    let same_release = version.without_local();
    let fix = if torch.version_in(spec) == Some(true) { same_release.as_str() } else { spec };
    outcome.param("fix", fix).remedy(REMEDY_TORCH)
}

pitfall_sdk::export_rule!(evaluate);
