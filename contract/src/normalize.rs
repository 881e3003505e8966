//! Normalisation and enrichment of a manifest before rules see it.
//!
//! Clients describe the same thing many ways (`arm64` and `aarch64`, `Tesla T4`
//! and `T4`, `sm_75` and `7.5`, `bf16` and `bfloat16`). Rules should compare
//! against one spelling, so [`normalize`] rewrites those fields to the
//! canonical one (DESIGN.md, "The manifest (v1)") and fills accelerator facts a
//! client left out from the hardware table ([`pitfall_facts::hardware`]). It reports
//! which values it filled, because a finding must say when a value came from
//! enrichment rather than from the client.
//!
//! Two rules hold throughout: a value the client sent is never replaced by a
//! table value (only respelled), and normalising twice gives the same manifest
//! as normalising once. A string that is empty after trimming carries no
//! information and becomes absent, so enrichment may fill it.

use std::borrow::Cow;

use super::manifest::{Accelerator, Build, Host, Manifest, Package, Workload};
use pitfall_version::name::trim;

pub use super::enrich::Enrichment;

/// Rewrites `manifest` to canonical spellings and fills what the sourced
/// tables know of it ([`super::enrich`]); returns what it filled.
///
/// Only the first pass over a manifest can report enrichment: a second pass
/// finds the filled values present and treats them as given. Keep the
/// [`Enrichment`] of the pass that saw the client's manifest.
pub fn normalize(manifest: &mut Manifest) -> Enrichment {
    let mut enrichment = Enrichment::default();
    if let Some(host) = &mut manifest.host {
        normalize_host(host);
    }
    for accelerator in &mut manifest.accelerators {
        normalize_accelerator(accelerator);
    }
    for package in &mut manifest.packages {
        normalize_package(package);
    }
    if let Some(build) = &mut manifest.build {
        normalize_build(build);
    }
    if let Some(workload) = &mut manifest.workload {
        normalize_workload(workload);
    }
    if let Some(container) = &mut manifest.container {
        clean(&mut container.ipc, str::to_lowercase);
        clean(&mut container.engine, str::to_lowercase);
        clean(&mut container.gpu_request, str::to_lowercase);
        clean(&mut container.cgroup_driver, str::to_lowercase);
    }
    if let Some(drivers) = &mut manifest.drivers {
        for version in [
            &mut drivers.nvidia,
            &mut drivers.cuda,
            &mut drivers.cuda_driver,
            &mut drivers.cuda_runtime,
            &mut drivers.nvidia_userspace,
        ] {
            clean(version, str::to_owned);
        }
        clean(&mut drivers.nvidia_kernel_module, str::to_lowercase);
    }
    super::enrich::enrich(manifest, &mut enrichment);
    enrichment
}

/// A package's key: its PEP 503 name ([`pitfall_version::name`], shared
/// with the rule-side view), then the current name of a distribution that
/// was published under another one ([`current_package_name`]). Every host
/// lookup of a package goes through it: the field map, selectors, actions,
/// test cases and enrichment, so a rule that names one spelling finds both.
pub fn package_key(name: &str) -> String {
    let key = pitfall_version::name::package_key(name);
    match current_package_name(&key) {
        Some(current) => current.to_owned(),
        None => key,
    }
}

/// [`package_key`], borrowing `name` exactly when it is its own key (a
/// renamed one never is: it is owned, so a borrowed key always is the
/// name itself, as the package table relies on).
pub fn package_key_cow(name: &str) -> Cow<'_, str> {
    let key = pitfall_version::name::package_key_cow(name);
    match current_package_name(&key) {
        Some(current) => Cow::Owned(current.to_owned()),
        None => key,
    }
}

/// The current name of a distribution that was published under another
/// one, given the old name's PEP 503 key; `None` for every other key.
/// Both names are one project with one version line, so a version range
/// means the same under either.
pub fn current_package_name(key: &str) -> Option<&'static str> {
    PACKAGE_RENAMES.iter().find(|(old, _)| *old == key).map(|(_, current)| *current)
}

/// Old PEP 503 name → current one.
pub const PACKAGE_RENAMES: &[(&str, &str)] = &[
    // FlashInfer's wheels were `flashinfer` up to 0.2.0, served from its
    // own index (`pip install flashinfer -i https://flashinfer.ai/whl/...`):
    // https://github.com/flashinfer-ai/flashinfer/blob/v0.1.6/python/setup.py
    // and https://github.com/flashinfer-ai/flashinfer/blob/v0.2.0/pyproject.toml
    // (name = "flashinfer"). The name was taken on PyPI, so from 0.2.0.post1
    // the same project is `flashinfer-python`: commit 9f5fbee ("ci: rename
    // python package name to `flashinfer-python` (#729)"),
    // https://github.com/flashinfer-ai/flashinfer/blob/v0.2.0.post2/pyproject.toml,
    // and https://pypi.org/simple/flashinfer-python/ (first sdist
    // 0.2.0.post1; https://pypi.org/simple/flashinfer/ is a 404).
    ("flashinfer", "flashinfer-python"),
];

