//! Tensor parallelism across GPUs joined only by PCIe (KNOWLEDGE.md B24).
//! Every layer ends in an all-reduce between the GPUs; vLLM's documentation
//! advises pipeline parallelism instead when the GPUs have no NVLink (e.g.
//! L40S), "for higher throughput and lower communication overhead"
//! (docs/serving/parallelism_scaling.md), and vLLM's fast custom all-reduce
//! is not used on more than two PCIe-only GPUs (custom_all_reduce.py, 0.4.3
//! to 0.34.0), so their all-reduces go through NCCL. The advice is vLLM's,
//! so the rule speaks for vLLM deployments only; how much slower a given
//! setup decodes is not estimated.
#![no_std]

use pitfall_sdk::prelude::*;

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let w = m.workload();
    let is_vllm = w.engine().as_deref() == Some("vllm") || m.package("vllm").is_some();
    if !is_vllm {
        return Outcome::clear();
    }
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
    let custom = if tp > 2 {
        "; with more than two PCIe-only GPUs vLLM also turns its custom all-reduce off and uses NCCL"
    } else {
        ""
    };
    Outcome::matched()
        .evidence("workload.tensor_parallel_size")
        .evidence(gpu.field_path("interconnect").as_str())
        .param_int("tp", i64::from(tp))
        .param("gpu", &name)
        .param("custom", custom)
        .param_int("pp_fix", i64::from(pp.saturating_mul(tp)))
}

pitfall_sdk::export_rule!(evaluate);
