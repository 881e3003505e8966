//! The GPU table (`data/gpus.json`): what an accelerator model is, so a
//! manifest that names only `"GTX 1080 Ti"` or `"NVIDIA A100-SXM4-80GB"` is
//! enriched with its compute capability (or AMD `gfx` target),
//! architecture, shared memory, and, when the variant is known, its memory
//! and bandwidth.
//!
//! A model has variants (memory sizes, form factors). A name that picks a
//! variant gets its memory; a name that does not gets only what every
//! variant shares, unless the reported memory picks one within
//! [`MEMORY_TOLERANCE`]. A name that fits several models resolves to none
//! of them ([`Resolution::Ambiguous`]): a wrong model's facts are worse
//! than none.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::source::{Source, parse, words};

const TABLE_JSON: &str = include_str!("../data/gpus.json");

/// How far (as a fraction of a variant's memory) a reported memory size may
/// be from it and still pick it: a MIG slice or a misreport picks nothing.
pub const MEMORY_TOLERANCE: f64 = 0.10;

/// Words tools put before a model name that say nothing about the model:
/// `NVIDIA GeForce RTX 4090` and `RTX 4090` are one card.
const NOISE_PREFIXES: &[&str] = &["nvidia", "tesla", "geforce", "amd", "radeon", "instinct"];

/// Product-line words a loose name may leave out (`2080ti` for `RTX 2080
/// Ti`); used only for a name written as one word.
const LINE_WORDS: &[&str] = &["rtx", "gtx", "quadro", "rx"];

/// One GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Canonical product name, as a manifest carries it after
    /// normalisation: `T4G`, `A100`, `RTX 4090`, `MI300X`.
    pub model: String,
    /// `nvidia` or `amd`.
    pub vendor: String,
    /// Architecture family, lowercase: `turing`, `ampere`, `cdna3`, ...
    pub architecture: String,
    /// `datacenter`, `workstation`, `geforce`, `jetson` or `radeon`.
    pub segment: String,
    /// NVIDIA: compute capability `major.minor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// AMD: the LLVM target, e.g. `gfx942`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_target: Option<String>,
    /// Maximum (opt-in) shared memory per thread block, KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_memory_per_block_kib: Option<u32>,
    /// Names tools print that fit every variant.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Memory and form-factor versions; empty where no memory was sourced.
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Where the model's facts were read.
    pub sources: Vec<Source>,
}

/// One version of a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Its name, e.g. `A100 80GB`.
    pub name: String,
    /// Device memory in MiB (the vendor's GB x 1024 unless an nvidia-smi
    /// reading of `memory.total` was sourced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Peak memory bandwidth, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth_gbps: Option<f64>,
    /// Names tools print for this variant only.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Where its memory and bandwidth were read.
    pub source: String,
}

#[derive(Deserialize)]
struct TableFile {
    #[allow(dead_code)]
    format: u32,
    #[allow(dead_code)]
    #[serde(default)]
    notes: Vec<String>,
    gpus: Vec<Gpu>,
}

/// What a name resolved to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The model.
    pub gpu: &'static Gpu,
    /// The variant, when the name or the reported memory decided it.
    pub variant: Option<&'static Variant>,
}

/// The answer for a name.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// One model (and maybe its variant).
    Found(Found),
    /// Several models fit the name; none is chosen.
    Ambiguous(Vec<&'static Gpu>),
    /// No model fits.
    Unknown,
}

/// A name of the table: which model (and variant) it names.
struct Name {
    gpu: usize,
    variant: Option<usize>,
    tokens: Vec<String>,
    /// The first token with a digit: the model number a partial name must hold.
    number: Option<String>,
}

struct Table {
    gpus: Vec<Gpu>,
    names: Vec<Name>,
    /// Joined tokens → names.
    exact: HashMap<String, Vec<usize>>,
    /// Tokens without separators (`rtx2080ti`), and without the product
    /// line (`2080ti`) → names.
    compact: HashMap<String, Vec<usize>>,
}

fn loaded() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| build(parse::<TableFile>("gpus.json", TABLE_JSON).gpus))
}

fn build(gpus: Vec<Gpu>) -> Table {
    let mut names = Vec::new();
    for (g, gpu) in gpus.iter().enumerate() {
        for name in std::iter::once(&gpu.model).chain(&gpu.aliases) {
            names.push((g, None, name));
        }
        for (v, variant) in gpu.variants.iter().enumerate() {
            for name in std::iter::once(&variant.name).chain(&variant.aliases) {
                names.push((g, Some(v), name));
            }
        }
    }
    let mut table = Table {
        gpus: Vec::new(),
        names: Vec::new(),
        exact: HashMap::new(),
        compact: HashMap::new(),
    };
    for (gpu, variant, name) in names {
        let tokens = name_tokens(name);
        if tokens.is_empty() {
            continue;
        }
        let i = table.names.len();
        table.exact.entry(tokens.join(" ")).or_default().push(i);
        let compact: String = tokens.concat();
        let bare: String = tokens
            .iter()
            .skip_while(|t| LINE_WORDS.contains(&t.as_str()))
            .map(String::as_str)
            .collect();
        table.compact.entry(compact.clone()).or_default().push(i);
        if bare != compact && !bare.is_empty() {
            table.compact.entry(bare).or_default().push(i);
        }
        let number = tokens.iter().find(|t| t.bytes().any(|b| b.is_ascii_digit())).cloned();
        table.names.push(Name { gpu, variant, tokens, number });
    }
    table.gpus = gpus;
    table
}

