//! vLLM on native Windows (and macOS before 0.7.0). Read in the sdists of
//! 0.2.7, 0.3.3, 0.4.1 to 0.5.4, 0.5.5, 0.6.0, 0.6.3, 0.6.6, 0.7.0, 0.7.3,
//! 0.8.0, 0.8.5, 0.9.2 and 0.34.0 (setup.py, vllm/platforms), and in PyPI's
//! simple index for vllm (manylinux wheels only, no win_amd64 or macOS):
//! - up to 0.3.3: no platform check; setup.py compiles CUDA extensions and
//!   raises "Cannot find CUDA_HOME" without a CUDA toolkit (0.4.0 and
//!   0.4.0.post1 have no sdist at all);
//! - 0.4.1 to 0.5.4: `assert sys.platform.startswith("linux"), "vLLM only
//!   supports Linux platform (including WSL)."` stops the build;
//! - from 0.5.5: a warning, then `VLLM_TARGET_DEVICE = "empty"`: the install
//!   completes without compiled ops, and with an NVIDIA GPU the CUDA
//!   platform imports `vllm._C` (`vllm._C_stable_libtorch` in 0.34.0),
//!   which is not there; without one, "Failed to infer device type".
//! - macOS: the same before 0.7.0; from 0.7.0 setup.py builds the CPU
//!   target on macOS (experimental Apple silicon support): not judged.
#![no_std]

use pitfall_sdk::prelude::*;

const OS_ID: &str = "host.os.id";

const OLD: &str = "PyPI has no Windows wheel and releases before 0.4.1 have no platform check, so pip compiles vLLM's CUDA extensions from the sdist, which fails on Windows (vLLM issue 3425; 0.4.0 has no sdist at all)";
const REFUSED: &str = "PyPI has no wheel for it, and setup.py refuses the source build: 'AssertionError: vLLM only supports Linux platform (including WSL).'";
const EMPTY: &str = "PyPI has no wheel for it, and setup.py builds the 'empty' target on a non-Linux platform ('vLLM only supports Linux platform (including WSL)... so vLLM may not be able to run correctly'), so pip install completes without vLLM's compiled ops and vLLM fails when imported or served: 'ModuleNotFoundError: No module named 'vllm._C'' with an NVIDIA GPU, 'Failed to infer device type' without";
const ANY: &str = "no vLLM release runs natively on it: PyPI has Linux wheels only, and setup.py refuses the source build (0.4.1 to 0.5.4) or builds vLLM without its compiled ops (from 0.5.5)";
const MAC_OLD: &str = "PyPI has no macOS wheel and releases before 0.4.1 have no platform check, so pip compiles vLLM's CUDA extensions from the sdist: 'RuntimeError: Cannot find CUDA_HOME. CUDA must be available to build the package.'";

const REMEDY_LINUX: u32 = 0;
const REMEDY_MAC_CPU: u32 = 1;

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else {
        return Ok(Outcome::clear());
    };
    let os = m.need(OS_ID)?;
    let os = os.trim();
    let windows = os.eq_ignore_ascii_case("windows");
    let mac = os.eq_ignore_ascii_case("macos") || os.eq_ignore_ascii_case("darwin");
    if !windows && !mac {
        return Ok(Outcome::clear());
    }
    let version = vllm.version_path();
    let stated = vllm.version_text().is_some();
    if mac && !vllm.need_version_in("<0.7.0")? {
        // From 0.7.0 setup.py builds the CPU target on macOS.
        return Ok(Outcome::clear());
    }
    let why = if !stated {
        ANY
    } else if vllm.need_version_in("<0.4.1")? {
        if windows { OLD } else { MAC_OLD }
    } else if vllm.need_version_in("<0.5.5")? {
        REFUSED
    } else {
        EMPTY
    };
    let found = Outcome::matched().evidence(OS_ID).param("why", why);
    let found = if stated {
        found.evidence(version.as_str()).param_field("vllm", version.as_str())
    } else {
        found.param("vllm", "(any release)")
    };
    let found = found.param("os", if windows { "native Windows" } else { "macOS" });
    Ok(if windows {
        found.remedy(REMEDY_LINUX)
    } else {
        found.remedy(REMEDY_LINUX).remedy(REMEDY_MAC_CPU)
    })
}

pitfall_sdk::export_rule!(evaluate);
