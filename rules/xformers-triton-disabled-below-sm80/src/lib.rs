//! xFormers turns its Triton kernels off on GPUs below compute capability
//! 8.0 (KNOWLEDGE.md D27): `_is_triton_available()` in xformers/__init__.py
//! returns False when `torch.cuda.get_device_capability("cuda") < (8, 0)`,
//! with the comment "We have many errors on V100 with recent triton
//! versions. Let's just drop support for triton kernels below A100" (commit
//! d5dcbb9e, first released in v0.0.24; unchanged at v0.0.35).
//! `XFORMERS_ENABLE_TRITON=1` overrides it. Nothing fails: operators with a
//! Triton implementation (the triton_splitK decoding kernel among them) fall
//! back or become unavailable, so this is information.
#![no_std]

use pitfall_sdk::prelude::*;

const SINCE: &str = ">=0.0.24";
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(xf) = m.package("xformers") else {
        return Outcome::clear();
    };
    if m.env("XFORMERS_ENABLE_TRITON").is_some_and(|v| v.trim() == "1") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AMPERE {
        return Outcome::clear();
    }
    match xf.version_in(SINCE) {
        None => return Outcome::needs(xf.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(xf.version_path().as_str())
        .param_field("xformers", xf.version_path().as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
}

pitfall_sdk::export_rule!(evaluate);