/// A name's words, with leading vendor and brand words dropped.
fn name_tokens(name: &str) -> Vec<String> {
    let mut tokens = words(name);
    let noise = tokens.iter().take_while(|t| NOISE_PREFIXES.contains(&t.as_str())).count();
    tokens.drain(..noise);
    tokens
}

/// Every model of the table, in file order.
pub fn table() -> &'static [Gpu] {
    &loaded().gpus
}

/// What `name` is, with `memory_mib` (as a client reported it) picking a
/// variant when the name does not.
///
/// A name matches ignoring case, a leading `NVIDIA`/`Tesla`/`GeForce`/
/// `AMD`/`Radeon`/`Instinct`, and how words are joined: `nvidia t4g`,
/// `Tesla V100-SXM2-16GB`, `a100 80gb`. A name written as one word may
/// leave out spaces and the product line (`2080ti`, `a10080gb`). A partial
/// name that holds the model number resolves when one model fits (`A6000`
/// is the `RTX A6000`; `4000` fits several and resolves to none).
pub fn resolve(name: &str, memory_mib: Option<u64>) -> Resolution {
    let table = loaded();
    let query = name_tokens(name);
    if query.is_empty() {
        return Resolution::Unknown;
    }
    let found = table
        .exact
        .get(&query.join(" "))
        .cloned()
        .filter(|names| !names.is_empty())
        .or_else(|| {
            (query.len() == 1)
                .then(|| table.compact.get(&query[0]).cloned())
                .flatten()
                .filter(|names| same_target(table, names))
        })
        .unwrap_or_else(|| partial(table, &query));
    let mut gpus: Vec<usize> = found.iter().map(|&n| table.names[n].gpu).collect();
    gpus.sort_unstable();
    gpus.dedup();
    match gpus.as_slice() {
        [] => Resolution::Unknown,
        [g] => {
            let gpu = &table.gpus[*g];
            let named: Vec<usize> = found.iter().filter_map(|&n| table.names[n].variant).collect();
            let variant = match named.as_slice() {
                [v, rest @ ..] if rest.iter().all(|r| r == v) => Some(&gpu.variants[*v]),
                _ => memory_mib.and_then(|m| closest_by_memory(gpu, m)).or_else(|| only(gpu)),
            };
            Resolution::Found(Found { gpu, variant })
        }
        several => Resolution::Ambiguous(several.iter().map(|&g| &table.gpus[g]).collect()),
    }
}

/// Whether all these names name one target (one model, one variant).
fn same_target(table: &Table, names: &[usize]) -> bool {
    let target = |n: usize| (table.names[n].gpu, table.names[n].variant);
    names
        .split_first()
        .is_some_and(|(first, rest)| rest.iter().all(|&n| target(n) == target(*first)))
}

