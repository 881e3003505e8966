//! `pip list --format=json` (or the same shape printed from
//! `importlib.metadata`): the Python environment's packages.

use crate::error::{Context, Result};
use pitfall_contract::manifest::Package;
use serde::Deserialize;

/// One entry of pip's JSON list. `editable_project_location` (a path, maybe
/// under a home folder) is only tested for presence, never copied.
#[derive(Debug, Deserialize)]
struct Entry {
    name: String,
    version: String,
    #[serde(default)]
    editable_project_location: Option<serde_json::Value>,
}

/// The environment's packages.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PipList {
    /// Every distribution, `pypi` ecosystem, version exactly as installed.
    pub(crate) packages: Vec<Package>,
    /// Distributions installed in editable mode (built from a source tree).
    pub(crate) editable: Vec<String>,
}

/// Parses the JSON array pip prints.
pub(crate) fn parse(json: &str) -> Result<PipList> {
    let entries: Vec<Entry> = serde_json::from_str(json.trim())
        .context("expected pip's JSON: [{\"name\": ..., \"version\": ...}, ...]")?;
    let mut list = PipList::default();
    for entry in entries {
        if entry.editable_project_location.is_some() {
            list.editable.push(entry.name.clone());
        }
        list.packages.push(pypi(&entry.name, &entry.version));
    }
    Ok(list)
}

/// A `pypi` package entry.
pub(crate) fn pypi(name: &str, version: &str) -> Package {
    Package {
        name: name.trim().to_owned(),
        version: Some(version.trim().to_owned()).filter(|v| !v.is_empty()),
        ecosystem: Some("pypi".to_owned()),
        ..Package::default()
    }
}

/// The Python script the live scan runs when pip is not available: the same
/// JSON shape from the interpreter's installed metadata.
pub(crate) const METADATA_SCRIPT: &str = "import json, importlib.metadata as m\n\
print(json.dumps(sorted(({'name': d.metadata['Name'], 'version': d.version} for d in m.distributions() if d.metadata['Name']), key=lambda e: e['name'].lower())))";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_json_with_local_versions_and_editables() {
        let json = r#"[{"name": "torch", "version": "2.12.0+cu126"}, {"name": "Cython", "version": "3.3.0"},
            {"name": "vllm", "version": "0.27.2.dev5+g1234abc", "editable_project_location": "/home/someone/vllm"}]"#;
        let list = parse(json).expect("parses");
        assert_eq!(list.packages.len(), 3);
        assert_eq!(list.packages[0].version.as_deref(), Some("2.12.0+cu126"));
        assert_eq!(list.packages[0].ecosystem.as_deref(), Some("pypi"));
        assert_eq!(list.packages[1].name, "Cython");
        assert_eq!(list.editable, vec!["vllm".to_owned()]);
        let out = serde_json::to_string(&list.packages).expect("json");
        assert!(!out.contains("/home/"), "{out}");
    }

    #[test]
    fn not_pip_json() {
        assert!(parse("Package Version\n------- -------\n").is_err());
        assert!(parse(r#"{"name": "x"}"#).is_err());
    }
}
