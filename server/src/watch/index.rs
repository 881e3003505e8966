//! The fact index: the engine's candidate index turned around. Where the
//! engine files rules under selector keys and asks which rules a manifest
//! can match, this files stored manifests under the facts selectors read
//! (each package's key with its version, the accelerators' vendors and
//! compute capabilities, the arch, the engine, a container image) and asks
//! which manifests a rule's `applies_to` admits. A new vLLM rule is then
//! evaluated on the manifests that list vLLM in its range, and no other.
//!
//! The facts are those of the normalised, enriched manifest (a T4G without
//! a capability has 7.5), as a check sees them, and admission follows
//! `Selector::holds_in` exactly: a version or capability that is missing or
//! does not parse cannot be excluded (the test below holds the two side by
//! side). Names and versions are interned, so a manifest costs a few words
//! per package it lists.
//!
//! The index forgets a row as soon as it learns the row is gone: a watch's
//! rows are written all together (created, or replaced whole), so rows of
//! a watch read at a higher seq supersede the ones it holds; a deleted
//! watch is read from the store's deletions (`Watcher::catch_up`).

use std::collections::HashMap;

use pitfall_contract::selector::{ManifestFacts, Selector};
use pitfall_contract::{Manifest, Prepared};
use pitfall_version::{Specifier, Version};

/// An interned value's number; [`NONE`] for a value that is absent.
type Id = u32;
const NONE: Id = Id::MAX;

/// Strings (and their parsed versions) by number.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<Box<str>, Id>,
    versions: Vec<Option<Version>>,
}

impl Interner {
    fn id(&mut self, text: &str) -> Id {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.versions.len() as Id;
        self.ids.insert(text.into(), id);
        self.versions.push(None);
        id
    }

    fn version_id(&mut self, version: &Version) -> Id {
        let id = self.id(version.as_str());
        if self.versions[id as usize].is_none() {
            self.versions[id as usize] = Some(version.clone());
        }
        id
    }

    fn get(&self, text: &str) -> Option<Id> {
        self.ids.get(text).copied()
    }

    fn version(&self, id: Id) -> Option<&Version> {
        if id == NONE { None } else { self.versions.get(id as usize)?.as_ref() }
    }
}

/// One stored manifest's facts.
#[derive(Debug)]
struct Entry {
    /// Its row id in `watch_manifests`.
    id: i64,
    /// (package key, version) pairs; the version [`NONE`] when absent or
    /// not PEP 440.
    packages: Box<[(Id, Id)]>,
    vendors: Box<[Id]>,
    /// One per accelerator; [`NONE`] where unknown.
    capabilities: Box<[Id]>,
    arch: Id,
    engine: Id,
    container: bool,
    live: bool,
}

/// Stored manifests by the facts selectors read.
#[derive(Debug, Default)]
pub struct FactIndex {
    names: Interner,
    versions: Interner,
    entries: Vec<Entry>,
    slots: HashMap<i64, u32>,
    packages: HashMap<Id, Vec<u32>>,
    vendors: HashMap<Id, Vec<u32>>,
    arches: HashMap<Id, Vec<u32>>,
    engines: HashMap<Id, Vec<u32>>,
    with_accelerators: Vec<u32>,
    containers: Vec<u32>,
    /// Each watch's rows filed: the seq they were written at, their slots.
    watches: HashMap<i64, (i64, Vec<u32>)>,
    dead: usize,
    /// The `watch_state` seq the index has read every row and deletion up
    /// to (0: none yet).
    pub read_seq: i64,
}

/// A manifest as stored (JSON text) read for rules: normalised and
/// enriched, as a check reads it. `None` for text that no longer reads
/// (it was validated when stored).
pub fn prepare(text: &str) -> Option<Prepared> {
    crate::manifest::read_manifest(text.as_bytes()).ok().map(Prepared::new)
}

