//! torch releases before 2.3 were compiled against the NumPy 1.x C API;
//! NumPy 2 refuses such modules (KNOWLEDGE.md D5). On Windows the PyPI
//! wheels stayed on NumPy 1.x headers until 2.4.1 (pytorch issue 131668).
//!
//! Evidence, read in the released wheels: libtorch_python of torch 2.2.2
//! (macOS arm64, Linux aarch64 and x86_64 wheels) imports only
//! `numpy.core._multiarray_umath` (NumPy 1.x headers); from 2.3.0 it tries
//! `numpy._core._multiarray_umath` first, which only NumPy 2 headers emit.
//! torch_python.dll of the win_amd64 wheels references only the 1.x path
//! in 2.2.2, 2.3.0, 2.3.1 and 2.4.0, and both from 2.4.1.
//! NumPy 2.0.0's `numpy/core/_multiarray_umath.py` raises "A module that was
//! compiled using NumPy 1.x cannot be run in NumPy 2.0.0" for such modules;
//! torch then warns "Failed to initialize NumPy: _ARRAY_API not found" and
//! every tensor/array conversion fails with "Numpy is not available".
#![no_std]

use pitfall_sdk::prelude::*;

/// torch releases built against NumPy 1.x everywhere (compared by the host).
const TORCH_NUMPY1: &str = "<2.3.0";
/// torch releases whose Windows wheels were built against NumPy 1.x.
const TORCH_NUMPY1_WINDOWS: &str = "<2.4.1";
const NUMPY2: &str = ">=2.0.0";
const OS_ID: &str = "host.os.id";

const REMEDY_PIN_NUMPY: u32 = 0;
const REMEDY_TORCH_2_3: u32 = 1;
const REMEDY_TORCH_2_4_1: u32 = 2;

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let (Some(torch), Some(numpy)) = (m.package("torch"), m.package("numpy")) else {
        return Ok(Outcome::clear());
    };
    if !torch.need_version_in(TORCH_NUMPY1_WINDOWS)? || !numpy.need_version_in(NUMPY2)? {
        return Ok(Outcome::clear());
    }
    let os = m.text(OS_ID);
    let windows = os.as_deref().map(|id| id.trim().eq_ignore_ascii_case("windows"));
    let everywhere = torch.need_version_in(TORCH_NUMPY1)?;
    if !everywhere {
        match windows {
            None => return Err(Outcome::needs(OS_ID)),
            Some(false) => return Ok(Outcome::clear()),
            Some(true) => {}
        }
    }
    let mut found = Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(numpy.version_path().as_str())
        .param_field("torch", torch.version_path().as_str())
        .param_field("numpy", numpy.version_path().as_str())
        .param("build", if everywhere { "" } else { " (its Windows wheel)" })
        .remedy(REMEDY_PIN_NUMPY);
    if windows == Some(true) {
        found = found.evidence(OS_ID);
    }
    // 2.3.0 is enough off Windows; on Windows (or not known) 2.4.1.
    Ok(if windows == Some(false) {
        found.remedy(REMEDY_TORCH_2_3)
    } else {
        found.remedy(REMEDY_TORCH_2_4_1)
    })
}

pitfall_sdk::export_rule!(evaluate);
