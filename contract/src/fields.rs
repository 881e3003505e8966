//! The manifest flattened into field paths: what rules read through the
//! host calls. Built once per check and shared by every rule, so no rule
//! ever parses JSON.
//!
//! Paths are dotted: `host.arch`, `accelerators.0.compute_capability`,
//! `packages.vllm.version` (packages are keyed by their PEP 503 name, a
//! renamed one by its current name: `normalize::package_key`),
//! `env.VLLM_ATTENTION_BACKEND`, `workload.head_dims.1`. Arrays and objects
//! are fields too (kind `array`/`object`), so a rule can ask for a length.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use foldhash::fast::RandomState;
use serde::Serialize;
use serde_json::Value;

use super::manifest::{Manifest, Package};
use super::normalize::{Enrichment, current_package_name};
use super::package_table::PackageTable;

/// The JSON kind of a field, as the ABI numbers it (`field_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum FieldKind {
    /// No such field.
    Missing = 0,
    /// JSON `null`.
    Null = 1,
    /// `true` / `false`.
    Bool = 2,
    /// A number.
    Number = 3,
    /// A string.
    String = 4,
    /// An array; its elements are `path.0`, `path.1`, ...
    Array = 5,
    /// An object; its members are `path.key`.
    Object = 6,
}

/// Where a value came from; shown in a finding's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The client sent it.
    Manifest,
    /// The registry filled it in from its hardware table.
    Enriched,
}

/// One field of the flattened manifest, as a lookup answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Field<'a> {
    /// Its kind.
    pub kind: FieldKind,
    /// Scalars as text (`"7.5"`, `"true"`, `"15360"`); `None` for arrays and objects.
    pub text: Option<Cow<'a, str>>,
    /// Numbers as `f64`.
    pub number: Option<f64>,
    /// Elements of an array or members of an object.
    pub len: usize,
    /// Where it came from.
    pub source: Source,
}

/// A field as the map keeps it (flattened at construction).
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    kind: FieldKind,
    text: Option<Box<str>>,
    number: Option<f64>,
    len: usize,
    source: Source,
}

impl Stored {
    fn new(field: Field<'_>) -> Stored {
        Stored {
            kind: field.kind,
            text: field.text.map(|t| t.into_owned().into_boxed_str()),
            number: field.number,
            len: field.len,
            source: field.source,
        }
    }

    fn field(&self) -> Field<'_> {
        Field {
            kind: self.kind,
            text: self.text.as_deref().map(Cow::Borrowed),
            number: self.number,
            len: self.len,
            source: self.source,
        }
    }
}

/// The field a JSON value is.
fn field_of(value: &Value, source: Source) -> Field<'_> {
    let (kind, text, number, len) = match value {
        Value::Null => (FieldKind::Null, None, None, 0),
        Value::Bool(b) => {
            (FieldKind::Bool, Some(Cow::Borrowed(if *b { "true" } else { "false" })), None, 0)
        }
        Value::Number(n) => (FieldKind::Number, Some(Cow::Owned(n.to_string())), n.as_f64(), 0),
        Value::String(s) => (FieldKind::String, Some(Cow::Borrowed(s.as_str())), None, 0),
        Value::Array(a) => (FieldKind::Array, None, None, a.len()),
        Value::Object(o) => (FieldKind::Object, None, None, o.len()),
    };
    Field { kind, text, number, len, source }
}

/// The flattened manifest.
///
/// Keyed by the path's bytes, so a host call looks a path up as the rule
/// sent it, without a UTF-8 check (no key matches bytes that are not
/// UTF-8). Hashed with foldhash rather than SipHash: every host call of
/// every rule is a lookup here, and SipHash was the largest part of a
/// call's host-side cost. The hasher is seeded per map, as the paths come
/// from the client.
///
/// Arrays and objects keep no copy of their value: [`FieldMap::composite`]
/// finds it in the one JSON tree the map was flattened from (a copy per
/// level was most of a 200-package manifest's preparation).
///
/// Below `packages.` nothing is flattened: a lookup there finds the
/// package by its key in a table of its own (a key never holds a dot) and
/// walks down from it. A machine has hundreds of packages and a check reads
/// a few of them, and flattening every package's fields was the largest
/// part of preparing a check (measured on a loaded server: a tenth of its
/// CPU).
#[derive(Debug, Clone, Default)]
pub struct FieldMap {
    fields: HashMap<Box<[u8]>, Stored, RandomState>,
    /// The manifest as JSON, but for its packages.
    tree: Value,
    /// Each package by its PEP 503 key.
    packages: PackageTable,
    /// The manifest the packages are read from, shared with the check's
    /// `Prepared`, not copied: a machine has hundreds of packages, and
    /// cloning each (three strings) and dropping the clones was a twentieth
    /// of a loaded server's CPU.
    manifest: Arc<Manifest>,
    /// All packages as one object, built only if evidence asks for it.
    packages_object: OnceLock<Value>,
    /// The enriched paths (for the source of a lazily found field).
    enriched: BTreeSet<String>,
    /// The enriched paths below `packages.`, without that prefix
    /// (`vllm.torch`): a package read finds its source without building
    /// the full path.
    enriched_packages: HashSet<Box<str>>,
}

