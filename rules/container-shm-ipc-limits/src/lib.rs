//! vLLM serves with several processes (API server, engine core) that pass
//! data through shared memory; a container's default 64 MiB `/dev/shm`
//! (Docker's `--shm-size` reference: "If you omit the size entirely, the
//! system uses 64m") and private IPC namespace crash the pipeline
//! (KNOWLEDGE.md A9). With tensor parallelism above 1 the NCCL failure is
//! rule B15's, so this rule covers tensor-parallel size 1.
#![no_std]

use pitfall_sdk::prelude::*;

/// Below this much `/dev/shm`, warn.
const MIN_SHM_MIB: f64 = 1024.0;
/// Docker's (and Podman's) default `/dev/shm` when `--shm-size` is not given.
const DEFAULT_SHM_MIB: f64 = 64.0;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(image) = m.image() else {
        return Outcome::clear();
    };
    let w = m.workload();
    let engine = w.engine();
    let vllm = engine.as_deref() == Some("vllm")
        || m.package("vllm").is_some()
        || m.text_contains("container.image", "vllm") == Some(true);
    if !vllm {
        // Without an engine or packages the container's contents are unknown.
        if engine.is_none() && !m.has("packages") {
            return Outcome::needs("workload.engine");
        }
        return Outcome::clear();
    }
    if w.tensor_parallel_size().unwrap_or(1) > 1 {
        return Outcome::clear();
    }
    let ipc = m.text("container.ipc");
    if ipc.as_deref() == Some("host") {
        return Outcome::clear();
    }
    let stated = m.number("container.shm_size_mib");
    let shm_mib = stated.unwrap_or(DEFAULT_SHM_MIB);
    if shm_mib >= MIN_SHM_MIB {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched().evidence("container.image");
    if stated.is_some() {
        outcome = outcome.evidence("container.shm_size_mib").param("default_note", "");
    } else {
        outcome = outcome.param("default_note", " (Docker's default, as none was set)");
    }
    if ipc.is_some() {
        outcome = outcome.evidence("container.ipc");
    }
    outcome
        .param("image", &image)
        .param("ipc", ipc.as_deref().unwrap_or("the default (private)"))
        .param_decimal("shm_mib", shm_mib, 0)
}

pitfall_sdk::export_rule!(evaluate);
