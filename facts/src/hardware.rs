//! The hardware table: what a known accelerator model is, so that a manifest
//! naming only `"T4G"` can be enriched with its compute capability, memory,
//! bandwidth and shared memory (DESIGN.md, "The manifest (v1)").
//!
//! The table is data (`facts/data/hardware.json`), embedded at build time and
//! parsed once. Its numbers come from KNOWLEDGE.md part C plus a few vendor
//! datasheets; every entry names its `source`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The table as shipped; a parse failure is a build bug (a unit test parses it).
const TABLE_JSON: &str = include_str!("../data/hardware.json");

/// Words tools put before a model name that say nothing about the model:
/// `NVIDIA GeForce RTX 4090` and `RTX 4090` are the same card.
const NOISE_PREFIXES: &[&str] = &["nvidia", "tesla", "geforce"];

/// How far (as a fraction of the table's figure) a reported memory size may be
/// from a variant's and still pick it. A MIG slice or a misreport should give
/// no answer rather than the wrong variant's bandwidth.
const MEMORY_TOLERANCE: f64 = 0.10;

/// One accelerator model's specifications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Canonical short name, as manifests carry it after normalisation:
    /// `T4G`, `A100 40GB`, `H100 SXM`, `RTX A6000`.
    pub model: String,
    /// Vendor, lowercase: `nvidia`.
    pub vendor: String,
    /// Compute capability, `major.minor`: `7.5`.
    pub compute_capability: String,
    /// Device memory in MiB as the driver reports it (not marketing GB × 1024),
    /// so it can be compared with what a client reports.
    pub memory_mib: u64,
    /// Peak memory bandwidth in GB/s (T4G: the field report's measurement).
    pub memory_bandwidth_gbps: f64,
    /// Maximum (opt-in) shared memory per thread block in KiB.
    pub shared_memory_per_block_kib: u32,
    /// Architecture family, lowercase: `turing`, `volta`, `ampere`, `ada`, `hopper`.
    pub architecture: String,
    /// Names tools print for this model (`Tesla T4`, `NVIDIA A100-SXM4-40GB`).
    pub aliases: Vec<String>,
    /// Where the numbers come from.
    pub source: String,
}

/// The JSON file's shape; `notes` are for people reading the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[allow(dead_code)]
    format: u32,
    #[serde(default)]
    #[allow(dead_code)]
    notes: Vec<String>,
    gpus: Vec<GpuSpec>,
}

/// The parsed table with its lookup indexes.
struct Table {
    specs: Vec<GpuSpec>,
    /// Name key (canonical name or alias) → index into `specs`.
    exact: HashMap<String, usize>,
    /// Every name key of every entry, as tokens, for partial names.
    names: Vec<(usize, Vec<String>)>,
    /// Per entry, the token that identifies the model family (`a100`, `t4g`).
    model_tokens: Vec<String>,
}

/// The table, parsed on first use.
fn loaded() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let file: TableFile = serde_json::from_str(TABLE_JSON).expect(
            "facts/data/hardware.json is embedded at build time and must parse (see its unit test)",
        );
        build(file.gpus)
    })
}

/// Builds the indexes. Should two entries claim one name, the first keeps it;
/// the unit tests reject such a table, so this only matters for a broken build.
fn build(specs: Vec<GpuSpec>) -> Table {
    let mut exact = HashMap::new();
    let mut names = Vec::new();
    let mut model_tokens = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        for name in std::iter::once(&spec.model).chain(&spec.aliases) {
            let tokens = name_tokens(name);
            if tokens.is_empty() {
                continue;
            }
            exact.entry(tokens.join(" ")).or_insert(i);
            names.push((i, tokens));
        }
        model_tokens.push(model_token(&spec.model).unwrap_or_default());
    }
    Table { specs, exact, names, model_tokens }
}

/// A name as lookup compares it: lowercase words, with separators (spaces,
/// `-`, `_`) unified, leading vendor/brand words dropped, and a trailing `...`
/// (nvidia-smi's table truncates long names) removed.
fn name_tokens(name: &str) -> Vec<String> {
    let name = name.trim();
    let name = name.trim_end_matches('…').trim_end_matches("...");
    let mut tokens: Vec<String> = name
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect();
    let noise = tokens.iter().take_while(|t| NOISE_PREFIXES.contains(&t.as_str())).count();
    tokens.drain(..noise);
    tokens
}