impl FactIndex {
    /// Files manifest row `id` of `watch`, written at `seq`, under its
    /// facts (an id filed already is left); the watch's rows of an earlier
    /// write are forgotten ([`FactIndex::supersede`]).
    pub fn insert(&mut self, id: i64, watch: i64, seq: i64, manifest: &Manifest) {
        self.supersede(watch, seq);
        if self.slots.contains_key(&id) {
            return;
        }
        let facts = ManifestFacts::new(manifest);
        let slot = self.entries.len() as u32;
        let mut packages = Vec::new();
        for (key, versions) in facts.packages() {
            let name = self.names.id(key);
            for v in versions {
                let version = v.get().map_or(NONE, |v| self.versions.version_id(v));
                packages.push((name, version));
            }
            let bucket = self.packages.entry(name).or_default();
            bucket.push(slot);
        }
        let vendors: Vec<Id> = facts.vendors().iter().map(|v| self.names.id(v)).collect();
        for &v in &vendors {
            self.vendors.entry(v).or_default().push(slot);
        }
        let capabilities: Vec<Id> = facts
            .capabilities()
            .iter()
            .map(|c| c.as_ref().map_or(NONE, |c| self.versions.version_id(c)))
            .collect();
        if !capabilities.is_empty() {
            self.with_accelerators.push(slot);
        }
        let arch = facts.arch().map_or(NONE, |a| self.names.id(a));
        if arch != NONE {
            self.arches.entry(arch).or_default().push(slot);
        }
        let engine = facts.engine().map_or(NONE, |e| self.names.id(e));
        if engine != NONE {
            self.engines.entry(engine).or_default().push(slot);
        }
        if facts.container() {
            self.containers.push(slot);
        }
        self.entries.push(Entry {
            id,
            packages: packages.into(),
            vendors: vendors.into(),
            capabilities: capabilities.into(),
            arch,
            engine,
            container: facts.container(),
            live: true,
        });
        self.slots.insert(id, slot);
        self.watches.entry(watch).or_insert_with(|| (seq, Vec::new())).1.push(slot);
    }

    /// A write of `watch`'s rows at `seq` was read: the rows it holds of
    /// an earlier write are gone (a watch's rows are replaced whole), and
    /// forgotten. Called for every row read, filed or not.
    pub fn supersede(&mut self, watch: i64, seq: i64) {
        if self.watches.get(&watch).is_some_and(|(filed, _)| *filed < seq) {
            self.remove_watch(watch);
        }
    }

    /// Forgets every row of `watch` (it was deleted).
    pub fn remove_watch(&mut self, watch: i64) {
        for slot in self.watches.remove(&watch).map(|(_, slots)| slots).unwrap_or_default() {
            self.forget(slot);
        }
    }

    /// Forgets a manifest (its row is gone); its slot stays in the
    /// buckets, skipped, until [`FactIndex::wants_rebuild`].
    pub fn remove(&mut self, id: i64) {
        if let Some(&slot) = self.slots.get(&id) {
            self.forget(slot);
        }
    }

    fn forget(&mut self, slot: u32) {
        let entry = &mut self.entries[slot as usize];
        if entry.live {
            entry.live = false;
            self.slots.remove(&entry.id);
            self.dead += 1;
        }
    }

