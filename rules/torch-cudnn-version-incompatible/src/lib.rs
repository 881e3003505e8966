//! torch refuses a cuDNN whose major differs from, or whose minor is below,
//! the one it was compiled against (torch/backends/cudnn/__init__.py, the
//! same check at every release tag from v1.12.1 to v2.14.0). The PyPI
//! wheels load cuDNN from the nvidia-cudnn-cu1x wheels, which all install
//! nvidia/cudnn/lib/libcudnn.so.<major>: an older wheel of the same major
//! (another package's pin, a cu11 wheel next to a cu12 torch) is the one
//! torch finds. Compiled-against versions: the `nvidia-cudnn-cu*` pin in
//! each release's Linux x86_64 wheel METADATA on PyPI.
#![no_std]

use pitfall_sdk::cudnn;
use pitfall_sdk::prelude::*;

/// A torch release on PyPI (Linux x86_64) and the cuDNN it pins.
struct Release {
    torch: &'static str,
    /// The local version the same build carries (its torch/version.py).
    cuda: &'static str,
    cudnn: &'static str,
    major: u32,
    minor: u32,
}

const fn r(
    torch: &'static str,
    cuda: &'static str,
    cudnn: &'static str,
    major: u32,
    minor: u32,
) -> Release {
    Release { torch, cuda, cudnn, major, minor }
}

/// Read in each wheel's METADATA (`Requires-Dist: nvidia-cudnn-cu1x==...`)
/// and torch/version.py (`__version__ = '2.4.0+cu121'`).
const RELEASES: &[Release] = &[
    r("1.13.0", "cu117", "8.5.0.96", 8, 5),
    r("1.13.1", "cu117", "8.5.0.96", 8, 5),
    r("2.0.0", "cu117", "8.5.0.96", 8, 5),
    r("2.0.1", "cu117", "8.5.0.96", 8, 5),
    r("2.1.0", "cu121", "8.9.2.26", 8, 9),
    r("2.1.1", "cu121", "8.9.2.26", 8, 9),
    r("2.1.2", "cu121", "8.9.2.26", 8, 9),
    r("2.2.0", "cu121", "8.9.2.26", 8, 9),
    r("2.2.1", "cu121", "8.9.2.26", 8, 9),
    r("2.2.2", "cu121", "8.9.2.26", 8, 9),
    r("2.3.0", "cu121", "8.9.2.26", 8, 9),
    r("2.3.1", "cu121", "8.9.2.26", 8, 9),
    r("2.4.0", "cu121", "9.1.0.70", 9, 1),
    r("2.4.1", "cu121", "9.1.0.70", 9, 1),
    r("2.5.0", "cu124", "9.1.0.70", 9, 1),
    r("2.5.1", "cu124", "9.1.0.70", 9, 1),
    r("2.6.0", "cu124", "9.1.0.70", 9, 1),
    r("2.7.0", "cu126", "9.5.1.17", 9, 5),
    r("2.7.1", "cu126", "9.5.1.17", 9, 5),
    r("2.8.0", "cu128", "9.10.2.21", 9, 10),
    r("2.9.0", "cu128", "9.10.2.21", 9, 10),
    r("2.9.1", "cu128", "9.10.2.21", 9, 10),
    r("2.10.0", "cu128", "9.10.2.21", 9, 10),
    r("2.11.0", "cu130", "9.19.0.56", 9, 19),
    r("2.12.0", "cu130", "9.20.0.48", 9, 20),
    r("2.12.1", "cu130", "9.20.0.48", 9, 20),
    r("2.13.0", "cu130", "9.20.0.48", 9, 20),
    r("2.14.0", "cu130", "9.24.0.43", 9, 24),
];

const ARCH: &str = "host.arch";
const SKIP_CHECK: &str = "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK";

const REMEDY_INSTALL_PIN: u32 = 0;
const REMEDY_REMOVE_OTHER: u32 = 1;

/// The release whose wheel this is: `2.4.0` or `2.4.0+cu121`, nothing else.
fn release(version: &str) -> Option<&'static Release> {
    let version = version.trim();
    let (public, local) = match version.split_once('+') {
        Some((p, l)) => (p, Some(l)),
        None => (version, None),
    };
    RELEASES
        .iter()
        .find(|r| r.torch == public)
        .filter(|r| local.is_none_or(|l| l.eq_ignore_ascii_case(r.cuda)))
}

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(torch) = m.package("torch") else {
        return Ok(Outcome::clear());
    };
    // A conda torch links conda's cuDNN; only the PyPI wheels are tabled.
    if torch.ecosystem().is_some_and(|e| !e.eq_ignore_ascii_case("pypi")) {
        return Ok(Outcome::clear());
    }
    let wheels: Vec<(&str, Package)> =
        cudnn::WHEELS.iter().filter_map(|n| m.package(n).map(|p| (*n, p))).collect();
    if wheels.is_empty() {
        return Ok(Outcome::clear());
    }
    let Some(torch_version) = torch.version_text() else {
        return Err(Outcome::needs(torch.version_path().as_str()));
    };
    let Some(rel) = release(&torch_version) else {
        return Ok(Outcome::clear());
    };
    // The check can be switched off from 2.0.0 on.
    if !rel.torch.starts_with("1.") && m.env(SKIP_CHECK).is_some_and(|v| v.trim() == "1") {
        return Ok(Outcome::clear());
    }
    // Only a cuDNN of torch's major has the soname torch loads
    // (libcudnn.so.8 or .9): every such wheel too old, whichever was
    // installed last torch finds an older minor than it was built with.
    let Some((name, wheel)) = cudnn::all_older_than(wheels, rel.major, rel.minor)? else {
        return Ok(Outcome::clear());
    };
    if m.need_arch()? != "x86_64" {
        return Ok(Outcome::clear());
    }
    // A wheel of another CUDA major than torch's own (cu11 next to a cu12
    // torch) does not belong to it: removing it is the fix; else install
    // the pinned one.
    let own = &rel.cuda[..4]; // "cu12" of "cu121"
    let foreign = !name.ends_with(own);
    let mut compiled = String::new();
    push_u32(&mut compiled, rel.major);
    compiled.push('.');
    push_u32(&mut compiled, rel.minor);
    Ok(Outcome::matched()
        .evidence(torch.version_path().as_str())
        .evidence(wheel.version_path().as_str())
        .evidence(ARCH)
        .param_field("torch", torch.version_path().as_str())
        .param("compiled", &compiled)
        .param("pin", rel.cudnn)
        .param("cudnn", name)
        .param_field("cudnn_version", wheel.version_path().as_str())
        .remedy(if foreign { REMEDY_REMOVE_OTHER } else { REMEDY_INSTALL_PIN }))
}

fn push_u32(out: &mut String, n: u32) {
    pitfall_sdk::text::push_int(out, i64::from(n));
}

pitfall_sdk::export_rule!(evaluate);
