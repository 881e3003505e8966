//! Multi-GPU NCCL in a container with Docker's default 64 MiB /dev/shm (or
//! less): NCCL's shared-memory segments do not fit (torchtitan issue 853,
//! nccl issues 342 and 525). vLLM is covered by vllm-tp-container-nccl-shm.
#![no_std]

use pitfall_sdk::prelude::*;

/// Docker's default `--shm-size`; failures are reported at and below it.
const DOCKER_DEFAULT_SHM_MIB: f64 = 64.0;

fn evaluate(m: &Manifest) -> Outcome {
    if m.image().is_none() || m.package("vllm").is_some() {
        return Outcome::clear();
    }
    let gpus: u32 = m.nvidia_gpus().map(|g| g.count().unwrap_or(1)).sum();
    let tp = m.workload().tensor_parallel_size();
    // No GPU listed and no parallelism stated: how many GPUs the job
    // spans is unknown (a manifest read from a `docker run` line or a
    // log), not one.
    if gpus == 0 && tp.is_none() && m.accelerators().next().is_none() {
        return Outcome::undetermined()
            .missing("accelerators.*.count")
            .missing("workload.tensor_parallel_size");
    }
    let count = gpus.max(tp.unwrap_or(1));
    if count < 2 || m.env("NCCL_SHM_DISABLE").is_some_and(|v| v.trim() == "1") {
        return Outcome::clear();
    }
    let shm = m.container_shm();
    if shm.shares_host() {
        return Outcome::clear();
    }
    if let Some(unknown) = shm.unknown() {
        return unknown;
    }
    // Sizes above Docker's default are not judged (see summary).
    if shm.size_mib.is_some_and(|s| s > DOCKER_DEFAULT_SHM_MIB) {
        return Outcome::clear();
    }
    shm.annotate(Outcome::matched().param_int("count", i64::from(count)), DOCKER_DEFAULT_SHM_MIB)
}

pitfall_sdk::export_rule!(evaluate);
