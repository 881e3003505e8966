//! Building vLLM from source for a pre-Ampere GPU without restricting the
//! target archs compiles FlashAttention kernels for sm80/sm90 that can never
//! run there: the build takes over an hour (KNOWLEDGE.md A6).
#![no_std]

use pitfall_sdk::prelude::*;

/// From this compute capability on, vLLM's FlashAttention kernels run.
const FLASH_ATTN_MIN: ComputeCapability = ComputeCapability::new(8, 0);

fn evaluate(m: &Manifest) -> Outcome {
    if !m.built_from_source("vllm") {
        return Outcome::clear();
    }
    let mut gpus: Vec<(Accelerator, ComputeCapability)> = Vec::new();
    let mut unknown: Option<Accelerator> = None;
    for gpu in m.nvidia_gpus() {
        match gpu.compute_capability() {
            // A GPU that runs FlashAttention needs those kernels: not this case.
            Some(cc) if cc >= FLASH_ATTN_MIN => return Outcome::clear(),
            Some(cc) => gpus.push((gpu, cc)),
            None => unknown = unknown.or(Some(gpu)),
        }
    }
    if let Some(gpu) = unknown {
        return Outcome::needs(gpu.field_path("compute_capability").as_str());
    }
    let Some((weakest, cc)) = gpus.iter().min_by(|a, b| a.1.cmp(&b.1)).cloned() else {
        return Outcome::clear();
    };
    let listed = m.len("build.torch_cuda_arch_list").unwrap_or(0);
    let mut targets = String::new();
    if listed == 0 {
        targets.push_str("no TORCH_CUDA_ARCH_LIST, so it compiles for every arch vLLM supports");
    } else {
        // Entries that are none of the machine's GPUs; names (`Turing`) are not read.
        let extra: Vec<ComputeCapability> = m
            .torch_cuda_arch_list()
            .into_iter()
            .filter(|a| !gpus.iter().any(|(_, g)| g == a))
            .collect();
        if extra.is_empty() {
            return Outcome::clear();
        }
        targets.push_str("TORCH_CUDA_ARCH_LIST including ");
        for (i, a) in extra.iter().enumerate() {
            if i > 0 {
                targets.push_str(", ");
            }
            let mut buf = [0u8; 24];
            targets.push_str(a.write_to(&mut buf));
        }
    }
    let gpu_name = weakest.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("build.from_source")
        .evidence(weakest.field_path("compute_capability").as_str());
    if listed > 0 {
        outcome = outcome.evidence("build.torch_cuda_arch_list");
    }
    outcome
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param_int("cc_major", i64::from(cc.major))
        .param_int("cc_minor", i64::from(cc.minor))
        .param("targets", &targets)
}

pitfall_sdk::export_rule!(evaluate);
