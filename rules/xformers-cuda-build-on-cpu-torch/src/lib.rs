//! xFormers' wheels (pip wheels from 0.0.16, CHANGELOG.md at v0.0.16) are
//! CUDA builds: the `_C.so` of the 0.0.34 and 0.0.35 wheels needs
//! libc10_cuda.so, libtorch_cuda.so and libcudart.so.12, and their
//! cpp_lib.json says `"torch": "2.10.0+cu128"`. PyTorch's CPU-only build
//! (local label `+cpu`) has no CUDA libraries, so the extension does not
//! load and xformers/_cpp_lib.py (v0.0.16 to v0.0.35) warns "xFormers
//! can't load C++/CUDA extensions. xFormers was built for: PyTorch X with
//! CUDA N (you have Y+cpu)"; its CUDA operators are then unavailable.
//! Reports: xformers issues 982 and 971, open-mmlab/PIA issue 30,
//! invoke-ai/InvokeAI issues 4788 and 5065.
//!
//! The xFormers release torch must match is `xformers-built-for-other-torch`'s.
#![no_std]

use pitfall_sdk::prelude::*;

/// xFormers releases published as (CUDA) wheels.
const WHEELS: &str = ">=0.0.16";

fn evaluate(m: &Manifest) -> Result<Outcome, Outcome> {
    let (Some(xf), Some(torch)) = (m.package("xformers"), m.package("torch")) else {
        return Ok(Outcome::clear());
    };
    // Built here against this torch: a CPU build of xFormers, which loads.
    if m.built_from_source("xformers") {
        return Ok(Outcome::clear());
    }
    let torch_path = torch.version_path();
    // Asked, not read: one answer serves every CUDA build of torch.
    let Some(cpu) = m.text_contains(torch_path.as_str(), "+cpu") else {
        return Err(Outcome::needs(torch_path.as_str()));
    };
    if !cpu || !xf.need_version_in(WHEELS)? {
        return Ok(Outcome::clear());
    }
    let Some(installed) = torch.version() else {
        return Err(Outcome::unreadable(torch_path.as_str()));
    };
    let public = installed.without_local();
    // The CUDA build to install: xFormers' own CUDA when the manifest has
    // it (`12.1` → `+cu121`), else the release as PyPI publishes it.
    let mut fix = String::from(public.as_str());
    if let Some(cuda) = m.text("packages.xformers.cuda").and_then(|t| Dotted::parse(&t).ok()) {
        fix.push_str("+cu");
        pitfall_sdk::text::push_int(&mut fix, cuda.major() as i64);
        pitfall_sdk::text::push_int(&mut fix, cuda.minor() as i64);
    }
    Ok(Outcome::matched()
        .evidence(torch_path.as_str())
        .evidence(xf.version_path().as_str())
        .param_field("torch", torch_path.as_str())
        .param_field("xformers", xf.version_path().as_str())
        .param("public", public.as_str())
        .param("fix", &fix))
}

pitfall_sdk::export_rule!(evaluate);