/// A compute capability in the `major.minor` spelling, from the spellings
/// tools print: `7.5`, `8` (major only), `75` (nvcc/vLLM style: last digit is
/// the minor), `120`, `sm_75`, `sm_90a`, `compute_86`. `None` when it is none
/// of these.
///
/// A bare two-digit number below 20 is read as a major version (`12` is 12.0,
/// the RTX 50 series), not as 1.2: compute capability 1.x has been unsupported
/// for over a decade, while a JSON number `12` for 12.0 is plausible.
pub fn canonical_compute_capability(raw: &str) -> Option<String> {
    let lower = raw.trim().to_ascii_lowercase();
    let prefixed = ["sm_", "compute_", "sm"].iter().find_map(|prefix| lower.strip_prefix(prefix));
    // `sm_90a`, `sm_100f`: the letter selects arch-specific features; the
    // capability is still 9.0 / 10.0.
    let body = match prefixed {
        Some(arch) => arch.trim_end_matches(|c: char| c.is_ascii_alphabetic()),
        None => &lower,
    };
    let (major, minor) = if let Some((major, minor)) = body.split_once('.') {
        // `8.60` is how some tools print the float 8.6.
        let minor = minor.trim_end_matches('0');
        (major.parse().ok()?, if minor.is_empty() { 0 } else { minor.parse().ok()? })
    } else {
        if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: u32 = body.parse().ok()?;
        match (prefixed.is_some(), body.len()) {
            (true, 1) => return None,
            (true, _) => (number / 10, number % 10),
            (false, 1) => (number, 0),
            (false, 2) if number < 20 => (number, 0),
            (false, 2 | 3) => (number / 10, number % 10),
            (false, _) => return None,
        }
    };
    Some(format!("{major}.{minor}"))
}

/// Trims an optional string, drops it if nothing is left, and respells the rest.
fn clean(field: &mut Option<String>, respell: impl FnOnce(&str) -> String) {
    *field = field.take().and_then(|value| {
        let value = value.trim();
        (!value.is_empty()).then(|| respell(value))
    });
}

fn normalize_host(host: &mut Host) {
    clean(&mut host.arch, canonical_arch);
    if let Some(os) = &mut host.os {
        clean(&mut os.id, str::to_lowercase);
    }
    if let Some(cloud) = &mut host.cloud {
        clean(&mut cloud.provider, str::to_lowercase);
        clean(&mut cloud.instance_type, str::to_owned);
    }
    clean(&mut host.glibc, str::to_owned);
    for flag in &mut host.cpu_flags {
        *flag = flag.trim().to_lowercase();
    }
    host.cpu_flags.retain(|f| !f.is_empty());
}

/// `uname -m` and Go/Docker/Windows names for the same two architectures.
/// (Also used for `arch:` selectors, so `arch:arm64` means `aarch64`.)
pub fn canonical_arch(arch: &str) -> String {
    let arch = arch.to_lowercase();
    match arch.as_str() {
        "arm64" => "aarch64".to_owned(),
        "amd64" | "x64" | "x86-64" => "x86_64".to_owned(),
        _ => arch,
    }
}

/// Lowercase vendor, with company names as inventories print them
/// (`NVIDIA Corporation`, `Advanced Micro Devices, Inc. [AMD/ATI]`) reduced to
/// the short name the hardware table uses, so the vendor check in enrichment
/// does not fail on spelling.
fn canonical_vendor(vendor: &str) -> String {
    let vendor = vendor.to_lowercase();
    if vendor.starts_with("advanced micro devices") {
        return "amd".to_owned();
    }
    let first_word = vendor
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .unwrap_or_default();
    match first_word {
        "nvidia" | "amd" | "intel" => first_word.to_owned(),
        _ => vendor,
    }
}

fn canonical_interconnect(interconnect: &str) -> String {
    let interconnect = interconnect.to_lowercase();
    match interconnect.as_str() {
        "pci-e" | "pci_e" | "pci express" => "pcie".to_owned(),
        "nv-link" | "nv_link" | "nv link" => "nvlink".to_owned(),
        _ => interconnect,
    }
}

fn normalize_accelerator(accelerator: &mut Accelerator) {
    clean(&mut accelerator.vendor, canonical_vendor);
    clean(&mut accelerator.model, str::to_owned);
    clean(&mut accelerator.compute_capability, |cc| {
        // An unreadable value is still the client's: keep it for the rules to see.
        canonical_compute_capability(cc).unwrap_or_else(|| cc.to_owned())
    });
    clean(&mut accelerator.interconnect, canonical_interconnect);
    clean(&mut accelerator.architecture, str::to_lowercase);
    clean(&mut accelerator.gfx_target, str::to_lowercase);
    clean(&mut accelerator.mig_profile, str::to_lowercase);
}

