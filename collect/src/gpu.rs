//! What the nvidia-smi parsers agree on: a list of GPUs in nvidia-smi's
//! index order, and how that list becomes manifest accelerators.

use pitfall_contract::manifest::Accelerator;
use pitfall_contract::normalize::canonical_compute_capability;
use pitfall_facts::gpus::{self, Resolution};

use crate::topo::Topology;

/// The facts nvidia-smi gives about the machine's NVIDIA GPUs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NvidiaSmi {
    /// Kernel driver version, e.g. `580.159.04`.
    pub(crate) driver: Option<String>,
    /// The highest CUDA version the driver supports, e.g. `13.0`.
    pub(crate) cuda: Option<String>,
    /// One per device, in nvidia-smi's index order.
    pub(crate) gpus: Vec<Gpu>,
}

/// One GPU as nvidia-smi describes it (no identifiers).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Gpu {
    /// Product name, e.g. `NVIDIA H200`.
    pub(crate) name: Option<String>,
    /// Framebuffer memory in MiB.
    pub(crate) memory_mib: Option<u64>,
    /// `major.minor`.
    pub(crate) compute_capability: Option<String>,
}

/// `143771 MiB`, `143771` (csv,nounits), `16 GiB` → MiB.
pub(crate) fn parse_mib(value: &str) -> Option<u64> {
    let value = value.trim();
    let (number, unit) = match value.split_once(char::is_whitespace) {
        Some((n, u)) => (n, u.trim()),
        None => (value, "MiB"),
    };
    let n: u64 = number.parse().ok()?;
    match unit {
        "MiB" | "MB" => Some(n),
        "GiB" | "GB" => n.checked_mul(1024),
        "KiB" | "KB" => Some(n / 1024),
        _ => None,
    }
}

/// Adds what the CSV query knows and the XML does not (compute capability) to
/// the XML's GPUs, when both lists describe the same devices.
pub(crate) fn merge(mut xml: NvidiaSmi, csv: &NvidiaSmi) -> NvidiaSmi {
    let same_devices = xml.gpus.len() == csv.gpus.len()
        && xml
            .gpus
            .iter()
            .zip(&csv.gpus)
            .all(|(a, b)| a.name.is_none() || b.name.is_none() || a.name == b.name);
    if same_devices {
        for (gpu, other) in xml.gpus.iter_mut().zip(&csv.gpus) {
            gpu.compute_capability =
                gpu.compute_capability.take().or_else(|| other.compute_capability.clone());
            gpu.memory_mib = gpu.memory_mib.or(other.memory_mib);
            gpu.name = gpu.name.take().or_else(|| other.name.clone());
        }
    }
    xml.driver = xml.driver.or_else(|| csv.driver.clone());
    xml.cuda = xml.cuda.or_else(|| csv.cuda.clone());
    xml
}

/// One accelerator entry per distinct (model, memory, compute capability),
/// with a count, in order of first appearance. The model name is the hardware
/// table's canonical one when the table knows it (`NVIDIA H200` → `H200`).
/// `interconnect` is `nvlink` when the topology shows NVLink between two GPUs
/// of the entry, else `pcie`; absent without a topology.
pub(crate) fn accelerators(gpus: &[Gpu], topology: Option<&Topology>) -> Vec<Accelerator> {
    let mut groups: Vec<(Accelerator, Vec<usize>)> = Vec::new();
    for (index, gpu) in gpus.iter().enumerate() {
        let resolved = gpu.name.as_deref().map(|name| gpus::resolve(name, gpu.memory_mib));
        let (model, vendor) = match (gpu.name.as_deref(), resolved) {
            (_, Some(Resolution::Found(found))) => (
                Some(found.variant.map_or(&found.gpu.model, |v| &v.name).clone()),
                found.gpu.vendor.clone(),
            ),
            (name, _) => (name.map(str::to_owned), vendor_of(name.unwrap_or_default()).to_owned()),
        };
        let cc = gpu
            .compute_capability
            .as_deref()
            .map(|cc| canonical_compute_capability(cc).unwrap_or_else(|| cc.to_owned()));
        let found = groups.iter_mut().find(|(a, _)| {
            a.model == model && a.memory_mib == gpu.memory_mib && a.compute_capability == cc
        });
        match found {
            Some((_, members)) => members.push(index),
            None => groups.push((
                Accelerator {
                    vendor: Some(vendor),
                    model,
                    memory_mib: gpu.memory_mib,
                    compute_capability: cc,
                    ..Accelerator::default()
                },
                vec![index],
            )),
        }
    }
    groups
        .into_iter()
        .map(|(mut accelerator, members)| {
            accelerator.count = u32::try_from(members.len()).ok();
            accelerator.interconnect = topology
                .map(|t| if t.nvlink_within(&members) { "nvlink" } else { "pcie" }.to_owned());
            accelerator
        })
        .collect()
}

