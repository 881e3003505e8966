//! The candidate index: from the rules' `applies_to` selectors to the few
//! rules a manifest can match, so a check costs in proportion to its
//! candidates, not to the size of the registry.
//!
//! Each rule is filed under one key, its most selective selector: a
//! package (with its version range, if any), else a compute-capability
//! range, else an engine, else an accelerator vendor, else an
//! architecture; rules without such a selector are always candidates. A
//! manifest's keys pick buckets; within a package or capability bucket an
//! interval tree over the ranges picks the rules whose range contains the
//! manifest's version, in time that grows with the answer. A version that
//! is missing or does not parse takes the whole bucket: those rules must
//! run so they can say `undetermined`. The rules found must then satisfy
//! all of their selectors (the caller checks).

use std::collections::{HashMap, HashSet};

use foldhash::fast::RandomState;

use pitfall_contract::selector::{ManifestFacts, Selector};
use pitfall_version::{Specifier, Version};

use crate::interval::{IntervalTree, Range, non_empty};
use crate::tuning::Tuning;

/// Rules under one key: those without a range, and those with one.
#[derive(Debug, Default, Clone)]
struct Ranged {
    unranged: Vec<u32>,
    ranged: IntervalTree,
}

impl Ranged {
    fn build(entries: Vec<(Option<Range>, u32)>, tuning: &Tuning) -> Ranged {
        let mut unranged = Vec::new();
        let mut ranges = Vec::new();
        for (range, i) in entries {
            match range {
                Some(r) if (r.lower.is_some() || r.upper.is_some()) && non_empty(&r) => {
                    ranges.push((r, i))
                }
                // No range, an unbounded one, or one that admits nothing
                // (the selector check then excludes it): scanned as is.
                _ => unranged.push(i),
            }
        }
        Ranged {
            unranged,
            ranged: IntervalTree::tuned(ranges, tuning.interval_tree, tuning.packed_tree),
        }
    }

    /// The rules for one value of the key (`None`: cannot be decided).
    fn take(&self, value: Option<&Version>, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.unranged);
        if self.ranged.is_empty() {
            return;
        }
        match value {
            // Ranges bound public versions; a local label (`+cu121`) only
            // costs a copy when there is one.
            Some(v) if v.local().is_some() => self.ranged.stab(&v.without_local(), out),
            Some(v) => self.ranged.stab(v, out),
            None => out.extend_from_slice(self.ranged.all()),
        }
    }

    fn is_empty(&self) -> bool {
        self.unranged.is_empty() && self.ranged.is_empty()
    }
}

/// Positions of rules (into the rule set) by key.
#[derive(Debug, Default, Clone)]
pub struct CandidateIndex {
    /// Looked up once per package of every manifest checked: foldhash,
    /// seeded per index, not SipHash.
    packages: HashMap<String, Ranged, RandomState>,
    capability: Ranged,
    engines: HashMap<String, Vec<u32>>,
    vendors: HashMap<String, Vec<u32>>,
    arches: HashMap<String, Vec<u32>>,
    always: Vec<u32>,
    /// Every package a selector of the set names (filed under it or not:
    /// a rule's second `package:` selector), so a check can leave the
    /// others out of its facts with one lookup each.
    named: HashSet<String, RandomState>,
}

/// The selector a rule is filed under, by selectivity: a ranged package
/// before a bare one, then capability, engine, vendor, arch.
fn key(selectors: &[Selector]) -> Option<&Selector> {
    selectors.iter().filter(|s| !matches!(s, Selector::Container)).min_by_key(|s| s.selectivity())
}

fn range(spec: &Specifier) -> Range {
    let (lower, upper) = spec.bounds();
    Range { lower, upper }
}

