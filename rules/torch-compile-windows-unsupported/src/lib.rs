//! torch.compile on native Windows. Read in the win_amd64 PyPI wheels of
//! every release from 2.0.0 to 2.9.0 (torch/_dynamo/eval_frame.py,
//! torch/_dynamo/backends/inductor.py, torch/__init__.py,
//! torch/_inductor/scheduler.py and exc.py):
//! - 2.0.0 to 2.2.1: `check_if_dynamo_supported()` raises "Windows not yet
//!   supported for torch.compile" on `sys.platform == "win32"`, called by
//!   `optimize` before it looks at `disable`, so every torch.compile call
//!   raises, whatever the backend and even with TORCH_COMPILE_DISABLE=1;
//! - 2.2.2 to 2.4.1: the check is moved to `check_if_inductor_supported`
//!   and the registered `inductor` backend ("Windows not yet supported for
//!   inductor"), which torch.compile does not go through (it wraps
//!   `compile_fx` directly): compiling CUDA graphs then needs Triton;
//! - 2.5.0 on: no Windows check; Inductor's scheduler raises "Cannot find
//!   a working triton installation" (RuntimeError; `TritonMissing` from
//!   2.7) for a GPU graph when Triton cannot be imported.
//!
//! torch's METADATA requires triton only on `platform_system == "Linux"`
//! and PyPI has no Windows triton; the community `triton-windows` package
//! provides the `triton` module. PyPI's win_amd64 torch wheels are CPU
//! builds (version.py `2.9.0+cpu`, no CUDA DLLs), so from 2.2.2 only a
//! `+cu` build with an NVIDIA GPU of compute capability 7.0 or more is
//! judged (below 7.0 is `triton-torch-compile-below-sm70`'s case). Whether
//! the program calls torch.compile is not in the manifest: a warning.
#![no_std]

use pitfall_sdk::prelude::*;

const OS_ID: &str = "host.os.id";
const DISABLE: &str = "TORCH_COMPILE_DISABLE";

/// The triton-windows to install beside a torch of this range: the Triton
/// release that torch pins on Linux (its METADATA: 2.5 triton 3.1.0, 2.6
/// 3.2.0, 2.7 3.3.0, 2.8 3.4.0, 2.9 3.5.0, 2.10 and 2.11 3.6.0, 2.12 3.7.0,
/// 2.13 3.7.1, 2.14 ~=3.8.0, 2.15 ~=3.9.0).
const TRITON: [(&str, &str); 9] = [
    ("<2.6.0", "<3.2"),
    ("<2.7.0", "<3.3"),
    ("<2.8.0", "<3.4"),
    ("<2.9.0", "<3.5"),
    ("<2.10.0", "<3.6"),
    ("<2.12.0", "<3.7"),
    ("<2.14.0", "<3.8"),
    ("<2.15.0", "<3.9"),
    (">=2.15.0", ">=3.9"),
];

const REFUSED: &str = "every torch.compile call raises 'RuntimeError: Windows not yet supported for torch.compile' (TorchDynamo refuses Windows before torch 2.2.2, and Inductor runs on Windows from 2.5)";
const NO_TRITON: &str = "Inductor generates Triton kernels for CUDA graphs and no triton package is installed (torch requires triton only on Linux, and PyPI has no Windows triton), so the first compiled call raises 'Cannot find a working triton installation' (TritonMissing from torch 2.7)";

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(torch) = m.package("torch") else {
        return Ok(Outcome::clear());
    };
    let version = torch.version_path();
    // torch.compile exists from 2.0.0.
    if !torch.need_version_in(">=2.0.0")? {
        return Ok(Outcome::clear());
    }
    let refused = torch.need_version_in("<2.2.2")?;
    let cuda_build = torch.version_text().is_some_and(|v| v.contains("+cu"));
    if !refused && !cuda_build {
        // A CPU build compiles with Inductor's C++ backend: not judged.
        return Ok(Outcome::clear());
    }
    let os = m.need(OS_ID)?;
    if !os.trim().eq_ignore_ascii_case("windows") {
        return Ok(Outcome::clear());
    }
    let found = Outcome::matched()
        .evidence(OS_ID)
        .evidence(version.as_str())
        .param_field("torch", version.as_str());
    if refused {
        return Ok(found
            .param("why", REFUSED)
            .param("fix", "2.5.0")
            .param("triton", "<3.2")
            .remedy(0));
    }
    if m.env(DISABLE).is_some_and(|v| v.trim() == "1")
        || m.package("triton-windows").is_some()
        || m.package("triton").is_some()
    {
        return Ok(Outcome::clear());
    }
    let seven = ComputeCapability::new(7, 0);
    let Some((gpu, _)) = m.need_nvidia_gpu_where(|cc| cc >= seven)? else {
        return Ok(Outcome::clear());
    };
    let found =
        found.evidence(gpu.field_path("compute_capability").as_str()).param("why", NO_TRITON);
    let found = if torch.need_version_in("<2.5.0")? {
        found.param("fix", "2.5.0")
    } else {
        found.param_field("fix", version.as_str())
    };
    let triton = TRITON
        .iter()
        .find(|(range, _)| torch.version_in(range) == Some(true))
        .map_or(">=3.9", |(_, spec)| spec);
    Ok(found.param("triton", triton))
}

pitfall_sdk::export_rule!(evaluate);
