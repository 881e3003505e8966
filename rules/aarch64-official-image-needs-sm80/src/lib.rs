//! The official vLLM and PyTorch images for aarch64 carry CUDA kernels for
//! compute capability 8.0 and newer only, so on a T4G (7.5) the first kernel
//! launch fails with "no kernel image is available" (KNOWLEDGE.md A1, B10).
#![no_std]

use pitfall_sdk::prelude::*;

/// The lowest compute capability the aarch64 images (and the aarch64 PyTorch
/// CUDA wheels inside them) have kernels for.
const ARM64_IMAGE_MIN: ComputeCapability = ComputeCapability::new(8, 0);

/// Remedy indices in rule.json.
const REMEDY_REBUILD_TORCH_AND_VLLM: u32 = 0;
const REMEDY_REBUILD_TORCH: u32 = 1;

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

/// Whether a source build's `TORCH_CUDA_ARCH_LIST` has kernels that run on
/// `cc`: an entry of the same major version and a minor version not above
/// it (CUDA binaries run on later minor versions of their major). A build
/// without a list targets the GPUs it finds and every arch it supports, and
/// a list of names only (`Turing`) cannot be read here: both count as covering.
fn arch_list_covers(m: &Manifest, cc: ComputeCapability) -> bool {
    if m.len("build.torch_cuda_arch_list").unwrap_or(0) == 0 {
        return true;
    }
    let list = m.torch_cuda_arch_list();
    list.is_empty() || list.iter().any(|a| a.major == cc.major && a.minor <= cc.minor)
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("aarch64") {
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
    // Rebuilt inside the image for this GPU: PyTorch always (the image's
    // PyTorch is the aarch64 wheel), vLLM too when the image or stack has it.
    let with_vllm = stack == Stack::Vllm || m.package("vllm").is_some();
    let rebuilt = m.built_from_source("torch")
        && (!with_vllm || m.built_from_source("vllm"))
        && arch_list_covers(m, cc);
    if rebuilt {
        return Outcome::clear();
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    Outcome::matched()
        .evidence("host.arch")
        .evidence("container.image")
        .evidence(gpu.field_path("compute_capability").as_str())
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
        .param_int("cc_major", i64::from(cc.major))
        .param_int("cc_minor", i64::from(cc.minor))
        .param("image", &image)
        .param(
            "stack",
            match stack {
                Stack::Vllm => "vLLM",
                Stack::Pytorch => "PyTorch",
            },
        )
        .remedy(if with_vllm { REMEDY_REBUILD_TORCH_AND_VLLM } else { REMEDY_REBUILD_TORCH })
}

pitfall_sdk::export_rule!(evaluate);