/// Names whose words include every word of the query, the model number
/// among them.
fn partial(table: &Table, query: &[String]) -> Vec<usize> {
    table
        .names
        .iter()
        .enumerate()
        .filter(|(_, name)| {
            query.iter().all(|q| name.tokens.contains(q))
                && name.number.as_ref().is_some_and(|n| query.contains(n))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The variant whose memory is nearest `memory_mib`, if it is the only
/// nearest and within [`MEMORY_TOLERANCE`].
fn closest_by_memory(gpu: &'static Gpu, memory_mib: u64) -> Option<&'static Variant> {
    let distance = |v: &Variant| v.memory_mib.map(|m| m.abs_diff(memory_mib));
    let best =
        gpu.variants.iter().filter(|v| v.memory_mib.is_some()).min_by_key(|v| distance(v))?;
    let d = distance(best)?;
    let ties = gpu.variants.iter().filter(|v| distance(v) == Some(d)).count();
    // Memory sizes are a few hundred thousand MiB at most: exact in f64.
    let within = (d as f64) <= best.memory_mib? as f64 * MEMORY_TOLERANCE;
    (ties == 1 && within).then_some(best)
}

/// A model's one variant when the product comes in one version only: the
/// table names such a variant as the model itself.
fn only(gpu: &'static Gpu) -> Option<&'static Variant> {
    match gpu.variants.as_slice() {
        [v] if name_tokens(&v.name) == name_tokens(&gpu.model) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::source::{is_citable, starts_citable};

    fn found(name: &str, memory: Option<u64>) -> (String, Option<String>) {
        match resolve(name, memory) {
            Resolution::Found(f) => (f.gpu.model.clone(), f.variant.map(|v| v.name.clone())),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn the_names_people_and_tools_write_resolve() {
        assert_eq!(found("GTX 1080 Ti", None).0, "GTX 1080 Ti");
        assert_eq!(found("2080ti", None).0, "RTX 2080 Ti");
        assert_eq!(found("NVIDIA GeForce RTX 2080 Ti", None).0, "RTX 2080 Ti");
        assert_eq!(found("NVIDIA GeForce RTX 5090 D", None).0, "RTX 5090 D");
        assert_eq!(found("RTX 5070 Ti", None).0, "RTX 5070 Ti");
        assert_eq!(found("Quadro RTX 5000", None).0, "Quadro RTX 5000");
        assert_eq!(found("a100 80gb", None), ("A100".into(), Some("A100 80GB".into())));
        assert_eq!(found("Tesla V100-SXM2-16GB", None).1.as_deref(), Some("V100 16GB"));
        assert_eq!(found("NVIDIA A100-SXM4-40GB", None).1.as_deref(), Some("A100 40GB"));
        assert_eq!(found("AMD Instinct MI300X", None).0, "MI300X");
        assert_eq!(found("nvidia t4g", None), ("T4G".into(), Some("T4G".into())));
    }

    #[test]
    fn memory_picks_a_variant_only_when_it_decides() {
        assert_eq!(found("NVIDIA A100", Some(40_000)).1.as_deref(), Some("A100 40GB"));
        assert_eq!(found("A100", None).1, None, "the name alone does not say which A100");
        // Two 80 GB A100s (SXM and PCIe): memory cannot tell them apart.
        assert_eq!(found("A100", Some(81_920)).1, None);
        assert_eq!(found("A100", Some(10_000)).1, None, "a slice is no variant");
    }

    #[test]
    fn ambiguous_and_unknown_names_resolve_to_nothing() {
        assert!(matches!(resolve("4000", None), Resolution::Ambiguous(_)));
        assert_eq!(resolve("Voodoo 5 5500", None), Resolution::Unknown);
        assert_eq!(resolve("", None), Resolution::Unknown);
        assert_eq!(resolve("RTX", None), Resolution::Unknown, "no model number");
    }

    #[test]
    fn every_entry_is_well_formed_and_sourced() {
        const ARCHITECTURES: &[&str] = &[
            "maxwell",
            "pascal",
            "volta",
            "turing",
            "ampere",
            "ada",
            "hopper",
            "blackwell",
            "gcn5",
            "cdna1",
            "cdna2",
            "cdna3",
            "cdna4",
            "rdna2",
            "rdna3",
            "rdna4",
        ];
        for gpu in table() {
            let what = &gpu.model;
            assert!(ARCHITECTURES.contains(&gpu.architecture.as_str()), "{what}: architecture");
            match gpu.vendor.as_str() {
                "nvidia" => {
                    let cc =
                        gpu.compute_capability.as_deref().unwrap_or_else(|| panic!("{what}: CC"));
                    let (major, minor) =
                        cc.split_once('.').unwrap_or_else(|| panic!("{what}: {cc}"));
                    let major: u32 = major.parse().unwrap_or_else(|_| panic!("{what}: {cc}"));
                    let minor: u32 = minor.parse().unwrap_or_else(|_| panic!("{what}: {cc}"));
                    assert_eq!(cc, format!("{major}.{minor}"), "{what}");
                    assert!((5..=12).contains(&major), "{what}: {cc} outside Maxwell..Blackwell");
                    assert!(gpu.gfx_target.is_none(), "{what}");
                }
                "amd" => {
                    let gfx = gpu.gfx_target.as_deref().unwrap_or_else(|| panic!("{what}: gfx"));
                    assert!(gfx.starts_with("gfx") && gfx.len() >= 6, "{what}: {gfx}");
                    assert!(gpu.compute_capability.is_none(), "{what}");
                }
                other => panic!("{what}: vendor {other}"),
            }
            assert!(!gpu.sources.is_empty(), "{what}: no source");
            for s in &gpu.sources {
                assert!(is_citable(&s.url), "{what}: source {:?}", s.url);
            }
            for v in &gpu.variants {
                assert!(starts_citable(&v.source), "{what} / {}: source {:?}", v.name, v.source);
                assert!(v.memory_mib.is_none_or(|m| (1024..=1_048_576).contains(&m)), "{}", v.name);
                assert!(
                    v.memory_bandwidth_gbps.is_none_or(|b| b > 10.0 && b < 20_000.0),
                    "{}",
                    v.name
                );
            }
        }
        assert!(table().len() >= 150, "{} models", table().len());
    }

    #[test]
    fn no_name_belongs_to_two_entries() {
        let table = loaded();
        // A single-version product's variant may carry the model's name.
        let target = |name: &Name| {
            let gpu = &table.gpus[name.gpu];
            let same_as_model = name
                .variant
                .is_some_and(|v| name_tokens(&gpu.variants[v].name) == name_tokens(&gpu.model));
            (name.gpu, if same_as_model { None } else { name.variant })
        };
        let mut seen: HashMap<String, (usize, Option<usize>)> = HashMap::new();
        for name in &table.names {
            let key = name.tokens.join(" ");
            if let Some(prev) = seen.insert(key.clone(), target(name)) {
                assert_eq!(prev, target(name), "{key:?} names two entries");
            }
        }
    }
}