/// The prefix below which fields are found from their package, not the table.
const PACKAGES: &str = "packages.";

impl FieldMap {
    /// Flattens a normalised manifest; `enrichment` marks the enriched paths.
    /// The map keeps `manifest` (its packages are read from it lazily).
    pub fn new(manifest: Arc<Manifest>, enrichment: &Enrichment) -> FieldMap {
        let value = serde_json::to_value(without_packages(&manifest)).unwrap_or(Value::Null);
        let mut map = FieldMap {
            fields: HashMap::with_capacity_and_hasher(128, RandomState::default()),
            tree: Value::Null,
            packages: PackageTable::default(),
            packages_object: OnceLock::new(),
            enriched: enrichment.paths.clone(),
            enriched_packages: enrichment
                .paths
                .iter()
                .filter_map(|p| p.strip_prefix(PACKAGES))
                .map(Box::from)
                .collect(),
            manifest,
        };
        // Packages are looked up by name, not position; the first of a name
        // wins. Each package's JSON is built only if a lookup needs it: a
        // check reads a few dozen of a machine's hundreds of packages, and
        // building every one's JSON up front was most of preparing a check
        // (measured on a loaded server: a tenth of its CPU).
        if !map.manifest.packages.is_empty() {
            map.packages = PackageTable::new(&map.manifest.packages);
            let source = map.source("packages");
            let field = Stored {
                kind: FieldKind::Object,
                text: None,
                number: None,
                len: map.packages.len(),
                source,
            };
            map.fields.insert(b"packages".as_slice().into(), field);
        }

        let mut path = String::with_capacity(64);
        if let Value::Object(obj) = &value {
            for (k, v) in obj {
                path.clear();
                path.push_str(k);
                map.insert_value(&mut path, v);
            }
        }
        map.tree = value;
        map
    }

    /// The JSON value of the array or object at `path` (scalars are in
    /// their [`Field`]'s `text`), for evidence that points at a whole list
    /// such as `workload.head_dims`.
    pub fn composite(&self, path: &str) -> Option<&Value> {
        if !matches!(self.get(path)?.kind, FieldKind::Array | FieldKind::Object) {
            return None;
        }
        if path == "packages" {
            return Some(self.packages_object.get_or_init(|| {
                let packages = &self.manifest.packages;
                Value::Object(
                    self.packages
                        .iter()
                        .map(|p| (p.key(packages).to_owned(), p.json(packages).clone()))
                        .collect(),
                )
            }));
        }
        match path.strip_prefix(PACKAGES) {
            Some(below) => self.below_packages(below),
            None => descend(&self.tree, path),
        }
    }

    /// The value at `below` (`vllm.version`) under `packages.`: the package
    /// by its key (a key never holds a dot), then down from it.
    fn below_packages(&self, below: &str) -> Option<&Value> {
        let (key, rest) = below.split_once('.').map_or((below, None), |(k, r)| (k, Some(r)));
        let package =
            self.packages.get(key, &self.manifest.packages)?.json(&self.manifest.packages);
        rest.map_or(Some(package), |rest| descend(package, rest))
    }

    /// Where the value at `path` came from.
    fn source(&self, path: &str) -> Source {
        if self.enriched.contains(path) { Source::Enriched } else { Source::Manifest }
    }

