//! The release table (`data/releases.json`): what a release of vLLM,
//! SGLang, TGI, PyTorch or flash-attn was built with (its torch, its CUDA,
//! the GPU architectures its kernels cover, its Pythons, its image), read
//! at that release; and which driver each CUDA release needs.
//!
//! A user who reports `vllm 0.10.0` says, without knowing it, which torch
//! and CUDA run and which GPUs have kernels: enrichment fills those from
//! here, so rules ask "which CUDA does this vLLM use" instead of each
//! hard-coding it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use pitfall_version::name::package_key;
use pitfall_version::{Dotted, Version, cuda_tag};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::source::{Source, parse};

const TABLE_JSON: &str = include_str!("../data/releases.json");

/// One release of a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Release {
    /// PEP 503 name: `vllm`, `sglang`, `text-generation-inference`,
    /// `torch`, `flash-attn`.
    pub package: String,
    /// The release, as its project spells it.
    pub version: String,
    /// The torch it pins or requires (vLLM, SGLang, TGI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    /// The CUDA of its default build (the PyPI wheel, or TGI's image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    /// Other CUDA builds the project publishes for the release.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_variants: Vec<String>,
    /// The GPU architectures the default build's kernels cover (x86_64),
    /// `+PTX` where PTX is embedded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_arch_list: Vec<String>,
    /// The same for the Linux aarch64 build, where it differs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_arch_list_aarch64: Vec<String>,
    /// Per CUDA build (torch), where they differ.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cuda_arch_list_by_variant: BTreeMap<String, Vec<String>>,
    /// The torch releases its wheels were built for (flash-attn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub torch_builds: Vec<String>,
    /// Requires-Python.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The official image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The CUDA of the official image's base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_cuda_base: Option<String>,
    /// Where each value was read.
    pub sources: Vec<Source>,
    /// What else was recorded while reading the release (per-module arch
    /// lists, nvcc versions, notes): evidence for people, not read here.
    #[serde(flatten)]
    pub evidence: BTreeMap<String, Value>,
}

/// The driver a CUDA release needs (NVIDIA's CUDA release notes, Table 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverCuda {
    /// The CUDA release, `major.minor`.
    pub cuda: String,
    /// The Linux driver its GA release needs.
    pub min_driver_linux: String,
    /// The lowest Linux driver of its major's minor-version compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor_compat_min_driver_linux: Option<String>,
    /// Where it was read.
    pub source: String,
    /// Update releases, notes, how it was verified.
    #[serde(flatten)]
    pub evidence: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct TableFile {
    #[allow(dead_code)]
    format: u32,
    #[allow(dead_code)]
    #[serde(default)]
    notes: Value,
    releases: Vec<Release>,
    driver_cuda: Vec<DriverCuda>,
}

struct Table {
    releases: Vec<Release>,
    /// Each release's version, parsed (same order).
    versions: Vec<Option<Version>>,
    driver_cuda: Vec<DriverCuda>,
}

fn loaded() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let file = parse::<TableFile>("releases.json", TABLE_JSON);
        let versions = file.releases.iter().map(|r| Version::parse(&r.version).ok()).collect();
        let mut driver_cuda = file.driver_cuda;
        driver_cuda.sort_by_key(|d| Dotted::parse(&d.cuda).ok());
        Table { releases: file.releases, versions, driver_cuda }
    })
}

/// Every release of the table.
pub fn table() -> &'static [Release] {
    &loaded().releases
}

/// Every CUDA release's driver floor, oldest CUDA first.
pub fn driver_cuda() -> &'static [DriverCuda] {
    &loaded().driver_cuda
}

/// The release `version` of `package` (its public version: a local label
/// such as `+cu126` does not count).
pub fn release(package: &str, version: &str) -> Option<&'static Release> {
    let table = loaded();
    let key = package_key(package);
    let wanted = Version::parse(version).ok()?;
    table.releases.iter().zip(&table.versions).find_map(|(r, v)| {
        (r.package == key && v.as_ref().is_some_and(|v| v.cmp_public(&wanted).is_eq())).then_some(r)
    })
}

/// Every release of `package` the table has, as written.
pub fn versions(package: &str) -> impl Iterator<Item = &'static str> {
    let key = package_key(package);
    loaded().releases.iter().filter(move |r| r.package == key).map(|r| r.version.as_str())
}

/// What one installed build of a package was built with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Build {
    /// The torch it pins.
    pub torch: Option<String>,
    /// Its CUDA: the local label's (`+cu128`), else the release's default.
    pub cuda: Option<String>,
    /// The architectures its kernels cover, when the table knows them for
    /// this CUDA build and CPU architecture.
    pub cuda_arch_list: Vec<String>,
}

