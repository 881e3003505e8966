//! vLLM refuses bfloat16 on GPUs below compute capability 8.0 (KNOWLEDGE.md B1).
#![no_std]

use pitfall_sdk::prelude::*;

const BF16_MIN: ComputeCapability = ComputeCapability::new(8, 0);

fn evaluate(m: &Manifest) -> Outcome {
    // The check is vLLM's own (its `applies_to` says so): without vLLM
    // nothing refuses bfloat16 here.
    if m.package("vllm").is_none() {
        return Outcome::clear();
    }
    let w = m.workload();
    let Some(dtype) = w.dtype() else {
        return Outcome::needs("workload.dtype");
    };
    // `auto` takes the model's dtype, which for most current models
    // (Gemma, Llama 3, Qwen) is bfloat16.
    if dtype != "bfloat16" && dtype != "auto" {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= BF16_MIN {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("this GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("workload.dtype")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("dtype", &dtype)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