    /// Manifests filed.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether none is filed.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Its heap bytes, counted from its tables' capacities (hash tables at
    /// their bucket count with one control byte each).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let map = |buckets: usize, entry: usize| buckets * (entry + 1);
        let buckets = |m: &HashMap<Id, Vec<u32>>| {
            map(m.capacity(), size_of::<(Id, Vec<u32>)>())
                + m.values().map(|v| v.capacity() * size_of::<u32>()).sum::<usize>()
        };
        let interner = |i: &Interner| {
            map(i.ids.capacity(), size_of::<(Box<str>, Id)>())
                + i.ids.keys().map(|k| k.len()).sum::<usize>()
                + i.versions.capacity() * size_of::<Option<Version>>()
                + i.versions.iter().flatten().map(|v| v.as_str().len() * 3).sum::<usize>()
        };
        let entries = self.entries.capacity() * size_of::<Entry>()
            + self
                .entries
                .iter()
                .map(|e| {
                    e.packages.len() * size_of::<(Id, Id)>()
                        + (e.vendors.len() + e.capabilities.len()) * size_of::<Id>()
                })
                .sum::<usize>();
        let watches = map(self.watches.capacity(), size_of::<(i64, (i64, Vec<u32>))>())
            + self.watches.values().map(|(_, s)| s.capacity() * size_of::<u32>()).sum::<usize>();
        interner(&self.names)
            + interner(&self.versions)
            + entries
            + watches
            + map(self.slots.capacity(), size_of::<(i64, u32)>())
            + buckets(&self.packages)
            + buckets(&self.vendors)
            + buckets(&self.arches)
            + buckets(&self.engines)
            + (self.with_accelerators.capacity() + self.containers.capacity()) * size_of::<u32>()
    }

    /// Whether forgotten slots outnumber the live ones (then build afresh).
    pub fn wants_rebuild(&self) -> bool {
        self.dead > 1024 && self.dead > self.slots.len()
    }

    /// The manifests (row ids, ascending) for which every one of
    /// `selectors` holds. Only the bucket of the most selective selector
    /// is scanned, as the engine files rules.
    pub fn admitted(&self, selectors: &[Selector]) -> Vec<i64> {
        let empty = Vec::new();
        let bucket: Option<&Vec<u32>> = match key(selectors) {
            None => None,
            Some(Selector::Package { name, .. }) => {
                Some(self.names.get(name).and_then(|n| self.packages.get(&n)).unwrap_or(&empty))
            }
            Some(Selector::Capability(_)) => Some(&self.with_accelerators),
            Some(Selector::Engine(e)) => {
                Some(self.names.get(e).and_then(|n| self.engines.get(&n)).unwrap_or(&empty))
            }
            Some(Selector::Accelerator(v)) => {
                Some(self.names.get(v).and_then(|n| self.vendors.get(&n)).unwrap_or(&empty))
            }
            Some(Selector::Arch(a)) => {
                Some(self.names.get(a).and_then(|n| self.arches.get(&n)).unwrap_or(&empty))
            }
            Some(Selector::Container) => Some(&self.containers),
        };
        let admits = |slot: u32| {
            let entry = &self.entries[slot as usize];
            entry.live && selectors.iter().all(|s| self.holds(s, entry))
        };
        let mut ids: Vec<i64> = match bucket {
            Some(slots) => slots
                .iter()
                .copied()
                .filter(|&s| admits(s))
                .map(|s| self.entries[s as usize].id)
                .collect(),
            None => (0..self.entries.len() as u32)
                .filter(|&s| admits(s))
                .map(|s| self.entries[s as usize].id)
                .collect(),
        };
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// `Selector::holds_in` over an entry's interned facts.
    fn holds(&self, selector: &Selector, entry: &Entry) -> bool {
        let named = |text: &str| self.names.get(text).unwrap_or(NONE);
        match selector {
            Selector::Package { name, versions } => {
                let name = named(name);
                let mut listed = entry.packages.iter().filter(|(n, _)| *n == name).peekable();
                if listed.peek().is_none() {
                    return false;
                }
                versions.is_none()
                    || listed
                        .any(|(_, v)| may_contain(versions.as_ref(), self.versions.version(*v)))
            }
            Selector::Accelerator(vendor) => {
                let vendor = named(vendor);
                vendor != NONE && entry.vendors.contains(&vendor)
            }
            Selector::Capability(spec) => entry
                .capabilities
                .iter()
                .any(|c| may_contain(Some(spec), self.versions.version(*c))),
            Selector::Arch(arch) => entry.arch != NONE && entry.arch == named(arch),
            Selector::Engine(engine) => entry.engine != NONE && entry.engine == named(engine),
            Selector::Container => entry.container,
        }
    }
}

/// The selector whose bucket is scanned: the engine's order of selectivity
/// (`pitfall_engine::index`), a ranged package first.
fn key(selectors: &[Selector]) -> Option<&Selector> {
    selectors.iter().min_by_key(|s| s.selectivity())
}

