//! vLLM with tensor parallelism in a container needs the host IPC namespace
//! or a large /dev/shm: NCCL puts its intra-node buffers there, and Docker's
//! default 64 MiB is too small (KNOWLEDGE.md B15). TP <= 1 is another rule's.
#![no_std]

use pitfall_sdk::prelude::*;

/// Below this, NCCL's shared-memory segments for several ranks may not fit.
const SHM_ENOUGH_MIB: f64 = 1024.0;
/// Docker's default `--shm-size`.
const DOCKER_DEFAULT_SHM_MIB: f64 = 64.0;

fn evaluate(m: &Manifest) -> Outcome {
    if m.image().is_none() || m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let tp = m.workload().tensor_parallel_size().unwrap_or(1);
    if tp <= 1 {
        return Outcome::clear();
    }
    let shm = m.container_shm();
    if shm.shares_host() || shm.size_mib.is_some_and(|s| s >= SHM_ENOUGH_MIB) {
        return Outcome::clear();
    }
    if let Some(unknown) = shm.unknown() {
        return unknown;
    }
    let outcome =
        Outcome::matched().evidence("workload.tensor_parallel_size").param_int("tp", i64::from(tp));
    // IPC mode known, /dev/shm size not: Docker's default.
    shm.annotate(outcome, DOCKER_DEFAULT_SHM_MIB)
}

pitfall_sdk::export_rule!(evaluate);