/// The first word of a canonical name that has a digit in it: the model
/// number (`a100` of `A100 40GB`, `a6000` of `RTX A6000`). A partial name must
/// contain it, so `RTX` or `40GB` alone match nothing.
fn model_token(model: &str) -> Option<String> {
    name_tokens(model).into_iter().find(|t| t.chars().any(|c| c.is_ascii_digit()))
}

/// Every entry of the table, in file order.
pub fn table() -> &'static [GpuSpec] {
    &loaded().specs
}

/// The entry for a model name (canonical or any alias), or `None` when the
/// name is unknown or fits several entries (`A100`: 40GB or 80GB?). See
/// [`lookup_with_memory`] to let the reported memory decide.
///
/// Matching ignores case, a leading `NVIDIA`/`Tesla`/`GeForce`, and whether
/// words are separated by spaces, `-` or `_`: `nvidia t4g`, `Tesla T4`,
/// `a100 sxm4 40gb` all resolve. A partial name that holds the model number
/// resolves when only one entry fits (`A6000` → `RTX A6000`).
pub fn lookup(name: &str) -> Option<&'static GpuSpec> {
    lookup_with_memory(name, None)
}

/// Like [`lookup`], but when the name alone fits several entries, picks the
/// one whose memory is closest to `memory_mib` (`NVIDIA A100` + 81920 →
/// `A100 80GB`). Gives `None` if two variants are equally close (same memory)
/// or the closest is more than 10% off, because a wrong variant's numbers are
/// worse than none. A name that matches one entry exactly wins over memory.
pub fn lookup_with_memory(name: &str, memory_mib: Option<u64>) -> Option<&'static GpuSpec> {
    let candidates = candidates(name);
    match candidates.as_slice() {
        [] => None,
        [only] => Some(*only),
        several => memory_mib.and_then(|memory| closest_by_memory(several, memory)),
    }
}

/// Every entry a name could mean: one for an exact name or an unambiguous
/// partial name, several for an ambiguous one (`V100`, `H100`), none for an
/// unknown one. Lets a caller use what all candidates agree on (every `A100`
/// has compute capability 8.0) without guessing the variant.
pub fn candidates(name: &str) -> Vec<&'static GpuSpec> {
    let table = loaded();
    let query = name_tokens(name);
    if query.is_empty() {
        return Vec::new();
    }
    if let Some(&i) = table.exact.get(&query.join(" ")) {
        return vec![&table.specs[i]];
    }
    // A partial name: all its words appear in one of the entry's names, and
    // one of them is the entry's model number.
    let mut found: Vec<usize> = Vec::new();
    for (i, tokens) in &table.names {
        let fits =
            query.iter().all(|q| tokens.contains(q)) && query.contains(&table.model_tokens[*i]);
        if fits && !found.contains(i) {
            found.push(*i);
        }
    }
    found.into_iter().map(|i| &table.specs[i]).collect()
}