fn normalize_package(package: &mut Package) {
    // The name stays as the client spelled it (it is shown back in findings);
    // comparisons go through `package_key`.
    // `view::trim`: a name or version whose ends are ASCII letters or
    // digits is not run through `trim`, most of normalising a package.
    let trimmed = trim(&package.name);
    if trimmed.len() != package.name.len() {
        package.name = trimmed.to_owned();
    }
    // A manifest has hundreds of packages, nearly all already clean: keep
    // the client's strings then, rather than allocate two per package.
    let is_clean = |v: &Option<String>, lower: bool| {
        v.as_deref().is_some_and(|v| {
            !v.is_empty()
                && trim(v).len() == v.len()
                && !(lower && v.bytes().any(|b| !b.is_ascii() || b.is_ascii_uppercase()))
        })
    };
    if !is_clean(&package.version, false) {
        clean(&mut package.version, str::to_owned);
    }
    if !is_clean(&package.ecosystem, true) {
        clean(&mut package.ecosystem, str::to_lowercase);
    }
    if package.cuda.is_some() || package.torch.is_some() || !package.cuda_arch_list.is_empty() {
        clean(&mut package.cuda, str::to_owned);
        clean(&mut package.torch, str::to_owned);
        package.cuda_arch_list = canonical_arch_list(&package.cuda_arch_list);
    }
}

/// `TORCH_CUDA_ARCH_LIST` entries in `major.minor` spelling, one arch per
/// entry: clients paste the variable's value (`"7.5;8.0+PTX"`) into one entry.
fn normalize_build(build: &mut Build) {
    build.torch_cuda_arch_list = canonical_arch_list(&build.torch_cuda_arch_list);
}

/// An arch list in `major.minor` spelling, one arch per entry (a pasted
/// `"7.5;8.0+PTX"` split).
fn canonical_arch_list(list: &[String]) -> Vec<String> {
    list.iter()
        .flat_map(|entry| entry.split(|c: char| c == ';' || c == ',' || c.is_whitespace()))
        .filter(|arch| !arch.is_empty())
        .map(canonical_arch_list_entry)
        .collect()
}

/// `sm_75` → `7.5`, `8.0+ptx` → `8.0+PTX`; names PyTorch also accepts
/// (`Turing`) are kept as written.
fn canonical_arch_list_entry(entry: &str) -> String {
    let (arch, ptx) = match entry.len().checked_sub(4) {
        Some(at) if entry.is_char_boundary(at) && entry[at..].eq_ignore_ascii_case("+ptx") => {
            (&entry[..at], "+PTX")
        }
        _ => (entry, ""),
    };
    // `sm_90a`, `9.0a`, `10.0f`: in a list of build targets the letter is a
    // target of its own (arch-specific code nvcc 11.8 cannot build), kept
    // after the capability.
    let letters = arch.bytes().rev().take_while(u8::is_ascii_alphabetic).count();
    let (base, letter) = match arch.split_at(arch.len() - letters) {
        (base, letter) if base.bytes().last().is_some_and(|b| b.is_ascii_digit()) => (base, letter),
        _ => (arch, ""),
    };
    match canonical_compute_capability(base) {
        Some(cc) => format!("{cc}{}{ptx}", letter.to_ascii_lowercase()),
        None => entry.to_owned(),
    }
}

fn normalize_workload(workload: &mut Workload) {
    clean(&mut workload.engine, str::to_lowercase);
    clean(&mut workload.model, str::to_owned);
    clean(&mut workload.dtype, canonical_dtype);
    // vLLM's names for these are all lowercase (`fp8`, `awq`, `fp8_e4m3`).
    clean(&mut workload.quantization, str::to_lowercase);
    clean(&mut workload.kv_cache_dtype, str::to_lowercase);
    // Backend names are enum members: `TRITON_ATTN`, `FLASH_ATTN`.
    clean(&mut workload.attention_backend, |backend| backend.to_uppercase().replace('-', "_"));
    clean(&mut workload.mm_encoder_attention_backend, |backend| {
        backend.to_uppercase().replace('-', "_")
    });
    clean(&mut workload.model_dtype, canonical_dtype);
    clean(&mut workload.model_type, str::to_lowercase);
    clean(&mut workload.architecture, str::to_owned);
    clean(&mut workload.quantization_scheme, canonical_quantization_scheme);
    // transformers' and vLLM's names are lower case (`llama3`, `yarn`).
    clean(&mut workload.rope_scaling_type, str::to_lowercase);
    clean(&mut workload.engine_build_tensorrt, str::to_owned);
    clean(&mut workload.mode, str::to_lowercase);
    clean(&mut workload.checkpoint_format, str::to_lowercase);
    clean(&mut workload.engine_hardware_compatibility, str::to_lowercase);
    clean(&mut workload.engine_build_capability, |cc| {
        canonical_compute_capability(cc).unwrap_or_else(|| cc.to_owned())
    });
}

