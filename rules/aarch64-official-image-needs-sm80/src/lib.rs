//! The official vLLM and PyTorch images for aarch64 carry CUDA code for
//! compute capability 8.0 and newer only, so on a T4G (7.5) the first kernel
//! launch fails with "no kernel image is available" (KNOWLEDGE.md A1: seen
//! with `vllm/vllm-openai:v0.27.1-aarch64`).
//!
//! The image's contents were not read; what is known comes from the field
//! report and from the aarch64 wheels of PyPI (release table: vLLM's from
//! 0.11.1 and PyTorch's from 2.11 start at 8.0). When the manifest lists the
//! image's packages, their arch lists decide: PyTorch's is judged by
//! `torch-wheel-arch-list-lacks-gpu` (so it is not reported twice), vLLM's
//! here. Without a list the image is taken to be what the field report saw.
#![no_std]

use pitfall_sdk::prelude::*;

const ARM64_IMAGE_MIN: ComputeCapability = ComputeCapability::new(8, 0);
const TORCH_LIST: &str = "packages.torch.cuda_arch_list";
const VLLM_LIST: &str = "packages.vllm.cuda_arch_list";
const SOURCE_LIST: &str = "build.torch_cuda_arch_list";

/// Remedy indices in rule.json.
const REMEDY_BOTH: u32 = 0;
const REMEDY_TORCH: u32 = 1;
const REMEDY_VLLM: u32 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stack {
    Vllm,
    Pytorch,
}

/// Which official image `image` is, if any: `vllm/vllm-openai*` or
/// `pytorch/pytorch*`, with or without a Docker Hub registry prefix.
fn official_image(image: &str) -> Option<Stack> {
    let lower = image.trim().to_ascii_lowercase();
    let mut name = lower.as_str();
    for prefix in ["docker.io/", "index.docker.io/", "registry-1.docker.io/"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest;
            break;
        }
    }
    // Drop a digest, then a tag (a `:` after the last `/`).
    let name = name.split('@').next().unwrap_or(name);
    let repo = match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    };
    if repo.starts_with("vllm/vllm-openai") {
        Some(Stack::Vllm)
    } else if repo.starts_with("pytorch/pytorch") {
        Some(Stack::Pytorch)
    } else {
        None
    }
}

/// `Some(covers)` for the list at `path`, `None` when there is no list or
/// nothing in it parses (names only).
fn list_covers(m: &Manifest, path: &str, cc: ComputeCapability) -> Option<bool> {
    m.arch_list(path).map(|list| list.covers(cc))
}

/// Whether the image's build of `package` lacks code for `cc`: rebuilt from
/// source for it, or a known arch list covering it, clears it.
fn lacks(m: &Manifest, package: &str, list: &str, cc: ComputeCapability) -> bool {
    if m.built_from_source(package) {
        // A source build without a list targets the GPUs it finds.
        return list_covers(m, SOURCE_LIST, cc) == Some(false);
    }
    list_covers(m, list, cc) != Some(true)
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if m.arch().as_deref() != Some("aarch64")
        || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
    {
        return Outcome::clear();
    }
    let Some(image) = m.image() else {
        return Outcome::clear();
    };
    let Some(stack) = official_image(&image) else {
        return Outcome::clear();
    };
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= ARM64_IMAGE_MIN {
        return Outcome::clear();
    }
    // PyTorch: a known list is torch-wheel-arch-list-lacks-gpu's to judge
    // (one finding per cause); only an unknown build is reported here.
    let torch_known = !m.built_from_source("torch") && m.len(TORCH_LIST).is_some();
    let torch_lacks = !torch_known && lacks(m, "torch", TORCH_LIST, cc);
    let with_vllm = stack == Stack::Vllm || m.package("vllm").is_some();
    let vllm_lacks = with_vllm && lacks(m, "vllm", VLLM_LIST, cc);
    let (what, remedy) = match (torch_lacks, vllm_lacks) {
        (true, true) => ("PyTorch and vLLM builds", REMEDY_BOTH),
        (true, false) => ("a PyTorch build", REMEDY_TORCH),
        (false, true) => ("a vLLM build", REMEDY_VLLM),
        (false, false) => return Outcome::clear(),
    };
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("host.arch")
        .evidence("container.image")
        .evidence(gpu.field_path("compute_capability").as_str());
    if vllm_lacks && m.len(VLLM_LIST).is_some() {
        outcome = outcome.evidence(VLLM_LIST);
    }
    outcome
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param("image", &image)
        .param("what", what)
        .param(
            "stack",
            match stack {
                Stack::Vllm => "vLLM",
                Stack::Pytorch => "PyTorch",
            },
        )
        .remedy(remedy)
}

pitfall_sdk::export_rule!(evaluate);
