//! # pitfall-contract
//!
//! The host's data contract: manifest v1 and its normalisation, the
//! flattened field view, rule metadata and test cases, remedy actions,
//! findings. The engine, the server and the CLI all use these types, and the
//! native test harness uses them so that `cargo test` on a rule sees exactly
//! what the registry's engine sees.

pub mod actions;
pub mod cases;
pub mod enrich;
pub mod fields;
pub mod lint;
pub mod manifest;
pub mod meta;
pub mod normalize;
mod package_table;
pub mod read;
pub mod report;
pub mod selector;
pub mod session;
pub mod template;

use std::sync::Arc;

pub use manifest::Manifest;

/// A manifest that could not be read, naming the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ManifestError {
    /// The field path (`accelerators[0].count`), empty for the whole document.
    pub field: String,
    /// What is wrong, for people.
    pub message: String,
}

/// Parses a manifest, checking `manifest_version`; errors name the field.
pub fn parse_manifest(json: &[u8]) -> Result<Manifest, ManifestError> {
    if let Some(manifest) = manifest_from_slice(json) {
        return Ok(manifest);
    }
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| ManifestError {
        field: String::new(),
        message: format!("not valid JSON: {e}"),
    })?;
    manifest_from_value(value)
}

/// The fast path of reading a manifest: straight from the text into the
/// types, with no JSON tree in between (that tree, its conversion and its
/// drop were a fifth of a loaded server's CPU). `None` for anything it does
/// not accept as it stands, a valid manifest with a duplicated key
/// included: the caller then takes the path through a [`serde_json::Value`]
/// ([`parse_manifest`], [`manifest_from_value`]), which decides and names
/// the field at fault. Whatever this accepts, that path reads as the same
/// manifest.
///
/// The text is checked to be UTF-8 once, whole, and then read as a `str`:
/// read from bytes, serde_json checks each string on its own, and those
/// hundreds of short checks made reading a fleet manifest 1.3 times as
/// long (`pitfall-bench`'s `read_us`). Text that
/// is not UTF-8 is declined, and the path through a value names it.
pub fn manifest_from_slice(json: &[u8]) -> Option<Manifest> {
    use serde::Deserialize;
    let text = std::str::from_utf8(json).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let manifest = Manifest::deserialize(&mut de).ok()?;
    de.end().ok()?;
    (manifest.manifest_version == manifest::MANIFEST_VERSION).then_some(manifest)
}

/// Reads a manifest from an already parsed JSON value.
pub fn manifest_from_value(value: serde_json::Value) -> Result<Manifest, ManifestError> {
    let Some(obj) = value.as_object() else {
        return Err(ManifestError {
            field: String::new(),
            message: format!("a manifest is a JSON object, found {}", manifest::kind_name(&value)),
        });
    };
    match obj.get("manifest_version") {
        None => {
            return Err(ManifestError {
                field: "manifest_version".into(),
                message: "manifest_version: missing (this registry reads version 1)".into(),
            });
        }
        Some(v) if v.as_u64() != Some(u64::from(manifest::MANIFEST_VERSION)) => {
            return Err(ManifestError {
                field: "manifest_version".into(),
                message: format!(
                    "manifest_version: {v} is not supported (this registry reads version 1)"
                ),
            });
        }
        Some(_) => {}
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        ManifestError { message: format!("{field}: {}", e.inner()), field }
    })
}

/// A manifest ready for rules: normalised, enriched and flattened once,
/// then shared by every rule of a check.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The normalised, enriched manifest (shared with the field map).
    pub manifest: Arc<Manifest>,
    /// Which fields came from the hardware table.
    pub enrichment: normalize::Enrichment,
    /// The flattened view the host calls read.
    pub fields: Arc<fields::FieldMap>,
}

impl Prepared {
    /// Normalises, enriches and flattens `manifest`.
    pub fn new(mut manifest: Manifest) -> Prepared {
        let enrichment = normalize::normalize(&mut manifest);
        let manifest = Arc::new(manifest);
        let fields = Arc::new(fields::FieldMap::new(Arc::clone(&manifest), &enrichment));
        Prepared { manifest, enrichment, fields }
    }
}

/// The JSON Schema of manifest v1, generated from the types.
pub fn manifest_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Manifest)).unwrap_or(serde_json::Value::Null)
}
