//! PyTorch DataLoader workers hand batches to the training process through
//! shared memory; in a container with its own IPC namespace and Docker's
//! default 64 MiB /dev/shm a worker dies of SIGBUS: "ERROR: Unexpected bus
//! error encountered in worker. This might be caused by insufficient shared
//! memory (shm)." and "DataLoader worker (pid N) is killed by signal: Bus
//! error. It is possible that dataloader's workers are out of shared
//! memory." (same text in libtorch_python of torch 1.13.1, 2.4.0, 2.8.0).
//! fastai/docker-containers issue 21 and bytedance/Protenix issue 2 were
//! fixed by `--shm-size` or by mounting the host's /dev/shm. The manifest
//! does not say whether the job uses DataLoader workers (num_workers > 0),
//! hence a warning. vLLM (container-shm-ipc-limits) and multi-GPU NCCL
//! (nccl-container-shm-too-small) are other rules' causes.
#![no_std]

use pitfall_sdk::prelude::*;

/// Docker's default `--shm-size`; failures are reported at and below it.
const DOCKER_DEFAULT_SHM_MIB: f64 = 64.0;

fn evaluate(m: &Manifest) -> Outcome {
    let Some(image) = m.image() else {
        return Outcome::clear();
    };
    if m.package("vllm").is_some() {
        return Outcome::clear();
    }
    if m.package("torch").is_none() {
        // Without packages the container's contents are unknown.
        if !m.has("packages") {
            return Outcome::needs("packages.torch");
        }
        return Outcome::clear();
    }
    match m.text("workload.mode").as_deref() {
        Some("train" | "training" | "finetune" | "finetuning") => {}
        Some(_) => return Outcome::clear(),
        None => return Outcome::needs("workload.mode"),
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
    let outcome = Outcome::matched()
        .evidence("packages.torch")
        .evidence("workload.mode")
        .param("image", &image);
    shm.annotate(outcome, DOCKER_DEFAULT_SHM_MIB)
}

pitfall_sdk::export_rule!(evaluate);