/// A quantization scheme in one spelling per scheme: lower case with `-`
/// for `_` and spaces (llm-compressor's preset names are matched in any
/// case: `FP8_DYNAMIC` is `fp8-dynamic`), and the names of one scheme
/// made one.
pub fn canonical_quantization_scheme(scheme: &str) -> String {
    let mut spelled = String::with_capacity(scheme.len());
    for c in scheme.trim().chars() {
        let c = if c == '_' || c.is_whitespace() { '-' } else { c.to_ascii_lowercase() };
        if !(c == '-' && spelled.ends_with('-')) {
            spelled.push(c);
        }
    }
    match spelled.as_str() {
        // compressed-tensors' PRESET_SCHEMES: "W8A8" is int8 weights and
        // activations from 0.6.0 on, and from 0.9.0 "INT8": INT8_W8A8 is
        // its "alias for W8A8" (quantization/quant_scheme.py,
        // https://github.com/vllm-project/compressed-tensors/blob/0.18.0/src/compressed_tensors/quantization/quant_scheme.py).
        "w8a8" | "int8" => "w8a8-int8",
        // The same file's NVFP4 quantizes weights and activations to 4-bit
        // floats (vLLM's CompressedTensorsW4A4Fp4), NVFP4A16 the weights
        // only (CompressedTensorsW4A16Fp4); the rules' other names of them.
        "nvfp4a4" | "w4a4-nvfp4" => "nvfp4",
        "w4a16-nvfp4" => "nvfp4a16",
        _ => return spelled,
    }
    .to_owned()
}

