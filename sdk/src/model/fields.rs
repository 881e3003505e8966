//! The manifest flattened into field paths: what rules read through the
//! host calls. Built once per check and shared by every rule, so no rule
//! ever parses JSON.
//!
//! Paths are dotted: `host.arch`, `accelerators.0.compute_capability`,
//! `packages.vllm.version` (packages are keyed by their PEP 503 name),
//! `env.VLLM_ATTENTION_BACKEND`, `workload.head_dims.1`. Arrays and objects
//! are fields too (kind `array`/`object`), so a rule can ask for a length.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use serde::Serialize;
use serde_json::Value;

use super::manifest::Manifest;
use super::normalize::{Enrichment, package_key};

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

/// One field of the flattened manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its kind.
    pub kind: FieldKind,
    /// Scalars as text (`"7.5"`, `"true"`, `"15360"`); `None` for arrays and objects.
    pub text: Option<Box<str>>,
    /// Numbers as `f64`.
    pub number: Option<f64>,
    /// Elements of an array or members of an object.
    pub len: usize,
    /// Where it came from.
    pub source: Source,
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
#[derive(Debug, Clone, Default)]
pub struct FieldMap {
    fields: HashMap<Box<[u8]>, Field, RandomState>,
    tree: Value,
}

impl FieldMap {
    /// Flattens a normalised manifest; `enrichment` marks the enriched paths.
    pub fn new(manifest: &Manifest, enrichment: &Enrichment) -> FieldMap {
        let mut value = serde_json::to_value(manifest).unwrap_or(Value::Null);
        // Packages are looked up by name, not position.
        if let Some(Value::Array(packages)) = value.as_object_mut().and_then(|o| o.remove("packages")) {
            let mut by_name = serde_json::Map::new();
            for mut p in packages {
                let Some(name) = p.get("name").and_then(Value::as_str).map(package_key) else {
                    continue;
                };
                if let Some(obj) = p.as_object_mut() {
                    obj.insert("name".into(), Value::String(name.clone()));
                }
                by_name.entry(name).or_insert(p);
            }
            if let Some(obj) = value.as_object_mut() {
                obj.insert("packages".into(), Value::Object(by_name));
            }
        }
        let mut map = FieldMap {
            fields: HashMap::with_capacity_and_hasher(128, RandomState::default()),
            tree: Value::Null,
        };
        let mut path = String::with_capacity(64);
        if let Value::Object(obj) = &value {
            for (k, v) in obj {
                path.clear();
                path.push_str(k);
                map.insert_value(&mut path, v, enrichment);
            }
        }
        map.tree = value;
        map
    }

    /// The JSON value of the array or object at `path` (scalars are in
    /// their [`Field`]'s `text`), for evidence that points at a whole list
    /// such as `workload.head_dims`.
    pub fn composite(&self, path: &str) -> Option<&Value> {
        match self.get(path)?.kind {
            FieldKind::Array | FieldKind::Object => descend(&self.tree, path),
            _ => None,
        }
    }

    fn insert_value(&mut self, path: &mut String, value: &Value, enrichment: &Enrichment) {
        let source = if enrichment.paths.contains(path.as_str()) { Source::Enriched } else { Source::Manifest };
        let (kind, text, number, len) = match value {
            Value::Null => (FieldKind::Null, None, None, 0),
            Value::Bool(b) => (FieldKind::Bool, Some(if *b { "true" } else { "false" }.into()), None, 0),
            Value::Number(n) => (FieldKind::Number, Some(n.to_string().into()), n.as_f64(), 0),
            Value::String(s) => (FieldKind::String, Some(s.as_str().into()), None, 0),
            Value::Array(a) => (FieldKind::Array, None, None, a.len()),
            Value::Object(o) => (FieldKind::Object, None, None, o.len()),
        };
        self.fields.insert(path.as_bytes().into(), Field { kind, text, number, len, source });
        let base = path.len();
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.truncate(base);
                    path.push('.');
                    path.push_str(&i.to_string());
                    self.insert_value(path, item, enrichment);
                }
            }
            Value::Object(members) => {
                for (k, v) in members {
                    path.truncate(base);
                    path.push('.');
                    path.push_str(k);
                    self.insert_value(path, v, enrichment);
                }
            }
            _ => {}
        }
        path.truncate(base);
    }

    /// The field at `path`.
    pub fn get(&self, path: &str) -> Option<&Field> {
        self.fields.get(path.as_bytes())
    }

    /// The field at `path` given as bytes (as a host call receives it);
    /// `None` for bytes that are not UTF-8.
    pub fn get_bytes(&self, path: &[u8]) -> Option<&Field> {
        self.fields.get(path)
    }

    /// How many fields (every level counted).
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the manifest had no fields at all.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// The value at a dotted `path` below `value`. A key may itself contain
/// dots (an `extra` member, an environment variable), so every member
/// whose key is a prefix of the path up to a dot is tried.
fn descend<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    match value {
        Value::Object(members) => members.iter().find_map(|(k, v)| match path.strip_prefix(k.as_str())? {
            "" => Some(v),
            rest => descend(v, rest.strip_prefix('.')?),
        }),
        Value::Array(items) => {
            let (index, rest) = path.split_once('.').map_or((path, None), |(i, r)| (i, Some(r)));
            let item = items.get(index.parse::<usize>().ok()?)?;
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
    use std::collections::BTreeSet;

    #[test]
    fn flattens_paths_and_keys_packages_by_name() {
        let m: Manifest = serde_json::from_str(
            r#"{"manifest_version":1,"host":{"arch":"aarch64"},
                "accelerators":[{"vendor":"nvidia","model":"T4G","compute_capability":"7.5","memory_mib":15360}],
                "packages":[{"name":"Flash_Attn","version":"2.7.0"}],
                "workload":{"head_dims":[256,512]},"env":{"A":"b"}}"#,
        )
        .expect("parses");
        let enrichment = Enrichment { paths: BTreeSet::from(["accelerators.0.memory_mib".to_owned()]) };
        let f = FieldMap::new(&m, &enrichment);
        assert_eq!(f.get("host.arch").and_then(|x| x.text.as_deref()), Some("aarch64"));
        assert_eq!(f.get("accelerators").map(|x| (x.kind, x.len)), Some((FieldKind::Array, 1)));
        let cc = f.get("accelerators.0.compute_capability").expect("cc present");
        assert_eq!((cc.text.as_deref(), cc.source), (Some("7.5"), Source::Manifest));
        let mem = f.get("accelerators.0.memory_mib").expect("memory present");
        assert_eq!((mem.number, mem.source), (Some(15360.0), Source::Enriched));
        assert_eq!(f.get("packages.flash-attn.version").and_then(|x| x.text.as_deref()), Some("2.7.0"));
        assert_eq!(f.get("workload.head_dims.1").and_then(|x| x.number), Some(512.0));
        assert_eq!(f.get("env.A").and_then(|x| x.text.as_deref()), Some("b"));
        assert!(f.get("drivers.cuda").is_none());
        assert_eq!(f.composite("workload.head_dims"), Some(&serde_json::json!([256, 512])));
        assert_eq!(
            f.composite("packages.flash-attn"),
            Some(&serde_json::json!({"name": "flash-attn", "version": "2.7.0"}))
        );
        assert_eq!(f.composite("accelerators.0.vendor"), None, "a scalar is no composite");
    }
}
