//! torch releases before 2.3 were compiled against the NumPy 1.x C API;
//! NumPy 2 refuses such modules (KNOWLEDGE.md D5).
//!
//! Evidence, read in the released wheels: libtorch_python of torch 2.2.2
//! (macOS arm64 and Linux aarch64 wheels) imports only
//! `numpy.core._multiarray_umath` (NumPy 1.x headers); from 2.3.0 it tries
//! `numpy._core._multiarray_umath` first, which only NumPy 2 headers emit.
//! NumPy 2.0.0's `numpy/core/_multiarray_umath.py` raises "A module that was
//! compiled using NumPy 1.x cannot be run in NumPy 2.0.0" for such modules;
//! torch then warns "Failed to initialize NumPy: _ARRAY_API not found" and
//! every tensor/array conversion fails with "Numpy is not available".
#![no_std]

use pitfall_sdk::prelude::*;

/// torch releases built against NumPy 1.x (PEP 440, compared by the host).
const TORCH_NUMPY1: &str = "<2.3.0";
const NUMPY2: &str = ">=2.0.0";

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(torch), Some(numpy)) = (m.package("torch"), m.package("numpy")) else {
        return Outcome::clear();
    };
    let Some(old_torch) = torch.version_in(TORCH_NUMPY1) else {
        return Outcome::needs(torch.version_path().as_str());
    };
    if !old_torch {
        return Outcome::clear();
    }
    let Some(numpy2) = numpy.version_in(NUMPY2) else {
        return Outcome::needs(numpy.version_path().as_str());
    };
    if !numpy2 {
        return Outcome::clear();
    }
    Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(numpy.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param_field("numpy", numpy.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
