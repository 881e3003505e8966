//! vLLM turns its custom all-reduce off for more than two GPUs joined only
//! by PCIe and falls back to NCCL (KNOWLEDGE.md B16).
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let tp = w.tensor_parallel_size().unwrap_or(1);
    if tp <= 2 || w.disable_custom_all_reduce() == Some(true) {
        return Outcome::clear();
    }
    let gpu = match m.nvidia_pcie_only() {
        Ok(Some(gpu)) => gpu,
        Ok(None) => return Outcome::clear(),
        Err(gpu) => return Outcome::needs(gpu.field_path("interconnect").as_str()),
    };
    let name = gpu.model().unwrap_or_else(|| String::from("NVIDIA"));
    Outcome::matched()
        .evidence("workload.tensor_parallel_size")
        .evidence(gpu.field_path("interconnect").as_str())
        .param_int("tp", i64::from(tp))
        .param("gpu", &name)
}

pitfall_sdk::export_rule!(evaluate);
