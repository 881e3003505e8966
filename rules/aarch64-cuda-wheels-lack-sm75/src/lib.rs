//! PyTorch and vLLM wheels for Linux aarch64 carry CUDA kernels for compute
//! capability 8.0 and newer only, so on a T4G (7.5) the stack installs but
//! fails at the first kernel launch (KNOWLEDGE.md A2, B10). Inside the
//! official vLLM/PyTorch images the same fact is reported by
//! `aarch64-official-image-needs-sm80`, so this rule stays clear there.
#![no_std]

use pitfall_sdk::prelude::*;

/// The lowest compute capability the aarch64 CUDA wheels have kernels for.
const AARCH64_WHEEL_MIN: ComputeCapability = ComputeCapability::new(8, 0);

/// Remedy indices in rule.json.
const REMEDY_BOTH: u32 = 0;
const REMEDY_TORCH: u32 = 1;
const REMEDY_VLLM: u32 = 2;

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

/// How a package got onto the machine, as far as this rule cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A wheel from PyPI or the PyTorch index (ecosystem `pypi` or unstated).
    Wheel,
    /// Built from source (`build.from_source`).
    Source,
}

fn origin(m: &Manifest, name: &str) -> Option<Origin> {
    let package = m.package(name)?;
    // CPU-only and ROCm builds fail differently (no CUDA at all).
    let version = package.version();
    if version
        .as_ref()
        .and_then(|v| v.local())
        .is_some_and(|l| l.starts_with("cpu") || l.starts_with("rocm"))
    {
        return None;
    }
    if m.built_from_source(name) {
        return Some(Origin::Source);
    }
    match package.ecosystem() {
        None => Some(Origin::Wheel),
        Some(e) if e == "pypi" => Some(Origin::Wheel),
        // conda, system packages, vendor builds: their arch lists are not these wheels'.
        Some(_) => None,
    }
}

/// Whether a source build's `TORCH_CUDA_ARCH_LIST` has kernels that run on
/// `cc` (same major, minor not above it). No list, or a list of names only,
/// counts as covering: such a build targets the GPUs it finds.
fn arch_list_covers(m: &Manifest, cc: ComputeCapability) -> bool {
    if m.len("build.torch_cuda_arch_list").unwrap_or(0) == 0 {
        return true;
    }
    let list = m.torch_cuda_arch_list();
    list.is_empty() || list.iter().any(|a| a.major == cc.major && a.minor <= cc.minor)
}

fn describe(m: &Manifest, name: &str, origin: Origin, cc_text: &str, out: &mut String) {
    if !out.is_empty() {
        out.push_str(" and ");
    }
    out.push_str(name);
    if let Some(v) = m.package_version(name) {
        out.push(' ');
        out.push_str(&v);
    }
    match origin {
        Origin::Wheel => {
            out.push_str(" (an aarch64 wheel, built for compute capability 8.0 and newer)")
        }
        Origin::Source => {
            out.push_str(" (built from source with a TORCH_CUDA_ARCH_LIST without ");
            out.push_str(cc_text);
            out.push(')');
        }
    }
}

/// The package's version field when it has one, else its name.
fn evidence_path(m: &Manifest, name: &str) -> Path {
    match m.package(name) {
        Some(p) if p.version_text().is_some() => p.version_path(),
        _ => Path::new("packages").key(name).key("name"),
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("aarch64") {
        return Outcome::clear();
    }
    if m.image().is_some_and(|i| official_image(&i)) {
        return Outcome::clear();
    }
    let torch = origin(m, "torch");
    let vllm = origin(m, "vllm");
    if torch.is_none() && vllm.is_none() {
        return Outcome::clear();
    }
    let (gpu, cc) = match m.need_weakest_nvidia_gpu() {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    if cc >= AARCH64_WHEEL_MIN {
        return Outcome::clear();
    }
    let covered = arch_list_covers(m, cc);
    let lacks = |o: Option<Origin>| match o {
        Some(Origin::Wheel) => true,
        Some(Origin::Source) => !covered,
        None => false,
    };
    let (torch_lacks, vllm_lacks) = (lacks(torch), lacks(vllm));
    if !torch_lacks && !vllm_lacks {
        return Outcome::clear();
    }
    let mut cc_buf = [0u8; 24];
    let cc_text = cc.write_to(&mut cc_buf);
    let mut packages = String::new();
    let mut outcome = Outcome::matched()
        .evidence("host.arch")
        .evidence(gpu.field_path("compute_capability").as_str());
    if let (true, Some(o)) = (torch_lacks, torch) {
        describe(m, "torch", o, cc_text, &mut packages);
        outcome = outcome.evidence(evidence_path(m, "torch").as_str());
    }
    if let (true, Some(o)) = (vllm_lacks, vllm) {
        describe(m, "vllm", o, cc_text, &mut packages);
        outcome = outcome.evidence(evidence_path(m, "vllm").as_str());
    }
    let gpu_name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    outcome
        .param("packages", &packages)
        .param("gpu", &gpu_name)
        .param("cc", cc_text)
        .param_int("cc_major", i64::from(cc.major))
        .param_int("cc_minor", i64::from(cc.minor))
        .remedy(match (torch_lacks, vllm_lacks) {
            (true, true) => REMEDY_BOTH,
            (true, false) => REMEDY_TORCH,
            _ => REMEDY_VLLM,
        })
}

pitfall_sdk::export_rule!(evaluate);