impl CandidateIndex {
    /// Indexes rules given by their selectors, in rule-set order.
    pub fn new<'a>(rules: impl IntoIterator<Item = &'a [Selector]>) -> CandidateIndex {
        CandidateIndex::tuned(rules, &Tuning::default())
    }

    /// [`CandidateIndex::new`] with `tuning`'s interval trees.
    pub fn tuned<'a>(
        rules: impl IntoIterator<Item = &'a [Selector]>,
        tuning: &Tuning,
    ) -> CandidateIndex {
        let mut index = CandidateIndex::default();
        let mut packages: HashMap<String, Vec<(Option<Range>, u32)>> = HashMap::new();
        let mut capability = Vec::new();
        for (i, selectors) in rules.into_iter().enumerate() {
            let i = i as u32;
            for s in selectors {
                if let Selector::Package { name, .. } = s {
                    index.named.insert(name.clone());
                }
            }
            match key(selectors) {
                Some(Selector::Package { name, versions }) => {
                    packages
                        .entry(name.clone())
                        .or_default()
                        .push((versions.as_ref().map(range), i));
                }
                Some(Selector::Capability(spec)) => capability.push((Some(range(spec)), i)),
                Some(Selector::Engine(e)) => index.engines.entry(e.clone()).or_default().push(i),
                Some(Selector::Accelerator(v)) => {
                    index.vendors.entry(v.clone()).or_default().push(i)
                }
                Some(Selector::Arch(a)) => index.arches.entry(a.clone()).or_default().push(i),
                Some(Selector::Container) | None => index.always.push(i),
            }
        }
        index.packages = packages.into_iter().map(|(k, v)| (k, Ranged::build(v, tuning))).collect();
        index.capability = Ranged::build(capability, tuning);
        index
    }

    /// Whether some rule's selectors name the package with this key: a
    /// package no selector names changes no check's candidates, so a
    /// check's facts may leave it out (`ManifestFacts::of_packages`).
    pub fn names_package(&self, key: &str) -> bool {
        self.named.contains(key)
    }

    /// Positions of the rules whose key the manifest (given by its facts)
    /// has, in ascending order; the caller still checks all of each
    /// rule's selectors. Costs one hash lookup per package of the
    /// manifest plus what it finds, not the number of rules.
    pub fn candidates(&self, m: &ManifestFacts<'_>) -> Vec<u32> {
        let mut out = self.always.clone();
        for (key, versions) in m.packages() {
            let Some(bucket) = self.packages.get(key) else { continue };
            for v in versions {
                // Parsed only for the packages some rule is filed under.
                bucket.take(v.get(), &mut out);
            }
        }
        if !self.capability.is_empty() {
            for cc in m.capabilities() {
                self.capability.take(cc.as_ref(), &mut out);
            }
        }
        let mut take = |bucket: Option<&Vec<u32>>| {
            if let Some(bucket) = bucket {
                out.extend_from_slice(bucket);
            }
        };
        if let Some(engine) = m.engine() {
            take(self.engines.get(engine));
        }
        for v in m.vendors() {
            take(self.vendors.get(*v));
        }
        if let Some(arch) = m.arch() {
            take(self.arches.get(arch));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_contract::normalize::normalize;
    use pitfall_contract::{Manifest, manifest_from_value};

    fn selectors(texts: &[&str]) -> Vec<Selector> {
        texts.iter().map(|t| Selector::parse(t).unwrap_or_else(|e| panic!("{e}"))).collect()
    }

    /// The manifest as a check sees it: normalised (`Prepared::new`'s step).
    fn manifest(json: serde_json::Value) -> Manifest {
        let mut manifest = manifest_from_value(json).expect("valid");
        normalize(&mut manifest);
        manifest
    }

    /// Facts of only the packages some selector names decide every rule
    /// as the facts of the whole manifest do: a package named only by a
    /// rule's second selector is kept, one no selector names is not.
    #[test]
    fn facts_of_the_named_packages_admit_the_same_rules() {
        let rules: Vec<Vec<Selector>> = [
            &["package:vllm>=0.20", "package:torch<2.0"][..],
            &["package:vllm", "package:flash-attn"],
            &["package:Flash_Attn>=2"],
            &["accelerator:nvidia", "package:triton"],
            &["arch:aarch64"],
        ]
        .iter()
        .map(|t| selectors(t))
        .collect();
        let index = CandidateIndex::new(rules.iter().map(Vec::as_slice));
        for name in ["vllm", "torch", "flash-attn", "triton"] {
            assert!(index.names_package(name), "{name}");
        }
        assert!(!index.names_package("requests"));
        let admitted = |facts: &ManifestFacts<'_>| -> Vec<u32> {
            index
                .candidates(facts)
                .into_iter()
                .filter(|&i| rules[i as usize].iter().all(|s| s.holds_in(facts)))
                .collect()
        };
        for torch in ["1.13", "2.1"] {
            for flash in [None, Some("2.5.8"), Some("1.0")] {
                let mut packages = vec![
                    serde_json::json!({"name": "vllm", "version": "0.27.1"}),
                    serde_json::json!({"name": "torch", "version": torch}),
                    serde_json::json!({"name": "requests", "version": "2.31"}),
                    serde_json::json!({"name": "triton", "version": "3.0"}),
                ];
                if let Some(v) = flash {
                    packages.push(serde_json::json!({"name": "Flash_Attn", "version": v}));
                }
                let m = manifest(serde_json::json!({
                    "manifest_version": 1, "host": {"arch": "aarch64"},
                    "accelerators": [{"vendor": "nvidia", "compute_capability": "9.0"}],
                    "packages": packages,
                }));
                let all = admitted(&ManifestFacts::new(&m));
                let named = ManifestFacts::of_packages(&m, |k| index.names_package(k));
                assert!(named.package_versions("requests").is_none());
                assert_eq!(admitted(&named), all, "torch {torch}, flash-attn {flash:?}");
                assert!(all.contains(&4) && all.contains(&3));
            }
        }
    }

    /// The index may return more than the selectors admit, never less.
    #[test]
    fn candidates_are_a_superset_of_the_rules_whose_selectors_hold() {
        let rules: Vec<Vec<Selector>> = [
            &["package:vllm<0.20"][..],
            &["package:vllm>=0.20,<0.27.2rc0", "accelerator:nvidia"],
            &["package:vllm"],
            &["package:vllm>=1.0"],
            &["package:vllm==0.27.1"],
            &["package:torch<2.0"],
            &["capability:<8.0", "accelerator:nvidia"],
            &["capability:>=9.0,<10.0"],
            &["accelerator:nvidia"],
            &["engine:vllm"],
            &["arch:aarch64"],
            &["container"],
            &[],
            &["package:vllm>2,<1"],
        ]
        .iter()
        .map(|t| selectors(t))
        .collect();
        let index = CandidateIndex::new(rules.iter().map(Vec::as_slice));
        let gpu = |cc: Option<&str>| match cc {
            Some(cc) => serde_json::json!({"vendor": "nvidia", "compute_capability": cc}),
            None => serde_json::json!({"vendor": "nvidia", "model": "Unknown Board"}),
        };
        for vllm in
            [Some("0.19.1"), Some("0.27.1"), Some("0.27.2"), Some("1.2+cu12"), Some("main"), None]
        {
            for cc in [Some("7.5"), Some("9.0"), Some("12.0"), None] {
                let m = manifest(serde_json::json!({
                    "manifest_version": 1,
                    "host": {"arch": "aarch64"},
                    "accelerators": [gpu(cc)],
                    "packages": [{"name": "vllm", "version": vllm}, {"name": "torch", "version": "2.1"}],
                    "workload": {"engine": "vllm"},
                }));
                let got = index.candidates(&ManifestFacts::new(&m));
                for (i, s) in rules.iter().enumerate() {
                    if s.iter().all(|s| s.holds(&m)) {
                        assert!(
                            got.contains(&(i as u32)),
                            "rule {i} {s:?} missing for vllm {vllm:?}, cc {cc:?}"
                        );
                    }
                }
            }
        }
        // And it prunes: a current vLLM on a Hopper GPU skips the old ranges.
        let m = manifest(serde_json::json!({
            "manifest_version": 1, "accelerators": [gpu(Some("9.0"))],
            "packages": [{"name": "vllm", "version": "0.27.2"}],
        }));
        assert_eq!(index.candidates(&ManifestFacts::new(&m)), vec![2, 7, 8, 11, 12, 13]);
    }
}
