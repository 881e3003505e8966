//! FlashInfer JIT-compiles with `$CUDA_HOME/bin/nvcc` and `$CUDA_HOME/include`.
//! With CUDA_HOME on the CUDA 13 wheels' `nvidia/cu13` tree, nvcc comes from
//! `nvidia-cuda-nvcc` and `cuda_runtime_api.h` from `nvidia-cuda-runtime`;
//! CCCL 3.x (CUDA 13's own, and the copy FlashInfer vendors from 0.6.10)
//! refuses to compile when their major.minor differ
//! (libcudacxx/include/cuda/std/__cccl/cuda_toolkit.h).
#![no_std]

use pitfall_sdk::prelude::*;

const NVCC_WHEEL: &str = "nvidia-cuda-nvcc";
const RUNTIME_WHEEL: &str = "nvidia-cuda-runtime";
/// FlashInfer compiles kernels just in time from 0.2.0.
const JIT: &str = ">=0.2.0";
/// Where the CUDA 13 wheels install their toolkit tree.
const WHEEL_TREE: [&str; 2] = ["nvidia/cu13", "nvidia\\cu13"];
const HOMES: [&str; 2] = ["env.CUDA_HOME", "env.CUDA_PATH"];

/// `13.3.33` gives (13, 3).
fn release(v: &Version) -> Option<(u64, u64)> {
    match v.release() {
        [major, minor, ..] => Some((*major, *minor)),
        _ => None,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    // The host files the older wheels' name, flashinfer, under this one.
    let Some(flashinfer) = m.package("flashinfer-python") else {
        return Outcome::clear();
    };
    match flashinfer.version_in(JIT) {
        None => return Outcome::needs(flashinfer.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    // No nvcc wheel: the compiler is a toolkit's own, with its own headers.
    let Some(nvcc) = m.package(NVCC_WHEEL) else {
        return Outcome::clear();
    };
    let Some(nvcc_release) = nvcc.version().as_ref().and_then(release) else {
        return Outcome::needs(nvcc.version_path().as_str());
    };
    let Some(runtime) = m.package(RUNTIME_WHEEL) else {
        return Outcome::needs("packages.nvidia-cuda-runtime.version");
    };
    let Some(headers_release) = runtime.version().as_ref().and_then(release) else {
        return Outcome::needs(runtime.version_path().as_str());
    };
    if nvcc_release == headers_release {
        return Outcome::clear();
    }
    // Which toolkit FlashInfer compiles with: CUDA_HOME, else CUDA_PATH
    // (flashinfer/jit/cpp_ext.py get_cuda_path); unset, it takes the nvcc on
    // PATH, which the manifest does not say.
    let mut home = None;
    for path in HOMES {
        if let Some(in_tree) = m.text_contains_any(path, &WHEEL_TREE) {
            home = Some((path, in_tree));
            break;
        }
    }
    let Some((home_path, in_tree)) = home else {
        return Outcome::needs("env.CUDA_HOME");
    };
    if !in_tree {
        return Outcome::clear();
    }
    let mut buf = [0u8; 24];
    let mut nvcc_text = String::new();
    let mut headers_text = String::new();
    for (text, (major, minor)) in
        [(&mut nvcc_text, nvcc_release), (&mut headers_text, headers_release)]
    {
        text.push_str(pitfall_sdk::text::format_int(major as i64, &mut buf));
        text.push('.');
        text.push_str(pitfall_sdk::text::format_int(minor as i64, &mut buf));
    }
    let mut pin = String::from("~=");
    pin.push_str(&headers_text);
    pin.push_str(".0");
    Outcome::matched()
        .evidence(flashinfer.version_path().as_str())
        .evidence(nvcc.version_path().as_str())
        .evidence(runtime.version_path().as_str())
        .evidence(home_path)
        .param_field("flashinfer", flashinfer.version_path().as_str())
        .param("nvcc", &nvcc_text)
        .param("headers", &headers_text)
        .param("pin", &pin)
        .param("home", home_path.trim_start_matches("env."))
}

pitfall_sdk::export_rule!(evaluate);
