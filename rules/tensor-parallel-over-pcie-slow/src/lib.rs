//! Tensor parallelism across GPUs joined only by PCIe: every layer ends in
//! an all-reduce over PCIe, which bounds decode speed (KNOWLEDGE.md B24,
//! third field report). Pipeline parallelism sends far less between GPUs.
#![no_std]

use pitfall_sdk::prelude::*;

/// The first NVIDIA GPU if all of them report a PCIe-only interconnect;
/// `Err` names the first GPU that does not say.
fn pcie_only(m: &Manifest) -> Result<Option<Accelerator>, Accelerator> {
    let mut first = None;
    for gpu in m.nvidia_gpus() {
        match gpu.interconnect().as_deref() {
            Some("pcie") => {}
            Some(_) => return Ok(None),
            None => return Err(gpu),
        }
        first.get_or_insert(gpu);
    }
    Ok(first)
}

fn evaluate(m: &Manifest) -> Outcome {
    let w = m.workload();
    let tp = w.tensor_parallel_size().unwrap_or(1);
    if tp <= 1 {
        return Outcome::clear();
    }
    let gpu = match pcie_only(m) {
        Ok(Some(gpu)) => gpu,
        Ok(None) => return Outcome::clear(),
        Err(gpu) => return Outcome::needs(gpu.field_path("interconnect").as_str()),
    };
    let pp = w.pipeline_parallel_size().unwrap_or(1).max(1);
    let name = gpu.model().unwrap_or_else(|| String::from("NVIDIA"));
    Outcome::matched()
        .evidence("workload.tensor_parallel_size")
        .evidence(gpu.field_path("interconnect").as_str())
        .param_int("tp", i64::from(tp))
        .param("gpu", &name)
        .param_int("pp_fix", i64::from(pp.saturating_mul(tp)))
}

pitfall_sdk::export_rule!(evaluate);