/// As `pitfall_contract::selector`: no range, or a version that cannot be
/// read, cannot exclude.
fn may_contain(range: Option<&Specifier>, version: Option<&Version>) -> bool {
    match (range, version) {
        (Some(spec), Some(v)) => spec.contains(v),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifests() -> Vec<serde_json::Value> {
        use serde_json::json;
        vec![
            json!({"manifest_version": 1}),
            json!({"manifest_version": 1, "host": {"arch": "arm64"},
                   "accelerators": [{"vendor": "nvidia", "model": "T4G"}],
                   "packages": [{"name": "vLLM", "version": "0.27.1"}, {"name": "torch", "version": "2.4.0"}],
                   "workload": {"engine": "vllm"}, "container": {"image": "vllm/vllm-openai:v0.27.1"}}),
            json!({"manifest_version": 1, "host": {"arch": "x86_64"},
                   "accelerators": [{"vendor": "nvidia", "compute_capability": "9.0"}],
                   "packages": [{"name": "vllm", "version": "0.30.0"}]}),
            json!({"manifest_version": 1, "accelerators": [{"vendor": "nvidia", "model": "Future GPU"}],
                   "packages": [{"name": "vllm"}, {"name": "flash_attn", "version": "main"}]}),
            json!({"manifest_version": 1, "accelerators": [{"vendor": "amd", "compute_capability": "9.4"},
                   {"vendor": "nvidia", "compute_capability": "7.0"}],
                   "packages": [{"name": "vllm", "version": "0.9.0"}, {"name": "vllm", "version": "0.31.0"}]}),
        ]
    }

    /// Every selector shape, ranges that include, exclude and cannot
    /// decide: the index admits exactly the manifests `holds` admits.
    #[test]
    fn the_index_admits_what_the_selectors_hold_for() {
        let prepared: Vec<Prepared> = manifests()
            .into_iter()
            .map(|m| Prepared::new(pitfall_contract::manifest_from_value(m).expect("manifest")))
            .collect();
        let mut index = FactIndex::default();
        for (i, p) in prepared.iter().enumerate() {
            index.insert(i as i64, i as i64, 1, &p.manifest);
        }
        let sets: &[&[&str]] = &[
            &[],
            &["package:vllm"],
            &["package:vllm<0.28"],
            &["package:vllm>=0.31"],
            &["package:flash-attn>=2"],
            &["package:vllm", "accelerator:nvidia", "capability:<8.0"],
            &["capability:>=9.0"],
            &["accelerator:amd"],
            &["arch:aarch64"],
            &["arch:amd64", "package:vllm"],
            &["engine:vllm"],
            &["container"],
            &["package:numpy"],
            &["accelerator:intel"],
        ];
        for set in sets {
            let selectors: Vec<Selector> =
                set.iter().map(|s| Selector::parse(s).expect("selector")).collect();
            let expected: Vec<i64> = prepared
                .iter()
                .enumerate()
                .filter(|(_, p)| selectors.iter().all(|s| s.holds(&p.manifest)))
                .map(|(i, _)| i as i64)
                .collect();
            assert_eq!(index.admitted(&selectors), expected, "{set:?}");
        }
        // A forgotten manifest is admitted no more.
        index.remove(1);
        let vllm = [Selector::parse("package:vllm").expect("selector")];
        assert_eq!(index.admitted(&vllm), [2, 3, 4]);
    }

    /// A watch's rows read at a higher seq supersede the ones filed; a
    /// deleted watch's rows go; a row filed again is filed once.
    #[test]
    fn a_watchs_later_write_and_its_deletion_forget_its_rows() {
        let prepared: Vec<Prepared> = manifests()
            .into_iter()
            .map(|m| Prepared::new(pitfall_contract::manifest_from_value(m).expect("manifest")))
            .collect();
        let vllm = [Selector::parse("package:vllm").expect("selector")];
        let mut index = FactIndex::default();
        // Watch 7 holds rows 10 and 11 (written at seq 3), watch 8 row 12.
        index.insert(10, 7, 3, &prepared[1].manifest);
        index.insert(11, 7, 3, &prepared[2].manifest);
        index.insert(12, 8, 4, &prepared[4].manifest);
        index.insert(12, 8, 4, &prepared[4].manifest);
        assert_eq!((index.len(), index.admitted(&vllm)), (3, vec![10, 11, 12]));
        // Watch 7 replaced at seq 5 by row 13.
        index.insert(13, 7, 5, &prepared[3].manifest);
        assert_eq!((index.len(), index.admitted(&vllm)), (2, vec![12, 13]));
        // A row of a write that does not read is filed nowhere, and still
        // supersedes.
        index.supersede(8, 6);
        assert_eq!((index.len(), index.admitted(&vllm)), (1, vec![13]));
        index.remove_watch(7);
        assert!(index.is_empty() && index.admitted(&vllm).is_empty());
        assert_eq!(index.dead, 4, "each row forgotten once");
    }
}
