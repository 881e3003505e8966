//! vLLM's Linux aarch64 wheels carry no CUDA code for GPUs below compute
//! capability 8.0, so on a T4G (7.5) the stack installs and then fails at
//! the first vLLM kernel launch (KNOWLEDGE.md A2).
//!
//! What each aarch64 wheel covers is read from the wheel itself (the
//! release table, facts/data/releases.json: every aarch64 vLLM wheel on
//! PyPI, 0.11.1 to 0.34.0, starts at 8.0 with compute_80 PTX; PyPI has no
//! aarch64 vLLM wheel before 0.11.1). Enrichment puts that list in
//! `packages.vllm.cuda_arch_list`; a collector may send it too. Without a
//! list the rule asks for one instead of guessing.
//!
//! PyTorch is not judged here: `torch-wheel-arch-list-lacks-gpu` reads
//! `packages.torch.cuda_arch_list` (the release table has the aarch64
//! lists of torch 2.11 and later) and reports a torch build that lacks the
//! GPU, so one cause gives one finding per package. Inside the official
//! vLLM/PyTorch images `aarch64-official-image-needs-sm80` speaks instead.
#![no_std]

use pitfall_sdk::prelude::*;

const VLLM_LIST: &str = "packages.vllm.cuda_arch_list";
const SOURCE_LIST: &str = "build.torch_cuda_arch_list";
/// PyPI's first aarch64 vLLM wheel (release table, releases.md finding 4):
/// an older vLLM on aarch64 was not installed from a PyPI wheel.
const HAS_AARCH64_WHEEL: &str = ">=0.11.1";

/// Whether `image` is an official vLLM or PyTorch image (the other rule's case).
fn official_image(image: &str) -> bool {
    let lower = image.trim().to_ascii_lowercase();
    let mut name = lower.as_str();
    for prefix in ["docker.io/", "index.docker.io/", "registry-1.docker.io/"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest;
            break;
        }
    }
    name.starts_with("vllm/vllm-openai") || name.starts_with("pytorch/pytorch")
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors are a promise: clear whenever they do not hold.
    if m.arch().as_deref() != Some("aarch64")
        || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia"))
    {
        return Outcome::clear();
    }
    if m.image().is_some_and(|i| official_image(&i)) {
        return Outcome::clear();
    }
    let Some(vllm) = m.package("vllm") else {
        return Outcome::clear();
    };
    // CPU and ROCm builds have no CUDA code to lack.
    if vllm
        .version_text()
        .as_deref()
        .and_then(|v| v.split_once('+'))
        .is_some_and(|(_, l)| l.starts_with("cpu") || l.starts_with("rocm"))
    {
        return Outcome::clear();
    }
    let from_source = m.built_from_source("vllm");
    // conda, system packages and vendor builds are not PyPI's wheels.
    if !from_source && vllm.ecosystem().is_some_and(|e| e != "pypi") {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= ComputeCapability::new(8, 0) {
        return Outcome::clear();
    }
    let (list, how, evidence) = if from_source {
        // vLLM's CMake takes its CUDA archs from the flags torch derives from
        // TORCH_CUDA_ARCH_LIST (CMakeLists.txt, clear_cuda_arches). Without a
        // list it targets what it finds: not judged.
        match m.arch_list(SOURCE_LIST) {
            Some(list) => (list, "built from source with TORCH_CUDA_ARCH_LIST", SOURCE_LIST),
            None => return Outcome::clear(),
        }
    } else {
        match m.arch_list(VLLM_LIST) {
            Some(list) => (list, "an aarch64 build with CUDA code for", VLLM_LIST),
            None => {
                return match vllm.version_in(HAS_AARCH64_WHEEL) {
                    // No PyPI aarch64 wheel this old: installed some other way.
                    Some(false) => Outcome::clear(),
                    _ => Outcome::needs(VLLM_LIST),
                };
            }
        }
    };
    if list.covers(cc) {
        return Outcome::clear();
    }
    let mut label = String::from("vllm");
    if let Some(v) = vllm.version_text() {
        label.push(' ');
        label.push_str(&v);
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let mut cc_buf = [0u8; 24];
    let mut outcome = Outcome::matched()
        .evidence("host.arch")
        .evidence(gpu.field_path("compute_capability").as_str())
        .evidence(evidence);
    if vllm.version_text().is_some() {
        outcome = outcome.evidence(vllm.version_path().as_str());
    }
    outcome
        .param("vllm", &label)
        .param("how", how)
        .param("archs", &list.text)
        .param("gpu", &gpu_name)
        .param("cc", cc.write_to(&mut cc_buf))
}

pitfall_sdk::export_rule!(evaluate);
