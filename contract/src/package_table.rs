//! A manifest's packages by their PEP 503 key, for the field map: built
//! once per check over every package a machine lists (hundreds), so it
//! allocates nothing for a name that already is its key, as nearly every
//! one is. A table keyed by owned strings made a key for each package and
//! dropped it after the check: the largest part of the field map's cost
//! (in a profile of the HTTP bench).

use std::sync::OnceLock;

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use serde_json::Value;

use super::manifest::Package;
use super::normalize::{current_package_name, package_key_cow};

/// One package: its position in the manifest's list, its key when that
/// differs from its name, and its JSON once a lookup needs it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    index: u32,
    /// `None` when the name is its own key (read from the manifest).
    owned_key: Option<Box<str>>,
    json: OnceLock<Value>,
}

impl Slot {
    /// Its key, given the manifest's packages it was built from.
    pub(crate) fn key<'a>(&'a self, packages: &'a [Package]) -> &'a str {
        match &self.owned_key {
            Some(key) => key,
            None => packages.get(self.index as usize).map_or("", |p| p.name.as_str()),
        }
    }

    /// The package as the manifest lists it.
    pub(crate) fn package<'a>(&self, packages: &'a [Package]) -> Option<&'a Package> {
        packages.get(self.index as usize)
    }

    /// The package as JSON with `name` normalised to its key, built on
    /// first use (a check reads a few of a machine's hundreds).
    pub(crate) fn json(&self, packages: &[Package]) -> &Value {
        self.json.get_or_init(|| {
            let Some(typed) = self.package(packages) else { return Value::Null };
            let mut value = serde_json::to_value(typed).unwrap_or(Value::Null);
            if let Some(obj) = value.as_object_mut() {
                obj.insert("name".into(), Value::String(self.key(packages).to_owned()));
            }
            value
        })
    }

    /// Whether its JSON was built (for tests that it was not).
    #[cfg(test)]
    pub(crate) fn json_built(&self) -> bool {
        self.json.get().is_some()
    }
}

/// The packages by key; the first listed of a key wins.
#[derive(Debug, Clone, Default)]
pub(crate) struct PackageTable {
    table: HashTable<Slot>,
    /// Seeded per table: the names come from the client.
    hasher: RandomState,
    /// The key of every package whose name is not its key, by position
    /// (ascending), first of its key or not: with the names, every
    /// package's key, so a check derives each once (`keys`).
    renamed: Vec<(u32, Box<str>)>,
}

impl PackageTable {
    /// Every package of `packages` by its key.
    pub(crate) fn new(packages: &[Package]) -> PackageTable {
        let hasher = RandomState::default();
        let mut table = HashTable::with_capacity(packages.len());
        let mut renamed = Vec::new();
        for (index, package) in packages.iter().enumerate() {
            let key = package_key_cow(&package.name);
            let hash = hasher.hash_one(&*key);
            let entry = table.entry(
                hash,
                |slot: &Slot| slot.key(packages) == key,
                |slot: &Slot| hasher.hash_one(slot.key(packages)),
            );
            let owned_key = match key {
                std::borrow::Cow::Borrowed(_) => None,
                std::borrow::Cow::Owned(key) => {
                    let key = key.into_boxed_str();
                    renamed.push((index as u32, key.clone()));
                    Some(key)
                }
            };
            if let hashbrown::hash_table::Entry::Vacant(vacant) = entry {
                vacant.insert(Slot { index: index as u32, owned_key, json: OnceLock::new() });
            }
        }
        PackageTable { table, hasher, renamed }
    }

    /// Every package's key, in the manifest's order (each name that is its
    /// own key, as nearly every one is, read from `packages`).
    pub(crate) fn keys<'a>(&'a self, packages: &'a [Package]) -> impl Iterator<Item = &'a str> {
        let mut renamed = self.renamed.iter().peekable();
        packages.iter().enumerate().map(move |(index, package)| {
            match renamed.next_if(|(at, _)| *at as usize == index) {
                Some((_, key)) => &**key,
                None => package.name.as_str(),
            }
        })
    }

    /// The package filed under `key` (already a PEP 503 key: `flash-attn`).
    /// An old name of a renamed package finds it under its current one
    /// (`flashinfer` finds `flashinfer-python`): a rule built with an SDK
    /// that keys by PEP 503 alone asks for the name it was given.
    pub(crate) fn get<'a>(&'a self, key: &str, packages: &[Package]) -> Option<&'a Slot> {
        let key = current_package_name(key).unwrap_or(key);
        self.table.find(self.hasher.hash_one(key), |slot| slot.key(packages) == key)
    }

    /// Every package, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.table.iter()
    }

    /// How many distinct keys.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages(names: &[&str]) -> Vec<Package> {
        names
            .iter()
            .map(|n| Package {
                name: (*n).to_owned(),
                version: Some((*n).to_owned()),
                ..Package::default()
            })
            .collect()
    }

    #[test]
    fn finds_each_package_by_its_key_and_the_first_of_a_key_wins() {
        let list =
            packages(&["vllm", "Flash_Attn", "flash-attn", "zope.interface", " torch ", "Ünïcode"]);
        let table = PackageTable::new(&list);
        assert_eq!(table.len(), 5);
        let version = |key: &str| {
            table.get(key, &list).and_then(|s| s.package(&list)).and_then(|p| p.version.clone())
        };
        assert_eq!(version("vllm").as_deref(), Some("vllm"));
        assert_eq!(version("flash-attn").as_deref(), Some("Flash_Attn"), "the first listed wins");
        assert_eq!(version("zope-interface").as_deref(), Some("zope.interface"));
        assert_eq!(version("torch").as_deref(), Some(" torch "));
        assert_eq!(
            version("Ünïcode").as_deref(),
            Some("Ünïcode"),
            "non-ASCII letters keep their case"
        );
        for absent in ["Flash_Attn", "zope.interface", " torch ", "flash", ""] {
            assert!(table.get(absent, &list).is_none(), "{absent:?}");
        }
        // Every package's key, in order, duplicates and renamed ones too.
        let keys: Vec<&str> = table.keys(&list).collect();
        let derived: Vec<String> =
            list.iter().map(|p| package_key_cow(&p.name).into_owned()).collect();
        assert_eq!(keys, derived);
        assert_eq!(
            keys,
            ["vllm", "flash-attn", "flash-attn", "zope-interface", "torch", "Ünïcode"]
        );
        // A name that is its own key keeps no copy of it.
        let vllm = table.get("vllm", &list).expect("present");
        assert!(vllm.owned_key.is_none());
        assert_eq!(table.get("flash-attn", &list).map(|s| s.key(&list)), Some("flash-attn"));
        let mut keys: Vec<&str> = table.iter().map(|s| s.key(&list)).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["flash-attn", "torch", "vllm", "zope-interface", "Ünïcode"]);
    }

    #[test]
    fn a_package_json_carries_its_key_as_its_name() {
        let list = packages(&["Flash_Attn"]);
        let table = PackageTable::new(&list);
        let slot = table.get("flash-attn", &list).expect("present");
        assert!(!slot.json_built());
        assert_eq!(
            slot.json(&list),
            &serde_json::json!({"name": "flash-attn", "version": "Flash_Attn"})
        );
        assert!(slot.json_built());
    }
}