/// vLLM's `--dtype` aliases, and PyTorch's `torch.float16` spelling.
fn canonical_dtype(dtype: &str) -> String {
    let dtype = dtype.to_lowercase();
    let bare = dtype.strip_prefix("torch.").unwrap_or(&dtype);
    match bare {
        "half" | "fp16" | "f16" | "float16" => "float16",
        "bf16" | "bfloat16" => "bfloat16",
        "float" | "fp32" | "f32" | "float32" => "float32",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::manifest::{Container, Os};
    use super::*;

    /// The shared example manifests: `$PITFALL_FIXTURES_DIR`, else
    /// `shared/fixtures/manifests` beside the repository (as on developer
    /// machines and in CI).
    fn fixtures_dir() -> PathBuf {
        let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let candidates: Vec<PathBuf> = std::env::var_os("PITFALL_FIXTURES_DIR")
            .map(PathBuf::from)
            .into_iter()
            .chain([
                crate_dir.join("../../shared/fixtures/manifests"),
                crate_dir.join("../shared/fixtures/manifests"),
            ])
            .collect();
        candidates
            .iter()
            .find(|dir| dir.join("g5g-gemma4-vllm0271.json").is_file())
            .cloned()
            .unwrap_or_else(|| {
                panic!("example manifests not found in {candidates:?}; set PITFALL_FIXTURES_DIR")
            })
    }

    fn fixture(name: &str) -> Manifest {
        let path = fixtures_dir().join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn paths(enrichment: &Enrichment) -> Vec<&str> {
        enrichment.paths.iter().map(String::as_str).collect()
    }

    fn accelerator(model: &str) -> Accelerator {
        Accelerator { model: Some(model.to_owned()), ..Accelerator::default() }
    }

    fn with_accelerators(accelerators: Vec<Accelerator>) -> Manifest {
        Manifest { manifest_version: 1, accelerators, ..Manifest::default() }
    }

    /// Normalises, then checks a second pass changes nothing and reports nothing.
    fn normalized(mut manifest: Manifest) -> (Manifest, Enrichment) {
        let enrichment = normalize(&mut manifest);
        let mut again = manifest.clone();
        let second = normalize(&mut again);
        assert_eq!(again, manifest, "normalising twice differs from once");
        assert!(second.is_empty(), "second pass enriched {second:?}");
        (manifest, enrichment)
    }

    /// Every value of `sent` is in `after` as it was (arrays element by
    /// element, objects member by member).
    fn keeps_every_value(sent: &serde_json::Value, after: &serde_json::Value, at: &str) {
        match (sent, after) {
            (serde_json::Value::Object(s), serde_json::Value::Object(a)) => {
                for (k, v) in s {
                    let there = a.get(k).unwrap_or_else(|| panic!("{at}.{k} dropped"));
                    keeps_every_value(v, there, &format!("{at}.{k}"));
                }
            }
            (serde_json::Value::Array(s), serde_json::Value::Array(a)) => {
                assert_eq!(s.len(), a.len(), "{at}: length");
                for (i, (v, w)) in s.iter().zip(a).enumerate() {
                    keeps_every_value(v, w, &format!("{at}.{i}"));
                }
            }
            _ => assert_eq!(sent, after, "{at}"),
        }
    }

    #[test]
    fn every_fixture_parses_and_normalises_idempotently() {
        let dir = fixtures_dir();
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("fixtures dir readable") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|ext| ext == "json") {
                let text = std::fs::read_to_string(&path).expect("fixture readable");
                let manifest: Manifest = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let (after, _) = normalized(manifest.clone());
                // The shared examples are already canonical: every value
                // they hold comes through as sent; enrichment only adds.
                keeps_every_value(
                    &serde_json::to_value(&manifest).expect("serialises"),
                    &serde_json::to_value(&after).expect("serialises"),
                    &path.display().to_string(),
                );
                seen += 1;
            }
        }
        assert!(seen >= 3, "expected the three example manifests in {}", dir.display());
    }

    #[test]
    fn a6000_fixture_gets_its_compute_capability_from_the_table() {
        let (manifest, enrichment) = normalized(fixture("a6000-llama70b-single.json"));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("RTX A6000"));
        assert_eq!(gpu.compute_capability.as_deref(), Some("8.6"));
        assert_eq!(gpu.memory_bandwidth_gbps, Some(768.0));
        assert_eq!(gpu.shared_memory_per_block_kib, Some(99));
        assert_eq!(gpu.memory_mib, Some(49140), "the client's own memory is kept");
        assert_eq!(gpu.count, Some(1));
        for path in [
            "accelerators.0.compute_capability",
            "accelerators.0.memory_bandwidth_gbps",
            "accelerators.0.shared_memory_per_block_kib",
            "accelerators.0.architecture",
        ] {
            let entry = enrichment.entry(path).unwrap_or_else(|| panic!("{path} enriched"));
            assert_eq!((entry.table.as_str(), entry.key.as_str()), ("gpus", "RTX A6000"));
        }
        assert!(!enrichment.contains("accelerators.0.memory_mib"), "the client's own memory");
        // The model table fills what the fixture leaves out of Llama 2 70B.
        let w = manifest.workload.as_ref().expect("workload");
        assert_eq!((w.num_attention_heads, w.num_kv_heads), (Some(64), Some(8)));
        assert_eq!(
            enrichment.entry("workload.num_kv_heads").map(|e| e.table.as_str()),
            Some("models")
        );
    }

    #[test]
    fn g5g_fixture_gets_the_bandwidth_and_the_stacks_builds_from_the_tables() {
        let original = fixture("g5g-gemma4-vllm0271.json");
        let (manifest, enrichment) = normalized(original.clone());
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("T4G"));
        assert_eq!(gpu.memory_bandwidth_gbps, Some(277.0));
        assert_eq!(gpu.compute_capability.as_deref(), Some("7.5"));
        assert_eq!(gpu.memory_mib, Some(15360));
        assert_eq!(gpu.shared_memory_per_block_kib, Some(64));
        assert_eq!(gpu.interconnect.as_deref(), Some("pcie"));
        assert!(enrichment.contains("accelerators.0.memory_bandwidth_gbps"));
        assert!(!enrichment.contains("accelerators.0.compute_capability"), "the client sent it");
        assert_eq!(manifest.host.as_ref().and_then(|h| h.arch.as_deref()), Some("aarch64"));
        // vLLM 0.27.1's build, from the release table: its torch and CUDA.
        let vllm = manifest.packages.iter().find(|p| p.name == "vllm").expect("vllm");
        assert!(vllm.torch.is_some() && vllm.cuda.is_some(), "{vllm:?}");
        assert!(enrichment.contains("packages.vllm.torch"));
        assert!(enrichment.contains("drivers.cuda_driver"), "from driver 570.124.06");
    }

    #[test]
    fn h100_fixture_keeps_every_value_it_sent() {
        let (manifest, enrichment) = normalized(fixture("h100x8-llama70b-healthy.json"));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("H100 SXM"));
        assert_eq!(gpu.memory_mib, Some(81559));
        assert_eq!(gpu.memory_bandwidth_gbps, Some(3350.0));
        assert_eq!(gpu.count, Some(8));
        assert_eq!(gpu.interconnect.as_deref(), Some("nvlink"));
        assert!(enrichment.contains("accelerators.0.shared_memory_per_block_kib"));
        for sent in ["model", "memory_mib", "memory_bandwidth_gbps", "compute_capability", "count"]
        {
            assert!(!enrichment.contains(&format!("accelerators.0.{sent}")), "{sent} was sent");
        }
    }

    #[test]
    fn nvidia_smi_names_are_canonicalised_and_enriched() {
        let (manifest, enrichment) = normalized(with_accelerators(vec![
            Accelerator {
                vendor: Some(" NVIDIA ".into()),
                count: Some(2),
                ..accelerator("Tesla T4")
            },
            Accelerator { memory_mib: Some(81920), ..accelerator("NVIDIA A100") },
        ]));
        let [t4, a100] = manifest.accelerators.as_slice() else { panic!("two accelerators") };
        assert_eq!(t4.model.as_deref(), Some("T4"));
        assert_eq!(t4.vendor.as_deref(), Some("nvidia"));
        assert_eq!(t4.compute_capability.as_deref(), Some("7.5"));
        assert_eq!(t4.memory_mib, Some(15360));
        // Two A100s have 80 GB (SXM and PCIe, with other bandwidths):
        // memory cannot pick, so only what both share is filled.
        assert_eq!(a100.model.as_deref(), Some("A100"));
        assert_eq!(a100.memory_bandwidth_gbps, None);
        assert_eq!(a100.compute_capability.as_deref(), Some("8.0"));
        assert_eq!(a100.memory_mib, Some(81920));
        assert!(enrichment.contains("accelerators.0.memory_mib"));
        assert!(enrichment.contains("accelerators.1.vendor"), "vendor came from the table");
        assert!(!enrichment.contains("accelerators.0.vendor"), "vendor was the client's");
        assert!(!enrichment.contains("accelerators.1.memory_mib"));
        assert!(!enrichment.contains("accelerators.1.memory_bandwidth_gbps"));
        let (manifest, _) = normalized(with_accelerators(vec![Accelerator {
            memory_mib: Some(40_000),
            ..accelerator("NVIDIA A100")
        }]));
        let a100 = &manifest.accelerators[0];
        assert_eq!(a100.model.as_deref(), Some("A100 40GB"), "memory picks the variant");
        assert_eq!(a100.memory_bandwidth_gbps, Some(1555.0));
    }

    #[test]
    fn an_ambiguous_name_gets_only_what_all_variants_share() {
        let (manifest, enrichment) = normalized(with_accelerators(vec![accelerator("A100")]));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("A100"), "no variant guessed");
        assert_eq!(gpu.compute_capability.as_deref(), Some("8.0"));
        assert_eq!(gpu.shared_memory_per_block_kib, Some(163));
        assert_eq!(gpu.memory_mib, None);
        assert_eq!(gpu.memory_bandwidth_gbps, None);
        assert_eq!(
            paths(&enrichment),
            [
                "accelerators.0.architecture",
                "accelerators.0.compute_capability",
                "accelerators.0.shared_memory_per_block_kib",
                "accelerators.0.vendor",
            ]
        );
    }

    #[test]
    fn client_values_are_never_overwritten() {
        let sent = Accelerator {
            vendor: Some("nvidia".into()),
            compute_capability: Some("sm_75".into()),
            memory_mib: Some(1234),
            memory_bandwidth_gbps: Some(1.5),
            shared_memory_per_block_kib: Some(48),
            ..accelerator("T4G")
        };
        let (manifest, enrichment) = normalized(with_accelerators(vec![sent]));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.compute_capability.as_deref(), Some("7.5"), "respelled, not replaced");
        assert_eq!(gpu.memory_mib, Some(1234));
        assert_eq!(gpu.memory_bandwidth_gbps, Some(1.5));
        assert_eq!(gpu.shared_memory_per_block_kib, Some(48));
        assert_eq!(gpu.count, None, "a missing count stays missing");
        assert_eq!(paths(&enrichment), ["accelerators.0.architecture"], "only what was left out");
    }

    #[test]
    fn another_vendors_device_is_not_enriched() {
        let (manifest, enrichment) = normalized(with_accelerators(vec![Accelerator {
            vendor: Some("AMD".into()),
            ..accelerator("T4")
        }]));
        assert_eq!(manifest.accelerators[0].model.as_deref(), Some("T4"));
        assert_eq!(manifest.accelerators[0].vendor.as_deref(), Some("amd"));
        assert!(enrichment.is_empty());
        assert_eq!(enrichment.unresolved[0].path, "accelerators.0.model", "and the answer says so");
        let (manifest, _) = normalized(with_accelerators(vec![Accelerator {
            vendor: Some("NVIDIA Corporation".into()),
            ..accelerator("T4")
        }]));
        assert_eq!(manifest.accelerators[0].vendor.as_deref(), Some("nvidia"));
        assert_eq!(manifest.accelerators[0].compute_capability.as_deref(), Some("7.5"));
    }

    #[test]
    fn unknown_models_are_left_alone_and_reported() {
        let sent = Accelerator {
            vendor: Some("amd".into()),
            compute_capability: Some("gfx942".into()),
            interconnect: Some("Infinity Fabric".into()),
            ..accelerator(" MI9000Z ")
        };
        let (manifest, enrichment) = normalized(with_accelerators(vec![sent]));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("MI9000Z"));
        assert_eq!(gpu.compute_capability.as_deref(), Some("gfx942"), "unreadable CC kept as sent");
        assert_eq!(gpu.interconnect.as_deref(), Some("infinity fabric"));
        assert!(enrichment.is_empty());
        assert_eq!(enrichment.unresolved.len(), 1);
        assert_eq!(enrichment.unresolved[0].reason, "not in the GPU table");
    }

    #[test]
    fn amd_gpus_get_their_gfx_target() {
        let (manifest, enrichment) =
            normalized(with_accelerators(vec![accelerator("AMD Instinct MI300X")]));
        let gpu = &manifest.accelerators[0];
        assert_eq!(gpu.model.as_deref(), Some("MI300X"));
        assert_eq!(gpu.gfx_target.as_deref(), Some("gfx942"));
        assert_eq!(gpu.vendor.as_deref(), Some("amd"));
        assert_eq!(gpu.compute_capability, None, "no CUDA capability on an AMD GPU");
        assert!(enrichment.contains("accelerators.0.gfx_target"));
    }

    #[test]
    fn empty_strings_count_as_missing() {
        let sent =
            Accelerator { compute_capability: Some("  ".into()), ..accelerator("NVIDIA T4G") };
        let (manifest, enrichment) = normalized(with_accelerators(vec![sent, accelerator("")]));
        assert_eq!(manifest.accelerators[0].compute_capability.as_deref(), Some("7.5"));
        assert!(enrichment.contains("accelerators.0.compute_capability"));
        assert_eq!(manifest.accelerators[1], Accelerator::default());
    }

    #[test]
    fn compute_capability_spellings() {
        let cases = [
            ("7.5", Some("7.5")),
            (" 8.6 ", Some("8.6")),
            ("75", Some("7.5")),
            ("sm_75", Some("7.5")),
            ("SM75", Some("7.5")),
            ("compute_86", Some("8.6")),
            ("sm_90a", Some("9.0")),
            ("sm_100f", Some("10.0")),
            ("9.0a", None),
            ("90", Some("9.0")),
            ("100", Some("10.0")),
            ("sm_120", Some("12.0")),
            ("120", Some("12.0")),
            ("12", Some("12.0")),
            ("12.0", Some("12.0")),
            ("8", Some("8.0")),
            ("8.60", Some("8.6")),
            ("9.00", Some("9.0")),
            ("08.0", Some("8.0")),
            ("", None),
            ("sm_", None),
            ("sm_7", None),
            ("gfx942", None),
            ("7.x", None),
            ("1234", None),
            ("-7.5", None),
        ];
        for (raw, want) in cases {
            assert_eq!(canonical_compute_capability(raw).as_deref(), want, "{raw:?}");
            if let Some(want) = want {
                assert_eq!(
                    canonical_compute_capability(want).as_deref(),
                    Some(want),
                    "stable: {want}"
                );
            }
        }
    }

    #[test]
    fn a_numeric_compute_capability_from_json_is_respelled() {
        let json = r#"{"manifest_version": 1, "accelerators": [
            {"model": "RTX 4090", "compute_capability": 8.9},
            {"model": "mystery", "compute_capability": 75},
            {"model": "mystery", "compute_capability": 9}]}"#;
        let manifest: Manifest = serde_json::from_str(json).expect("manifest parses");
        let (manifest, enrichment) = normalized(manifest);
        let ccs: Vec<_> =
            manifest.accelerators.iter().map(|a| a.compute_capability.as_deref()).collect();
        assert_eq!(ccs, [Some("8.9"), Some("7.5"), Some("9.0")]);
        assert!(!enrichment.contains("accelerators.0.compute_capability"));
    }

    #[test]
    fn host_fields() {
        for (arch, want) in [
            ("arm64", "aarch64"),
            ("ARM64", "aarch64"),
            ("aarch64", "aarch64"),
            (" amd64 ", "x86_64"),
            ("x64", "x86_64"),
            ("x86-64", "x86_64"),
            ("X86_64", "x86_64"),
            ("ppc64le", "ppc64le"),
            ("RISCV64", "riscv64"),
        ] {
            let host = Host {
                arch: Some(arch.into()),
                os: Some(Os { id: Some("Ubuntu".into()), ..Os::default() }),
                ..Host::default()
            };
            let (manifest, _) =
                normalized(Manifest { host: Some(host), ..with_accelerators(vec![]) });
            let host = manifest.host.expect("host kept");
            assert_eq!(host.arch.as_deref(), Some(want), "{arch:?}");
            assert_eq!(host.os.and_then(|os| os.id).as_deref(), Some("ubuntu"));
        }
    }

    #[test]
    fn workload_fields() {
        for (dtype, want) in [
            ("half", "float16"),
            ("FP16", "float16"),
            ("float16", "float16"),
            ("bf16", "bfloat16"),
            ("torch.bfloat16", "bfloat16"),
            ("fp32", "float32"),
            ("float", "float32"),
            ("Auto", "auto"),
        ] {
            let workload = Workload {
                engine: Some(" vLLM".into()),
                dtype: Some(dtype.into()),
                quantization: Some(" AWQ ".into()),
                kv_cache_dtype: Some("FP8_E4M3 ".into()),
                attention_backend: Some("triton_attn".into()),
                model: Some(" google/gemma-4-E2B-it ".into()),
                quantization_scheme: Some("FP8_DYNAMIC".into()),
                rope_scaling_type: Some(" Llama3".into()),
                engine_build_tensorrt: Some("8.6.1 ".into()),
                engine_version_compatible: Some(true),
                ..Workload::default()
            };
            let (manifest, _) =
                normalized(Manifest { workload: Some(workload), ..with_accelerators(vec![]) });
            let workload = manifest.workload.expect("workload kept");
            assert_eq!(workload.dtype.as_deref(), Some(want), "{dtype:?}");
            assert_eq!(workload.engine.as_deref(), Some("vllm"));
            assert_eq!(workload.quantization.as_deref(), Some("awq"));
            assert_eq!(workload.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
            assert_eq!(workload.attention_backend.as_deref(), Some("TRITON_ATTN"));
            assert_eq!(workload.quantization_scheme.as_deref(), Some("fp8-dynamic"));
            assert_eq!(workload.rope_scaling_type.as_deref(), Some("llama3"));
            assert_eq!(workload.engine_build_tensorrt.as_deref(), Some("8.6.1"));
            assert_eq!(workload.engine_version_compatible, Some(true));
            assert_eq!(
                workload.model.as_deref(),
                Some("google/gemma-4-E2B-it"),
                "model id case kept"
            );
        }
    }

    #[test]
    fn quantization_schemes_have_one_spelling_each() {
        for (sent, want) in [
            ("W8A8", "w8a8-int8"),
            ("INT8", "w8a8-int8"),
            ("w8a8_int8", "w8a8-int8"),
            ("W8A8-INT8", "w8a8-int8"),
            ("w8a8-fp8", "w8a8-fp8"),
            ("FP8", "fp8"),
            ("FP8_DYNAMIC", "fp8-dynamic"),
            ("fp8-dynamic", "fp8-dynamic"),
            ("FP8_BLOCK", "fp8-block"),
            ("W4A16", "w4a16"),
            ("W4A16_ASYM", "w4a16-asym"),
            ("W8A16", "w8a16"),
            ("NVFP4", "nvfp4"),
            ("nvfp4a4", "nvfp4"),
            ("W4A4_NVFP4", "nvfp4"),
            ("NVFP4A16", "nvfp4a16"),
            ("w4a16__nvfp4", "nvfp4a16"),
            (" MXFP4 ", "mxfp4"),
            ("W4AFP8", "w4afp8"),
            ("W4A8", "w4a8"),
            ("Some Custom", "some-custom"),
        ] {
            let got = canonical_quantization_scheme(sent);
            assert_eq!(got, want, "{sent:?}");
            assert_eq!(canonical_quantization_scheme(&got), got, "stable: {sent:?}");
        }
    }

    #[test]
    fn container_packages_and_build() {
        let manifest = Manifest {
            container: Some(Container { ipc: Some("Host".into()), ..Container::default() }),
            packages: vec![Package {
                name: " Flash_Attn ".into(),
                version: Some("2.7.4.post1 ".into()),
                ecosystem: Some("PyPI".into()),
                ..Package::default()
            }],
            build: Some(Build {
                torch_cuda_arch_list: vec![
                    "7.5;8.0+ptx".into(),
                    "sm_90".into(),
                    "sm_90a".into(),
                    "10.0F+PTX".into(),
                    "Turing".into(),
                    " ".into(),
                ],
                ..Build::default()
            }),
            ..with_accelerators(vec![])
        };
        let (manifest, _) = normalized(manifest);
        assert_eq!(manifest.container.and_then(|c| c.ipc).as_deref(), Some("host"));
        let package = &manifest.packages[0];
        assert_eq!(package.name, "Flash_Attn", "spelling kept, only trimmed");
        assert_eq!(package.version.as_deref(), Some("2.7.4.post1"));
        assert_eq!(package.ecosystem.as_deref(), Some("pypi"));
        assert_eq!(package_key(&package.name), "flash-attn");
        let archs = manifest.build.map(|b| b.torch_cuda_arch_list).unwrap_or_default();
        assert_eq!(archs, ["7.5", "8.0+PTX", "9.0", "9.0a", "10.0f+PTX", "Turing"]);
    }

    /// The fast checks that leave a clean package's strings alone decide
    /// as the plain rule does: trim every field, drop an empty version or
    /// ecosystem, lower-case the ecosystem.
    #[test]
    fn a_package_is_normalised_as_trimming_every_field_would() {
        let spellings = [
            "torch",
            " torch",
            "torch ",
            "\u{a0}torch",
            "torch\u{3000}",
            "2.7.4.post1",
            "2.7.4+cu126",
            "1.0-",
            "-1",
            "",
            " ",
            "\t\n",
            "PyPI",
            "pypi",
            "Ünïcode",
            "ünï",
            "a b",
            "9",
            ".x.",
        ];
        for name in spellings {
            for other in spellings {
                let mut package = Package {
                    name: name.into(),
                    version: Some(other.into()),
                    ecosystem: Some(other.into()),
                    ..Package::default()
                };
                normalize_package(&mut package);
                let trimmed = other.trim();
                let want = (!trimmed.is_empty()).then_some(trimmed);
                assert_eq!(package.name, name.trim(), "{name:?}");
                assert_eq!(package.version.as_deref(), want, "{other:?}");
                assert_eq!(package.ecosystem, want.map(str::to_lowercase), "{other:?}");
            }
        }
    }

    #[test]
    fn package_keys_follow_pep_503() {
        assert_eq!(package_key("vllm"), "vllm");
        assert_eq!(package_key("Flash_Attn"), "flash-attn");
        assert_eq!(package_key("zope.interface"), "zope-interface");
        assert_eq!(package_key("Foo.-_Bar__baz"), "foo-bar-baz");
        assert_eq!(package_key(" torch "), "torch");
        assert_eq!(package_key(&package_key("A._-b")), package_key("A._-b"));
    }

    #[test]
    fn unknown_fields_survive() {
        let json = r#"{"manifest_version": 1, "future": {"x": 1},
            "accelerators": [{"model": "L4", "new_field": true}]}"#;
        let manifest: Manifest = serde_json::from_str(json).expect("manifest parses");
        let (manifest, _) = normalized(manifest);
        assert!(manifest.extra.contains_key("future"));
        assert!(manifest.accelerators[0].extra.contains_key("new_field"));
        assert_eq!(manifest.accelerators[0].compute_capability.as_deref(), Some("8.9"));
    }
}
