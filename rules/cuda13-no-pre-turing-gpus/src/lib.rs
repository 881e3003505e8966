//! CUDA 13 dropped Maxwell, Pascal and Volta (KNOWLEDGE.md B13): a CUDA 13
//! build (a `+cu13x` PyTorch wheel, or a stack on CUDA 13) has no kernels for
//! GPUs below compute capability 7.5. Turing (7.5) stays supported.
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

/// The CUDA major version of a PyTorch local tag (`cu130` → 13, `cu126` → 12).
fn tag_major(local: &str) -> Option<u64> {
    pitfall_sdk::version::cuda_tag(local).map(|(major, _)| major)
}

fn cuda_source(m: &Manifest) -> Option<CudaSource> {
    // The wheel's CUDA build decides which kernels exist; prefer it.
    if let Some(torch) = m.package("torch")
        && let Some(v) = torch.version()
        && let Some(major) = v.local().and_then(tag_major)
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
    let cuda = m.cuda()?;
    let mut label = String::from("CUDA ");
    label.push_str(cuda.as_str());
    Some(CudaSource {
        major: cuda.major(),
        label,
        path: String::from("drivers.cuda"),
        torch_base: None,
    })
}

fn evaluate(m: &Manifest) -> Outcome {
    let weakest = m.weakest_nvidia_gpu();
    let Some(cuda) = cuda_source(m) else {
        // Only an old GPU makes the CUDA version matter.
        return match weakest {
            Some((_, cc)) if cc < TURING => Outcome::needs("drivers.cuda"),
            _ => Outcome::clear(),
        };
    };
    if cuda.major < 13 {
        return Outcome::clear();
    }
    let Some((gpu, cc)) = weakest else {
        // An NVIDIA GPU whose compute capability nobody knows.
        return match m.nvidia_gpus().next() {
            Some(g) => Outcome::needs(g.field_path("compute_capability").as_str()),
            None => Outcome::clear(),
        };
    };
    if cc >= TURING {
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
        None => outcome.param("torch_fix", "a +cu126 build").remedy(0),
    }
}

pitfall_sdk::export_rule!(evaluate);
