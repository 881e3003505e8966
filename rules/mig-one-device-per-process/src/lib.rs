//! A single CUDA process enumerates only one MIG device (NVIDIA MIG user
//! guide, CUDA 11/R450 and CUDA 12/R525; pytorch PR 92315, issue 130181).
//! `accelerators[].mig_profile` (set for MIG devices) and `accelerators[].mig_mode`
//! (`enabled`/`disabled`, from nvidia-smi) are proposed fields.
#![no_std]

use pitfall_sdk::prelude::*;

/// A MIG device entry (`mig_profile`), or a GPU in MIG mode (`mig_mode`).
fn is_mig_device(m: &Manifest, gpu: &Accelerator) -> bool {
    m.has(gpu.field_path("mig_profile").as_str())
        || m.boolean(gpu.field_path("mig_mode").as_str()) == Some(true)
}

/// GPUs the MIG user guide lists (A100, A30, H100, H20, H200, B200, B300,
/// RTX PRO Blackwell), by model name.
fn mig_capable(gpu: &Accelerator) -> bool {
    gpu.model().is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        ["a100", "a30", "h100", "h200", "h20", "b200", "b300", "rtx pro"]
            .iter()
            .any(|f| n.contains(f))
    })
}

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    // Several MIG UUIDs handed to one process.
    if let Some(visible) = m.env("CUDA_VISIBLE_DEVICES") {
        let mut migs = visible.split(',').map(str::trim).filter(|d| d.starts_with("MIG-"));
        if let Some(first) = migs.next() {
            let count = 1 + migs.count();
            if count >= 2 {
                let mut what = String::from("CUDA_VISIBLE_DEVICES lists ");
                pitfall_sdk::text::push_int(&mut what, count as i64);
                what.push_str(" MIG devices");
                return Outcome::matched()
                    .evidence("env.CUDA_VISIBLE_DEVICES")
                    .param("what", &what)
                    .param("first", first)
                    .remedy(0);
            }
        }
    }
    // Parallelism over MIG devices inside one process.
    let w = m.workload();
    let needed = w.tensor_parallel_size().unwrap_or(1).max(1)
        * w.pipeline_parallel_size().unwrap_or(1).max(1);
    if needed < 2 {
        return Outcome::clear();
    }
    let Some(gpu) = m.nvidia_gpus().find(|g| is_mig_device(m, g)) else {
        // A MIG-capable GPU whose MIG state nobody reported.
        return match m
            .nvidia_gpus()
            .find(|g| mig_capable(g) && !m.has(g.field_path("mig_mode").as_str()))
        {
            Some(g) => Outcome::needs(g.field_path("mig_mode").as_str()),
            None => Outcome::clear(),
        };
    };
    let mut what = String::from("The workload needs ");
    pitfall_sdk::text::push_int(&mut what, i64::from(needed));
    what.push_str(" GPUs (tensor_parallel_size x pipeline_parallel_size) from MIG devices");
    let mut outcome = Outcome::matched().param("what", &what);
    for field in ["mig_profile", "mig_mode"] {
        let path = gpu.field_path(field);
        if m.has(path.as_str()) {
            outcome = outcome.evidence(path.as_str());
        }
    }
    for path in ["workload.tensor_parallel_size", "workload.pipeline_parallel_size"] {
        if m.has(path) {
            outcome = outcome.evidence(path);
        }
    }
    outcome.remedy(1)
}

pitfall_sdk::export_rule!(evaluate);
