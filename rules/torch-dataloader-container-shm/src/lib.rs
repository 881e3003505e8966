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
    let ipc = m.text("container.ipc");
    if ipc.as_deref() == Some("host") {
        return Outcome::clear();
    }
    let shm = m.number("container.shm_size_mib");
    if ipc.is_none() && shm.is_none() {
        return Outcome::undetermined().missing("container.ipc").missing("container.shm_size_mib");
    }
    // Sizes above Docker's default are not judged (see summary).
    if shm.is_some_and(|s| s > DOCKER_DEFAULT_SHM_MIB) {
        return Outcome::clear();
    }
    let mut outcome = Outcome::matched()
        .evidence("packages.torch")
        .evidence("workload.mode")
        .param("image", &image);
    outcome = match &ipc {
        Some(mode) => outcome.evidence("container.ipc").param("ipc", mode),
        None => outcome.param("ipc", "unreported"),
    };
    match shm {
        Some(mib) => outcome.evidence("container.shm_size_mib").param_int("shm", mib as i64),
        None => outcome.param_int("shm", DOCKER_DEFAULT_SHM_MIB as i64),
    }
}

pitfall_sdk::export_rule!(evaluate);
