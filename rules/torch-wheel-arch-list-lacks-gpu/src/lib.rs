//! A PyTorch CUDA build runs only on the GPUs its compiled code covers
//! (KNOWLEDGE.md B8-B10, B13). The rule reads the build's arch list,
//! `packages.torch.cuda_arch_list` (filled from the release table by
//! enrichment, or by a collector from `torch.cuda.get_arch_list()`), so it
//! holds for every release, CUDA flavour and CPU architecture without a
//! table of its own; `torch-cu128-drops-pre-turing`,
//! `torch-wheel-lacks-blackwell-sm` and `aarch64-cuda-wheels-lack-sm75`
//! decide the same from the version alone when no list is known.
//!
//! Which code runs where, as PyTorch itself decides it
//! (`_code_compatible_with_device` and `DEVICE_REQUIREMENT` in
//! torch/cuda/__init__.py at v2.15.0): a cubin for X.Y runs on X.Z for
//! Z >= Y, except on the Jetson iGPUs 5.3, 6.2, 7.2 and 8.7 (their own cubin
//! only), except 10.0 code on 10.1, and 10.1 and 11.0 share code (11.0 is the
//! renamed 10.1). PTX (`+PTX`, `compute_XY`) is compiled by the driver for
//! newer GPUs too, so a PTX entry is taken to cover every GPU at or above it
//! (PyTorch's own check is stricter and may still warn; the stack runs).
#![no_std]

use pitfall_sdk::prelude::*;

const LIST: &str = "packages.torch.cuda_arch_list";
const SOURCE_LIST: &str = "build.torch_cuda_arch_list";

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    // CPU and ROCm builds have no CUDA arch list (ROCm: rocm-torch-wheel-lacks-gfx-target).
    let version = torch.version_text();
    if let Some(local) = version.as_deref().and_then(|v| v.split_once('+')).map(|(_, l)| l)
        && (local.starts_with("cpu") || local.starts_with("rocm"))
    {
        return Outcome::clear();
    }
    let from_source = m.built_from_source("torch");
    let path = if from_source { SOURCE_LIST } else { LIST };
    if m.len(path).unwrap_or(0) == 0 {
        // A source build without a list targets the GPUs it finds.
        return if from_source { Outcome::clear() } else { Outcome::needs(LIST) };
    }
    // A list of names only (`Turing`) cannot be checked.
    let Some(list) = m.arch_list(path) else {
        return Outcome::clear();
    };
    let mut unknown: Option<Path> = None;
    for gpu in m.nvidia_gpus() {
        let Some(cc) = gpu.compute_capability() else {
            unknown.get_or_insert(gpu.field_path("compute_capability"));
            continue;
        };
        if list.covers(cc) {
            continue;
        }
        let mut label = String::from("torch");
        if let Some(v) = &version {
            label.push(' ');
            label.push_str(v);
        }
        if from_source {
            label.push_str(" (built from source)");
        }
        let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
        let mut buf = [0u8; 24];
        let mut outcome =
            Outcome::matched().evidence(gpu.field_path("compute_capability").as_str());
        if version.is_some() {
            outcome = outcome.evidence(torch.version_path().as_str());
        }
        return outcome
            .param("torch", &label)
            .param("archs", &list.text)
            .param("gpu", &name)
            .param("cc", cc.write_to(&mut buf));
    }
    match unknown {
        Some(path) => Outcome::needs(path.as_str()),
        None => Outcome::clear(),
    }
}

pitfall_sdk::export_rule!(evaluate);
