//! SGLang's custom all-reduce crashes tensor parallelism on two GPUs
//! without CUDA peer access (KNOWLEDGE.md B17, D26; corpus report sglang-552).
//!
//! Read in the PyPI wheels of SGLang: from 0.1.17 (vLLM's custom all-reduce,
//! set up by vLLM's `initialize_model_parallel`) SGLang monkey-patches the
//! P2P check (`gpu_p2p_access_check`) to always pass, "which can be wrong for
//! some setups" (utils.py), unless `--enable-p2p-check` (0.1.19 and later);
//! 0.1.18 skipped the patch for device names containing "RTX 40" ("they do
//! not have P2P feature"). 0.1.16 does not patch. The custom all-reduce is
//! set up only for two GPUs or a fully NVLink-connected group (">2
//! PCIe-only GPUs" disables it first: vLLM 0.4.3 and SGLang 0.4.x
//! custom_all_reduce.py), so two GPUs without peer access crash at
//! start-up ("peer access is not supported between these two devices").
//! From 0.4.4.post3 the set-up is wrapped in try/except and only warns
//! ("Setup Custom allreduce failed ...", parallel_state.py; absent at
//! 0.4.4.post2, present at 0.4.4.post3, 0.4.5 and 0.5.23), falling back to
//! NCCL. `--disable-custom-all-reduce` exists from 0.2.14 (absent at 0.2.13).
//!
//! Peer access is read from the proposed `host.gpu_peer_access`; without it,
//! only GeForce RTX 40 cards are known to lack it (SGLang 0.1.18's comment,
//! sglang issue 4814).
#![no_std]

use pitfall_sdk::p2p::{self, PeerAccess};
use pitfall_sdk::prelude::*;

/// Releases that skip the P2P check and do not survive a failed set-up.
const AFFECTED: &str = ">=0.1.17,<0.4.4.post3";
/// 0.1.18 kept the real check for device names with "RTX 40".
const RTX40_EXEMPT: &str = "==0.1.18";
/// Releases with `--disable-custom-all-reduce`.
const HAS_DISABLE_FLAG: &str = ">=0.2.14";

const REMEDY_DISABLE: u32 = 0;
const REMEDY_UPGRADE: u32 = 1;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let engine_is_sglang = m.workload().engine().as_deref() == Some("sglang");
    let package = m.package("sglang");
    if !engine_is_sglang && package.is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    // Only a two-GPU group gets the custom all-reduce without full NVLink.
    if w.tensor_parallel_size() != Some(2) || w.disable_custom_all_reduce() == Some(true) {
        return Outcome::clear();
    }
    // NVLink gives the pair peer access.
    if m.nvidia_gpus().any(|g| matches!(g.interconnect().as_deref(), Some("nvlink" | "nvswitch"))) {
        return Outcome::clear();
    }
    let Some(package) = package else {
        return Outcome::needs("packages.sglang.version");
    };
    match package.version_in(AFFECTED) {
        None => return Outcome::needs(package.version_path().as_str()),
        Some(false) => return Outcome::clear(),
        Some(true) => {}
    }
    let Some(gpu) = m.nvidia_gpus().next() else {
        return Outcome::clear();
    };
    let says_rtx40 = m.text_contains(gpu.field_path("model").as_str(), "RTX 40") == Some(true);
    if says_rtx40 && package.version_in(RTX40_EXEMPT) == Some(true) {
        return Outcome::clear();
    }
    let access = p2p::peer_access(m, &gpu);
    let why = match access {
        PeerAccess::Available => return Outcome::clear(),
        PeerAccess::Unknown => return Outcome::needs(p2p::PEER_ACCESS),
        PeerAccess::Stated => "host.gpu_peer_access is false",
        PeerAccess::GeForceRtx40 => "GeForce RTX 40 cards have no P2P, as SGLang's own code says",
    };
    let name = gpu.model().unwrap_or_else(|| String::from("NVIDIA"));
    let mut outcome = Outcome::matched()
        .evidence(package.version_path().as_str())
        .evidence("workload.tensor_parallel_size")
        .param_field("version", package.version_path().as_str())
        .param("gpu", &name)
        .param("why", why);
    outcome = outcome.evidence(access.evidence(&gpu).as_str());
    if package.version_in(HAS_DISABLE_FLAG) == Some(true) {
        outcome.remedy(REMEDY_DISABLE).remedy(REMEDY_UPGRADE)
    } else {
        outcome.remedy(REMEDY_UPGRADE)
    }
}

pitfall_sdk::export_rule!(evaluate);
