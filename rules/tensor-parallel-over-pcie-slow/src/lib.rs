//! Tensor parallelism across GPUs joined only by PCIe: every layer ends in
//! an all-reduce over PCIe, which bounds decode speed (KNOWLEDGE.md B24,
//! third field report). Pipeline parallelism sends far less between GPUs.
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    let w = m.workload();
    let tp = w.tensor_parallel_size().unwrap_or(1);
    if tp <= 1 {
        return Outcome::clear();
    }
    let gpu = match m.nvidia_pcie_only() {
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