    fn insert_value(&mut self, path: &mut String, value: &Value) {
        let field = Stored::new(field_of(value, self.source(path)));
        self.fields.insert(path.as_bytes().into(), field);
        let base = path.len();
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.truncate(base);
                    path.push('.');
                    path.push_str(&i.to_string());
                    self.insert_value(path, item);
                }
            }
            Value::Object(members) => {
                for (k, v) in members {
                    path.truncate(base);
                    path.push('.');
                    path.push_str(k);
                    self.insert_value(path, v);
                }
            }
            _ => {}
        }
        path.truncate(base);
    }

    /// The field at `path`.
    pub fn get(&self, path: &str) -> Option<Field<'_>> {
        match path.strip_prefix(PACKAGES) {
            Some(below) => self.below_packages_field(below),
            None => self.fields.get(path.as_bytes()).map(Stored::field),
        }
    }

    /// The field at `packages.BELOW`: a package itself, one of its typed
    /// members, or anything else found in its JSON.
    fn below_packages_field(&self, below: &str) -> Option<Field<'_>> {
        let key = below.split_once('.').map_or(below, |(key, _)| key);
        if let Some(current) = current_package_name(key) {
            // An old name of a renamed package: read as its current one, so
            // an enriched member is reported as enriched under either name.
            return self.below_packages_field(&format!("{current}{}", &below[key.len()..]));
        }
        let source = self.package_source(below);
        match below.split_once('.') {
            // A package itself (a rule asking whether it is installed):
            // an object of its members, counted without building its JSON.
            None => {
                let package = self
                    .packages
                    .get(below, &self.manifest.packages)?
                    .package(&self.manifest.packages)?;
                let len = 1
                    + usize::from(package.version.is_some())
                    + usize::from(package.ecosystem.is_some())
                    + usize::from(package.cuda.is_some())
                    + usize::from(!package.cuda_arch_list.is_empty())
                    + usize::from(package.torch.is_some())
                    + usize::from(package.cxx11_abi.is_some())
                    + package.extra.len();
                Some(Field { kind: FieldKind::Object, text: None, number: None, len, source })
            }
            Some((key, member)) => match self.typed_package_scalar(key, member) {
                Some(text) => text.map(|text| Field {
                    kind: FieldKind::String,
                    text: Some(Cow::Borrowed(text)),
                    number: None,
                    len: 0,
                    source,
                }),
                None => self.below_packages(below).map(|value| field_of(value, source)),
            },
        }
    }

    /// [`FieldMap::source`] for `packages.BELOW`, found without building
    /// the full path (every replay of a rule that reads a version asks this).
    fn package_source(&self, below: &str) -> Source {
        if !self.enriched_packages.is_empty() && self.enriched_packages.contains(below) {
            Source::Enriched
        } else {
            Source::Manifest
        }
    }

    /// A package's `name`, `version` or `ecosystem` (`below` is
    /// `KEY` and `version`), read from the typed package: `Some(None)` when the
    /// package has none or there is no such package (then nothing below
    /// it exists), `None` for any other member (found in the package's
    /// JSON). Nearly every read below `packages.` is a version, and building
    /// the package's JSON to answer it was a tenth of replaying a memo.
    /// The three are plain strings (serde puts a member of one of their
    /// names in the field, never in `extra`), and `name` is the key, as in
    /// the JSON.
    fn typed_package_scalar(&self, key: &str, member: &str) -> Option<Option<&str>> {
        // No such package: no member of it either.
        let Some(slot) = self.packages.get(key, &self.manifest.packages) else { return Some(None) };
        let package = slot.package(&self.manifest.packages)?;
        match member {
            "name" => Some(Some(slot.key(&self.manifest.packages))),
            "version" => Some(package.version.as_deref()),
            "ecosystem" => Some(package.ecosystem.as_deref()),
            _ => None,
        }
    }

    /// Every package of the manifest with its key, in the manifest's order
    /// (the keys the map derived, so nothing derives them again).
    pub fn packages_with_keys(&self) -> impl Iterator<Item = (&Package, &str)> {
        let packages = &self.manifest.packages;
        packages.iter().zip(self.packages.keys(packages))
    }

    /// The field at `path` given as bytes (as a host call receives it);
    /// `None` for bytes that are not UTF-8.
    pub fn get_bytes(&self, path: &[u8]) -> Option<Field<'_>> {
        if let Some(below) = path.strip_prefix(PACKAGES.as_bytes()) {
            // `PACKAGES` is ASCII, so only the rest needs checking.
            return self.below_packages_field(std::str::from_utf8(below).ok()?);
        }
        self.fields.get(path).map(Stored::field)
    }

    /// How many fields (every level counted, those below `packages.` too).
    pub fn len(&self) -> usize {
        let packages = &self.manifest.packages;
        self.fields.len()
            + self.packages.iter().map(|p| 1 + nodes_below(p.json(packages))).sum::<usize>()
    }

    /// Whether the manifest had no fields at all.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// A copy of `manifest` but for its packages, which the field map keeps