/// The vendor a device name the table does not know shows: AMD's names
/// say so (`AMD Instinct MI300X`, `Radeon RX 7900 XTX`); the tools these
/// names come from (nvidia-smi, CUDA's collect_env) otherwise name NVIDIA's.
fn vendor_of(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    if ["amd", "radeon", "instinct"].iter().any(|w| lower.contains(w)) { "amd" } else { "nvidia" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str, mib: u64, cc: &str) -> Gpu {
        Gpu { name: Some(name.into()), memory_mib: Some(mib), compute_capability: Some(cc.into()) }
    }

    #[test]
    fn identical_gpus_are_one_entry_with_a_count() {
        let gpus = vec![gpu("NVIDIA H200", 143_771, "9.0"), gpu("NVIDIA H200", 143_771, "9.0")];
        let acc = accelerators(&gpus, None);
        assert_eq!(acc.len(), 1);
        assert_eq!(acc[0].count, Some(2));
        assert_eq!(acc[0].model.as_deref(), Some("H200 SXM"), "its memory names the variant");
        assert_eq!(acc[0].vendor.as_deref(), Some("nvidia"));
        assert_eq!(acc[0].compute_capability.as_deref(), Some("9.0"));
        assert_eq!(acc[0].interconnect, None, "no topology, no claim");
    }

    #[test]
    fn mixed_models_are_one_entry_each_and_unknown_names_stay_as_printed() {
        let gpus = vec![
            gpu("NVIDIA A100-SXM4-80GB", 81_920, "8.0"),
            gpu("NVIDIA RTX PRO 9000", 200_000, "12.0"),
            gpu("NVIDIA A100-SXM4-80GB", 81_920, "8.0"),
        ];
        let topo = Topology { gpus: 3, nvlink_pairs: vec![(0, 2)] };
        let acc = accelerators(&gpus, Some(&topo));
        assert_eq!(acc.len(), 2);
        assert_eq!((acc[0].model.as_deref(), acc[0].count), (Some("A100 80GB"), Some(2)));
        assert_eq!(acc[0].interconnect.as_deref(), Some("nvlink"));
        assert_eq!((acc[1].model.as_deref(), acc[1].count), (Some("NVIDIA RTX PRO 9000"), Some(1)));
        assert_eq!(acc[1].interconnect.as_deref(), Some("pcie"));
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_mib("143771 MiB"), Some(143_771));
        assert_eq!(parse_mib(" 15360 "), Some(15360));
        assert_eq!(parse_mib("80 GiB"), Some(81_920));
        assert_eq!(parse_mib("[N/A]"), None);
    }

    #[test]
    fn merge_takes_compute_capability_from_the_csv() {
        let xml = NvidiaSmi {
            driver: Some("580.159.04".into()),
            cuda: Some("13.0".into()),
            gpus: vec![Gpu {
                name: Some("NVIDIA H200".into()),
                memory_mib: Some(143_771),
                compute_capability: None,
            }],
        };
        let csv =
            NvidiaSmi { gpus: vec![gpu("NVIDIA H200", 143_771, "9.0")], ..NvidiaSmi::default() };
        let merged = merge(xml.clone(), &csv);
        assert_eq!(merged.gpus[0].compute_capability.as_deref(), Some("9.0"));
        assert_eq!(merged.cuda.as_deref(), Some("13.0"));
        // A CSV about other devices is not mixed in.
        let other =
            NvidiaSmi { gpus: vec![gpu("NVIDIA L4", 23_034, "8.9")], ..NvidiaSmi::default() };
        assert_eq!(merge(xml.clone(), &other).gpus, xml.gpus);
    }
}
