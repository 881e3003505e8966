//! TensorRT-LLM engines built with the custom all-reduce plugin need CUDA
//! peer access between the tensor-parallel GPUs (TensorRT-LLM issues 1588,
//! 1499, 1625, 1498, 1374).
//!
//! Read in the source: up to 0.7.1 the runtime enables peer access before it
//! sets up the custom all-reduce workspace and fails when the pair has none
//! (C++ `setPeerAccess`: `TLLM_CUDA_CHECK(error)`; Python `set_peer_access`:
//! "Can't enable access between nodes"), and `--use_custom_all_reduce` is an
//! opt-in `store_true` flag of `trtllm-build` and the examples' `build.py`
//! (0.5.0, 0.6.0, 0.7.0, 0.7.1). From 0.8.0 `trtllm-build` takes the flag as
//! `enable`/`disable` with the default of `PluginConfig`, `True` (0.9.0;
//! 0.8.0 from the matching `PluginConfig` version). The 0.9.0 AllReduce
//! plugin never asks whether the GPUs have peer access; the 0.10.0 one does
//! and falls back to NCCL. 0.12.0 removed the flag (release notes).
//!
//! Peer access is read from the proposed `host.gpu_peer_access` (as in
//! sglang-custom-allreduce-geforce-p2p); without it, only GeForce RTX 40
//! cards are known to lack it.
#![no_std]

use pitfall_sdk::p2p::{self, PeerAccess};
use pitfall_sdk::prelude::*;

/// Releases whose `trtllm-build` enables the custom all-reduce by default
/// and whose plugin does not fall back to NCCL without peer access.
const DEFAULT_ON: &str = ">=0.8.0,<0.10.0";
/// Releases where the custom all-reduce is opt-in (`store_true`).
const OPT_IN: &str = "<0.8.0";
const TP: &str = "workload.tensor_parallel_size";
const DISABLED: &str = "workload.disable_custom_all_reduce";

const REMEDY_REBUILD: u32 = 0;
const REMEDY_UPGRADE: u32 = 1;

fn is_trtllm_engine(engine: &str) -> bool {
    ["tensorrt-llm", "tensorrt_llm", "trtllm", "trt-llm"]
        .iter()
        .any(|e| engine.eq_ignore_ascii_case(e))
}

fn evaluate(m: &Manifest) -> Outcome {
    let engine_is_trtllm = m.workload().engine().is_some_and(|e| is_trtllm_engine(e.trim()));
    let package = m.package("tensorrt-llm");
    if !engine_is_trtllm && package.is_none() {
        return Outcome::clear();
    }
    let Some(gpu) = m.nvidia_gpus().next() else {
        return Outcome::clear();
    };
    let w = m.workload();
    let tp = match w.tensor_parallel_size() {
        Some(tp) if tp <= 1 => return Outcome::clear(),
        Some(tp) => tp,
        None => return Outcome::needs(TP),
    };
    let disabled = w.disable_custom_all_reduce();
    if disabled == Some(true) {
        return Outcome::clear();
    }
    // NVLink gives the GPUs peer access.
    if m.nvidia_gpus().any(|g| matches!(g.interconnect().as_deref(), Some("nvlink" | "nvswitch"))) {
        return Outcome::clear();
    }
    let Some(package) = package else {
        return Outcome::needs("packages.tensorrt-llm.version");
    };
    let how = match package.version_answer(OPT_IN) {
        Err(why) => return why.outcome(package.version_path().as_str()),
        // Opt-in: only an engine stated to use it is at risk.
        Ok(true) if disabled == Some(false) => "workload.disable_custom_all_reduce is false",
        Ok(true) => return Outcome::clear(),
        Ok(false) => match package.version_in(DEFAULT_ON) {
            Some(true) if disabled == Some(false) => "workload.disable_custom_all_reduce is false",
            Some(true) => "trtllm-build's default, --use_custom_all_reduce enable",
            _ => return Outcome::clear(),
        },
    };
    let access = p2p::peer_access(m, &gpu);
    let why = match access {
        PeerAccess::Available => return Outcome::clear(),
        PeerAccess::Unknown => return Outcome::needs(p2p::PEER_ACCESS),
        PeerAccess::Stated => "host.gpu_peer_access is false",
        PeerAccess::GeForceRtx40 => "GeForce RTX 40 cards have no P2P",
    };
    let name = gpu.model().unwrap_or_else(|| String::from("NVIDIA"));
    let mut outcome = Outcome::matched()
        .evidence(package.version_path().as_str())
        .evidence(TP)
        .param_field("version", package.version_path().as_str())
        .param_int("tp", i64::from(tp))
        .param("gpu", &name)
        .param("how", how)
        .param("why", why);
    if m.has(DISABLED) {
        outcome = outcome.evidence(DISABLED);
    }
    outcome = outcome.evidence(access.evidence(&gpu).as_str());
    outcome.remedy(REMEDY_REBUILD).remedy(REMEDY_UPGRADE)
}

pitfall_sdk::export_rule!(evaluate);