/// The candidate whose memory is nearest `memory_mib`, if it is the only
/// nearest one and within [`MEMORY_TOLERANCE`].
fn closest_by_memory(candidates: &[&'static GpuSpec], memory_mib: u64) -> Option<&'static GpuSpec> {
    let distance = |spec: &GpuSpec| spec.memory_mib.abs_diff(memory_mib);
    let best = candidates.iter().copied().min_by_key(|spec| distance(spec))?;
    let ties = candidates.iter().filter(|spec| distance(spec) == distance(best)).count();
    // Memory sizes are a few hundred thousand MiB at most: exact in f64.
    let within = (distance(best) as f64) <= best.memory_mib as f64 * MEMORY_TOLERANCE;
    (ties == 1 && within).then_some(best)
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;

    /// Parses a `major.minor` compute capability (`"8.6"`) into numbers.
    fn parse_compute_capability(cc: &str) -> Option<(u32, u32)> {
        let (major, minor) = cc.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    }

    #[test]
    fn embedded_table_parses() {
        let file: TableFile = serde_json::from_str(TABLE_JSON).expect("hardware.json parses");
        assert!(!file.gpus.is_empty());
        assert_eq!(table().len(), file.gpus.len());
    }

    #[test]
    fn every_entry_is_well_formed() {
        const ARCHITECTURES: &[&str] = &["turing", "volta", "ampere", "ada", "hopper"];
        for spec in table() {
            let what = &spec.model;
            let (major, minor) =
                parse_compute_capability(&spec.compute_capability).unwrap_or_else(|| {
                    panic!(
                        "{what}: compute capability {:?} is not major.minor",
                        spec.compute_capability
                    )
                });
            assert_eq!(
                spec.compute_capability,
                format!("{major}.{minor}"),
                "{what}: CC spelled canonically"
            );
            assert!(major >= 1, "{what}: CC major");
            assert!(spec.memory_mib > 0, "{what}: memory");
            assert!(
                spec.memory_bandwidth_gbps.is_finite() && spec.memory_bandwidth_gbps > 0.0,
                "{what}: bandwidth"
            );
            assert!(spec.shared_memory_per_block_kib > 0, "{what}: shared memory");
            assert_eq!(spec.vendor, spec.vendor.to_lowercase(), "{what}: vendor lowercase");
            assert!(!spec.vendor.is_empty(), "{what}: vendor");
            assert!(
                ARCHITECTURES.contains(&spec.architecture.as_str()),
                "{what}: architecture {}",
                spec.architecture
            );
            assert!(!spec.source.trim().is_empty(), "{what}: source");
            assert_eq!(spec.model, spec.model.trim(), "{what}: model trimmed");
            assert!(
                model_token(&spec.model).is_some(),
                "{what}: canonical name has a model number"
            );
        }
    }

    #[test]
    fn canonical_names_are_unique() {
        let mut seen = HashSet::new();
        for spec in table() {
            assert!(
                seen.insert(name_tokens(&spec.model)),
                "duplicate canonical name {}",
                spec.model
            );
        }
    }

    #[test]
    fn no_name_maps_to_two_entries() {
        let mut owner: HashMap<String, &str> = HashMap::new();
        for spec in table() {
            for name in std::iter::once(&spec.model).chain(&spec.aliases) {
                let key = name_tokens(name).join(" ");
                assert!(
                    !key.is_empty(),
                    "{}: alias {name:?} is empty after normalisation",
                    spec.model
                );
                if let Some(other) = owner.insert(key.clone(), &spec.model) {
                    assert_eq!(
                        other, spec.model,
                        "{name:?} ({key}) names both {other} and {}",
                        spec.model
                    );
                }
            }
        }
    }

    #[test]
    fn every_name_resolves_to_its_own_entry() {
        for spec in table() {
            for name in std::iter::once(&spec.model).chain(&spec.aliases) {
                let found = lookup(name).map(|s| s.model.as_str());
                assert_eq!(found, Some(spec.model.as_str()), "{name:?}");
            }
        }
    }

    #[test]
    fn knowledge_part_c_rows_are_present() {
        let expect = [
            ("T4", "7.5", 320.0, 64),
            ("T4G", "7.5", 277.0, 64),
            ("V100 16GB", "7.0", 900.0, 96),
            ("V100 32GB", "7.0", 900.0, 96),
            ("A10G", "8.6", 600.0, 99),
            ("L4", "8.9", 300.0, 99),
            ("A100 40GB", "8.0", 1555.0, 163),
            ("A100 80GB", "8.0", 2039.0, 163),
            ("RTX A6000", "8.6", 768.0, 99),
            ("RTX 3090", "8.6", 936.0, 99),
            ("RTX 4090", "8.9", 1008.0, 99),
            ("H100 SXM", "9.0", 3350.0, 227),
            ("H200", "9.0", 4800.0, 227),
            ("H100 PCIe", "9.0", 2000.0, 227),
            ("A10", "8.6", 600.0, 99),
            ("L40S", "8.9", 864.0, 99),
        ];
        for (model, cc, bandwidth, shm) in expect {
            let spec = table()
                .iter()
                .find(|s| s.model == model)
                .unwrap_or_else(|| panic!("{model} missing"));
            assert_eq!(spec.compute_capability, cc, "{model}");
            assert_eq!(spec.memory_bandwidth_gbps, bandwidth, "{model}");
            assert_eq!(spec.shared_memory_per_block_kib, shm, "{model}");
        }
        assert_eq!(table().len(), expect.len(), "an entry without a check here");
        assert_eq!(lookup("T4G").map(|s| s.memory_mib), Some(15360));
        assert_eq!(lookup("H200").map(|s| s.memory_mib), Some(143771));
    }

    #[test]
    fn forgiving_names() {
        let model = |name: &str| lookup(name).map(|s| s.model.as_str());
        assert_eq!(model("nvidia t4g"), Some("T4G"));
        assert_eq!(model("T4G"), Some("T4G"));
        assert_eq!(model("NVIDIA T4G"), Some("T4G"));
        assert_eq!(model("  NVIDIA_T4G "), Some("T4G"));
        assert_eq!(model("Tesla T4"), Some("T4"));
        assert_eq!(model("NVIDIA Tesla T4"), Some("T4"));
        assert_eq!(model("T4"), Some("T4"));
        assert_eq!(model("A100-SXM4-40GB"), Some("A100 40GB"));
        assert_eq!(model("a100 sxm4 40gb"), Some("A100 40GB"));
        assert_eq!(model("a100--sxm4__40GB"), Some("A100 40GB"));
        assert_eq!(model("NVIDIA A100 80GB PCIe"), Some("A100 80GB"));
        assert_eq!(model("NVIDIA H100 80GB HBM3"), Some("H100 SXM"));
        assert_eq!(model("H100-SXM5-80GB"), Some("H100 SXM"));
        assert_eq!(model("NVIDIA GeForce RTX 4090"), Some("RTX 4090"));
        assert_eq!(model("GeForce RTX 3090"), Some("RTX 3090"));
        assert_eq!(model("Tesla V100-SXM2-32GB"), Some("V100 32GB"));
        assert_eq!(model("NVIDIA RTX A6000"), Some("RTX A6000"));
        assert_eq!(model("A6000"), Some("RTX A6000"), "model number alone, one fit");
        assert_eq!(model("A10"), Some("A10"), "A10 is not A10G");
        assert_eq!(model("NVIDIA A10G"), Some("A10G"));
        assert_eq!(model("NVIDIA L40S"), Some("L40S"));
        assert_eq!(model("NVIDIA L4"), Some("L4"));
    }

    #[test]
    fn unknown_or_vague_names_resolve_to_nothing() {
        for name in [
            "",
            "  ",
            "NVIDIA",
            "RTX",
            "40GB",
            "SXM4",
            "RTX 6000",
            "MI300X",
            "A100 MIG 1g.5gb",
            "T4 G",
        ] {
            assert!(lookup(name).is_none(), "{name:?}");
        }
    }

    #[test]
    fn ambiguous_names_need_memory() {
        let model =
            |name: &str, mem: Option<u64>| lookup_with_memory(name, mem).map(|s| s.model.as_str());
        assert_eq!(model("A100", None), None);
        assert_eq!(model("NVIDIA A100", None), None);
        assert_eq!(model("NVIDIA A100", Some(81920)), Some("A100 80GB"));
        assert_eq!(model("A100", Some(40537)), Some("A100 40GB"), "older drivers' 40GB figure");
        assert_eq!(model("A100 SXM4", Some(81000)), Some("A100 80GB"));
        assert_eq!(model("V100", Some(16160)), Some("V100 16GB"));
        assert_eq!(
            model("Tesla V100-SXM2...", Some(32510)),
            Some("V100 32GB"),
            "nvidia-smi truncation"
        );
        // Both H100s report 81559 MiB: memory cannot choose.
        assert_eq!(model("H100", Some(81559)), None);
        // A MIG slice is far from every variant: no guess.
        assert_eq!(model("A100", Some(9728)), None);
        // An exact name is not second-guessed by memory.
        assert_eq!(model("A100 40GB", Some(81920)), Some("A100 40GB"));
        let all: Vec<_> = candidates("A100").iter().map(|s| s.model.as_str()).collect();
        assert_eq!(all, ["A100 40GB", "A100 80GB"]);
    }

    #[test]
    fn compute_capability_parses() {
        assert_eq!(parse_compute_capability("7.5"), Some((7, 5)));
        assert_eq!(parse_compute_capability("12.0"), Some((12, 0)));
        assert_eq!(parse_compute_capability("75"), None);
        assert_eq!(parse_compute_capability("7.x"), None);
    }
}
