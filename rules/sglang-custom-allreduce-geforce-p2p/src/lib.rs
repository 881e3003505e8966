//! GeForce cards have no GPU peer access; SGLang releases before the fix for
//! sglang issue 4814 set up custom all-reduce anyway and crash with TP >= 2
//! (KNOWLEDGE.md B17). vLLM and later SGLang test P2P first and fall back to
//! NCCL, so they are not matched here.
#![no_std]

use pitfall_sdk::prelude::*;

/// The first SGLang release that checks peer access before setting up its
/// custom all-reduce (sglang PR 4815, merged 2025-03-27).
const FIXED: &str = "0.4.5";

/// GeForce (consumer) cards: raw names (`NVIDIA GeForce RTX 4090`) and the
/// canonical `RTX 4090` / `RTX 3090 Ti` / `RTX 5090` (x050..x090 of the
/// 20-50 series; workstation cards are `RTX A6000`, `RTX 6000 Ada`, `RTX 4000`).
fn is_geforce(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    if lower.contains("geforce") {
        return true;
    }
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("rtx ") {
        let digits = &rest.as_bytes()[at + 4..];
        if let [a, b'0', c, b'0', tail @ ..] = digits {
            let ends = tail.first().is_none_or(|t| !t.is_ascii_digit());
            if (b'2'..=b'5').contains(a) && (b'5'..=b'9').contains(c) && ends {
                return true;
            }
        }
        rest = &rest[at + 4..];
    }
    false
}

fn evaluate(m: &Manifest) -> Outcome {
    let engine_is_sglang = m.workload().engine().as_deref() == Some("sglang");
    let package = m.package("sglang");
    if !engine_is_sglang && package.is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let tp = w.tensor_parallel_size().unwrap_or(1);
    if tp < 2 || w.disable_custom_all_reduce() == Some(true) {
        return Outcome::clear();
    }
    // An NVLink bridge (RTX 3090) gives peer access.
    let Some(gpu) = m.nvidia_gpus().find(|g| {
        g.model().is_some_and(|name| is_geforce(&name))
            && g.interconnect().as_deref() != Some("nvlink")
    }) else {
        return Outcome::clear();
    };
    let Some(version) = package.as_ref().and_then(Package::version) else {
        return Outcome::needs("packages.sglang.version");
    };
    if pep440_ge(version.as_str(), FIXED) != Some(false) {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_default();
    let mut outcome = Outcome::matched()
        .evidence(gpu.field_path("model").as_str())
        .evidence("workload.tensor_parallel_size")
        .param("gpu", &name)
        .param("version", version.as_str())
        .param_int("tp", i64::from(tp));
    if let Some(p) = &package {
        outcome = outcome.evidence(p.version_path().as_str());
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
