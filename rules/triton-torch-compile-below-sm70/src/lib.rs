//! torch.compile's default backend, Inductor, generates Triton kernels, and
//! PyTorch refuses Triton on GPUs below compute capability 7.0 (KNOWLEDGE.md
//! D9): `has_triton()` is false there and the scheduler raises "Found ...
//! which is too old to be supported by the triton GPU compiler" (read in
//! torch/_inductor/scheduler.py at v2.2.2 and v2.6.0 and in
//! torch/_inductor/exc.py, class GPUTooOldForTriton, at v2.11.0 and v2.15.0).
//! Eager PyTorch still runs on these GPUs (Maxwell, Pascal), so this is a
//! warning; setting TORCH_COMPILE_DISABLE=1 (torch/_dynamo/config.py) turns
//! every torch.compile into a no-op.
#![no_std]

use pitfall_sdk::prelude::*;

const TRITON_MIN: ComputeCapability = ComputeCapability::new(7, 0);

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if m.package("torch").is_none()
        || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
    {
        return Outcome::clear();
    }
    if m.env("TORCH_COMPILE_DISABLE").is_some_and(|v| v.trim() == "1") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= TRITON_MIN {
        return Outcome::clear();
    }
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut buf = [0u8; 24];
    Outcome::matched()
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut buf))
}

pitfall_sdk::export_rule!(evaluate);
