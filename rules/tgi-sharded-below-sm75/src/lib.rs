//! Text Generation Inference shards a model across GPUs only through its
//! flash-attention model implementations; without them, get_model raises
//! `NotImplementedError(FLASH_ATT_ERROR_MESSAGE.format("Sharded <Model>"))`
//! ("Sharded Llama requires Flash Attention enabled models.") and serves
//! unsharded models through the slow transformers fallback
//! (server/text_generation_server/models/__init__.py, v3.3.7).
//! Flash attention needs compute capability 8.0 (FlashAttention-2) or 7.5
//! (FlashAttention v1, layers/attention/cuda.py: below 8.0 TGI imports
//! flash_attn_cuda v1, and raises "GPU with CUDA capability {major} {minor}
//! is not supported" below 7.5 when it is missing; the docs name H100,
//! A100, A10G and T4). A V100 (7.0) with --num-shard > 1 failed this way in
//! TGI's own image (TGI issue 686). Whether v3.x images load their
//! FlashAttention v1 build on 7.0 and fail later instead was not checked,
//! hence a warning.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const TGI_IMAGE: &str = "text-generation-inference";

fn evaluate(m: &Manifest) -> Outcome {
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let tgi_image = m.image().is_some_and(|i| i.contains(TGI_IMAGE));
    let engine = m.workload().engine();
    if !tgi_image && !matches!(engine.as_deref(), Some("tgi" | "text-generation-inference")) {
        return Outcome::clear();
    }
    let tp = m.workload().tensor_parallel_size().unwrap_or(1);
    if tp < 2 {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence("workload.tensor_parallel_size")
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
        .param_int("tp", i64::from(tp))
}

pitfall_sdk::export_rule!(evaluate);
