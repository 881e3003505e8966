//! CUDA 13 dropped Maxwell, Pascal and Volta (CUDA 13.0 release notes,
//! Deprecated Architectures; KNOWLEDGE.md B13): a stack built with CUDA 13
//! (a `+cu13x` PyTorch wheel, or `drivers.cuda_runtime` 13.x) has no kernels
//! for GPUs below compute capability 7.5. The driver's own CUDA (nvidia-smi,
//! `drivers.cuda_driver`) says nothing about the stack and is not read.
#![no_std]

use pitfall_sdk::prelude::*;

const TURING: ComputeCapability = ComputeCapability::new(7, 5);

/// Where the stack's CUDA version was read, and its major version.
struct CudaSource {
    major: u64,
    /// For the message, e.g. `torch 2.12.0+cu130` or `CUDA 13.0`.
    label: String,
    /// The evidence path.
    path: String,
    /// PyTorch's public version when the CUDA version came from its local tag.
    torch_base: Option<String>,
}

fn cuda_source(m: &Manifest) -> Option<CudaSource> {
    // The wheel's CUDA build decides which kernels PyTorch has; prefer it.
    if let Some(torch) = m.package("torch")
        && let Some(v) = torch.version()
        && let Some((major, _)) = v.cuda_build()
    {
        let mut label = String::from("torch ");
        label.push_str(v.as_str());
        return Some(CudaSource {
            major,
            label,
            path: String::from(torch.version_path().as_str()),
            torch_base: Some(String::from(v.without_local().as_str())),
        });
    }
    let runtime = m.text("drivers.cuda_runtime").and_then(|t| Dotted::parse(&t).ok())?;
    let mut label = String::from("CUDA ");
    label.push_str(runtime.as_str());
    Some(CudaSource {
        major: runtime.major(),
        label,
        path: String::from("drivers.cuda_runtime"),
        torch_base: None,
    })
}

fn evaluate(m: &Manifest) -> Outcome {
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => {
            // A GPU of unknown capability matters only on a CUDA 13 stack.
            return match cuda_source(m) {
                Some(c) if c.major >= 13 => outcome,
                _ => Outcome::clear(),
            };
        }
    };
    if cc >= TURING {
        return Outcome::clear();
    }
    let Some(cuda) = cuda_source(m) else {
        return Outcome::needs("drivers.cuda_runtime");
    };
    if cuda.major < 13 {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let outcome = Outcome::matched()
        .evidence(cuda.path.as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("cuda", &cuda.label);
    match cuda.torch_base {
        Some(base) => {
            let mut fix = base;
            fix.push_str("+cu126");
            outcome.param("torch_fix", &fix).remedy(1)
        }
        None => outcome.remedy(0),
    }
}

pitfall_sdk::export_rule!(evaluate);