/// typed. Every field is named, so a new one cannot be forgotten here.
fn without_packages(manifest: &Manifest) -> Manifest {
    let Manifest {
        manifest_version,
        host,
        accelerators,
        drivers,
        container,
        packages: _,
        env,
        build,
        workload,
        health_check,
        python,
        extra,
    } = manifest;
    Manifest {
        manifest_version: *manifest_version,
        host: host.clone(),
        accelerators: accelerators.clone(),
        drivers: drivers.clone(),
        container: container.clone(),
        packages: Vec::new(),
        env: env.clone(),
        build: build.clone(),
        workload: workload.clone(),
        health_check: health_check.clone(),
        python: python.clone(),
        extra: extra.clone(),
    }
}

/// How many values lie below `value` (each a field).
fn nodes_below(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(|v| 1 + nodes_below(v)).sum(),
        Value::Object(members) => members.values().map(|v| 1 + nodes_below(v)).sum(),
        _ => 0,
    }
}

/// The value at a dotted `path` below `value`. A key may itself contain
/// dots (an `extra` member, an environment variable), so every member
/// whose key is a prefix of the path up to a dot is tried.
fn descend<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    match value {
        Value::Object(members) => {
            members.iter().find_map(|(k, v)| match path.strip_prefix(k.as_str())? {
                "" => Some(v),
                rest => descend(v, rest.strip_prefix('.')?),
            })
        }
        Value::Array(items) => {
            let (index, rest) = path.split_once('.').map_or((path, None), |(i, r)| (i, Some(r)));
            // Only the spelling flattening gives an index (`1`, not `01` or `+1`).
            let canonical = index.bytes().all(|b| b.is_ascii_digit())
                && (index == "0" || !index.starts_with('0'));
            let item = items.get(canonical.then(|| index.parse::<usize>().ok()).flatten()?)?;
            match rest {
                None => Some(item),
                Some(rest) => descend(item, rest),
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the typed fast path answers below `packages.` is what the
    /// package's JSON answers, for every member of every package (names
    /// that normalise, duplicates, no version, an ecosystem, extra members,
    /// a missing package).
    #[test]
    fn typed_package_members_equal_their_json() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "manifest_version": 1,
            "packages": [
                {"name": "vllm", "version": "0.10.1"},
                {"name": "Flash_Attn", "version": "2.7.4.post1", "ecosystem": "pypi", "source": "wheel"},
                {"name": "flash-attn", "version": "1.0"},
                {"name": "torch"},
                {"name": "nvidia-cudnn", "ecosystem": "deb", "extra": {"pinned": true}}
            ]
        }))
        .expect("valid");
        let mut enrichment = Enrichment::default();
        enrichment.paths.insert("packages.vllm.version".into());
        let map = FieldMap::new(Arc::new(manifest), &enrichment);
        let json_route = |path: &str| {
            let below = path.strip_prefix(PACKAGES).expect("below packages");
            map.below_packages(below).map(|value| field_of(value, map.source(path)))
        };
        // Asking for a package, or its version, builds no package's JSON.
        for path in
            ["packages.vllm", "packages.nvidia-cudnn", "packages.vllm.version", "packages.missing"]
        {
            let _ = map.get(path);
        }
        assert!(map.packages.iter().all(|p| !p.json_built()), "a package's JSON was built");
        let mut decided = 0;
        for key in ["vllm", "flash-attn", "torch", "nvidia-cudnn", "missing"] {
            // The package itself too (`packages.vllm`), answered without its JSON.
            for member in [
                "",
                "name",
                "version",
                "ecosystem",
                "source",
                "extra",
                "extra.pinned",
                "version.major",
            ] {
                let path = if member.is_empty() {
                    format!("packages.{key}")
                } else {
                    format!("packages.{key}.{member}")
                };
                let below = path.strip_prefix(PACKAGES).expect("below packages");
                decided +=
                    usize::from(below.split_once('.').is_some_and(|(key, member)| {
                        map.typed_package_scalar(key, member).is_some()
                    }));
                assert_eq!(map.get(&path), json_route(&path), "{path}");
                assert_eq!(map.get_bytes(path.as_bytes()), json_route(&path), "{path}");
            }
        }
        // The fast path answered the three scalars of each present package
        // and everything below the missing one.
        assert_eq!(decided, 4 * 3 + 7);
        assert_eq!(
            map.get("packages.flash-attn.version").and_then(|f| f.text).as_deref(),
            Some("2.7.4.post1")
        );
        assert_eq!(map.get("packages.vllm.version").map(|f| f.source), Some(Source::Enriched));
    }

    #[test]
    fn flattens_paths_and_keys_packages_by_name() {
        let m: Manifest = serde_json::from_str(
            r#"{"manifest_version":1,"host":{"arch":"aarch64"},
                "accelerators":[{"vendor":"nvidia","model":"T4G","compute_capability":"7.5","memory_mib":15360}],
                "packages":[{"name":"Flash_Attn","version":"2.7.0"}],
                "workload":{"head_dims":[256,512]},"env":{"A":"b"}}"#,
        )
        .expect("parses");
        let enrichment = Enrichment {
            paths: BTreeSet::from(["accelerators.0.memory_mib".to_owned()]),
            ..Enrichment::default()
        };
        let f = FieldMap::new(Arc::new(m), &enrichment);
        assert_eq!(f.get("host.arch").and_then(|x| x.text).as_deref(), Some("aarch64"));
        assert_eq!(f.get("accelerators").map(|x| (x.kind, x.len)), Some((FieldKind::Array, 1)));
        let cc = f.get("accelerators.0.compute_capability").expect("cc present");
        assert_eq!((cc.text.as_deref(), cc.source), (Some("7.5"), Source::Manifest));
        let mem = f.get("accelerators.0.memory_mib").expect("memory present");
        assert_eq!((mem.number, mem.source), (Some(15360.0), Source::Enriched));
        assert_eq!(
            f.get("packages.flash-attn.version").and_then(|x| x.text).as_deref(),
            Some("2.7.0")
        );
        assert_eq!(
            f.get_bytes(b"packages.flash-attn.version").map(|x| x.source),
            Some(Source::Manifest)
        );
        assert_eq!(
            f.get_bytes(b"packages.flash-attn\xff.version"),
            None,
            "a path that is not UTF-8 finds nothing"
        );
        assert_eq!(f.get("workload.head_dims.1").and_then(|x| x.number), Some(512.0));
        assert_eq!(f.get("env.A").and_then(|x| x.text).as_deref(), Some("b"));
        assert!(f.get("drivers.cuda").is_none());
        assert_eq!(f.composite("workload.head_dims"), Some(&serde_json::json!([256, 512])));
        assert_eq!(
            f.composite("packages.flash-attn"),
            Some(&serde_json::json!({"name": "flash-attn", "version": "2.7.0"}))
        );
        assert_eq!(f.composite("accelerators.0.vendor"), None, "a scalar is no composite");
    }

    #[test]
    fn fields_below_packages_are_found_from_their_package_as_if_flattened() {
        let m: Manifest = serde_json::from_str(
            r#"{"manifest_version":1,
                "packages":[{"name":"vllm","version":"0.27.1","build":{"cuda":"12.8","flags":[1,2]},"a.b":7},
                            {"name":"Torch","version":"2.11.0"}]}"#,
        )
        .expect("parses");
        let f = FieldMap::new(Arc::new(m), &Enrichment::default());
        assert_eq!(f.get("packages").map(|x| (x.kind, x.len)), Some((FieldKind::Object, 2)));
        assert_eq!(f.get("packages.vllm").map(|x| (x.kind, x.len)), Some((FieldKind::Object, 4)));
        assert_eq!(f.get("packages.torch.name").and_then(|x| x.text).as_deref(), Some("torch"));
        assert_eq!(f.get("packages.vllm.build.cuda").and_then(|x| x.text).as_deref(), Some("12.8"));
        assert_eq!(f.get("packages.vllm.build.flags.1").and_then(|x| x.number), Some(2.0));
        assert_eq!(f.get("packages.vllm.build.flags.1").and_then(|x| x.text).as_deref(), Some("2"));
        assert_eq!(
            f.get("packages.vllm.a.b").map(|x| (x.kind, x.number)),
            Some((FieldKind::Number, Some(7.0)))
        );
        assert_eq!(
            f.get_bytes(b"packages.vllm.version").and_then(|x| x.text).as_deref(),
            Some("0.27.1")
        );
        for missing in [
            "packages.",
            "packages.vllm.",
            "packages.flash-attn",
            "packages.vllm.build.flags.2",
            "packages.vllm.build.flags.01",
        ] {
            assert!(f.get(missing).is_none(), "{missing}");
        }
        assert!(f.get_bytes(b"packages.\xff").is_none());
        // Every level counted: host-less manifest_version, packages, and the
        // 2 packages' 4 + 2 members, build's 2 and flags' 2.
        assert_eq!(f.len(), 1 + 1 + 2 + 4 + 2 + 2 + 2);
        assert_eq!(f.composite("packages.vllm.build.flags"), Some(&serde_json::json!([1, 2])));
    }
}