/// What `package` at `version` (as installed: `2.11.0+cu126`) was built
/// with on a host of `host_arch` (`x86_64`, `aarch64`; `None`: unknown),
/// and the release it comes from. A build the table does not describe
/// (another CUDA variant with no arch list, an unknown host) gets only
/// what does not depend on it.
pub fn build_of(
    package: &str,
    version: &str,
    host_arch: Option<&str>,
) -> Option<(Build, &'static Release)> {
    let release = release(package, version)?;
    let local = Version::parse(version).ok()?.local().map(str::to_owned);
    // A local label other than a CUDA build's (`+ppu1.5.0.oe`) marks a
    // vendor's own build, which the project's release does not describe.
    if local.as_deref().is_some_and(|l| cuda_tag(l).is_none()) {
        return None;
    }
    let tagged =
        local.as_deref().and_then(cuda_tag).map(|(major, minor)| format!("{major}.{minor}"));
    let default = release.cuda.clone();
    let cuda = tagged.clone().or_else(|| default.clone());
    let is_default = tagged.is_none() || tagged == default;
    let cuda_arch_list = match (host_arch, is_default) {
        (Some("x86_64"), true) => release.cuda_arch_list.clone(),
        (Some("aarch64"), true) if !release.cuda_arch_list_aarch64.is_empty() => {
            release.cuda_arch_list_aarch64.clone()
        }
        (Some("x86_64"), false) => tagged
            .as_ref()
            .and_then(|c| release.cuda_arch_list_by_variant.get(c))
            .cloned()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    Some((Build { torch: release.torch.clone(), cuda, cuda_arch_list }, release))
}

/// The newest CUDA release a Linux driver of `driver` runs at its full
/// feature level (its GA driver floor is met), with its row.
pub fn newest_cuda_for_driver(driver: &str) -> Option<&'static DriverCuda> {
    let driver = Dotted::parse(driver).ok()?;
    loaded()
        .driver_cuda
        .iter()
        .rfind(|d| Dotted::parse(&d.min_driver_linux).is_ok_and(|floor| floor <= driver))
}

/// The driver floor of CUDA `cuda` (`12.9`), or `None` if the table does
/// not have that release.
pub fn driver_floor(cuda: &str) -> Option<&'static DriverCuda> {
    let cuda = Dotted::parse(cuda).ok()?;
    loaded().driver_cuda.iter().find(|d| Dotted::parse(&d.cuda).is_ok_and(|c| c == cuda))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::source::{is_citable, starts_citable};

    #[test]
    fn every_release_is_well_formed_and_sourced() {
        let mut seen = HashSet::new();
        for r in table() {
            let what = format!("{} {}", r.package, r.version);
            assert!(seen.insert(what.clone()), "{what} twice");
            assert!(Version::parse(&r.version).is_ok(), "{what}: version");
            assert_eq!(r.package, package_key(&r.package), "{what}: PEP 503 name");
            for cuda in r.cuda.iter().chain(&r.cuda_variants) {
                assert!(Dotted::parse(cuda).is_ok(), "{what}: CUDA {cuda}");
            }
            for arch in r.cuda_arch_list.iter().chain(&r.cuda_arch_list_aarch64) {
                let cc = arch.trim_end_matches("+PTX").trim_end_matches(['a', 'f']);
                assert!(
                    cc.split_once('.')
                        .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok()),
                    "{what}: arch {arch}"
                );
            }
            assert!(!r.sources.is_empty(), "{what}: no source");
            for s in &r.sources {
                assert!(is_citable(&s.url), "{what}: source {:?}", s.url);
            }
        }
        for d in driver_cuda() {
            assert!(Dotted::parse(&d.cuda).is_ok() && Dotted::parse(&d.min_driver_linux).is_ok());
            assert!(starts_citable(&d.source), "CUDA {}: {}", d.cuda, d.source);
        }
    }

    #[test]
    fn a_releases_build_is_what_its_wheel_carries() {
        let (build, _) = build_of("vllm", "0.10.0", Some("x86_64")).expect("in the table");
        assert_eq!(build.torch.as_deref(), Some("2.7.1"));
        assert_eq!(build.cuda.as_deref(), Some("12.8"));
        assert!(build.cuda_arch_list.iter().any(|a| a == "7.5"));
        let (torch, _) = build_of("torch", "2.11.0+cu130", Some("aarch64")).expect("in the table");
        assert_eq!(torch.cuda.as_deref(), Some("13.0"));
        assert!(!torch.cuda_arch_list.iter().any(|a| a == "7.5"), "no sm_75 on aarch64");
        let (other, _) = build_of("torch", "2.11.0+cu126", Some("x86_64")).expect("in the table");
        assert_eq!(other.cuda.as_deref(), Some("12.6"), "the local label decides the CUDA");
        assert!(build_of("vllm", "0.0.1", None).is_none());
        assert!(build_of("vllm", "0.7.3+ppu1.5.0.oe", None).is_none(), "a vendor's build");
    }

    #[test]
    fn drivers_and_cuda_floors() {
        assert_eq!(newest_cuda_for_driver("535.230.02").map(|d| d.cuda.as_str()), Some("12.2"));
        assert_eq!(driver_floor("12.9").map(|d| d.min_driver_linux.as_str()), Some("575.51.03"));
        assert!(newest_cuda_for_driver("300.1").is_none());
    }
}
