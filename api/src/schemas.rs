//! The JSON Schemas of what `pitfall check|scan|explain|fix --format json`
//! print, each generated from the type the CLI serialises (one definition
//! of each shape), and published by the server at `/v1/schemas/{name}`
//! with a `$id` that names where it is served.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fix::FixResponse;
use crate::types::{ErrorBody, ExplainResponse};
use pitfall_contract::Manifest;
use pitfall_contract::report::CheckResponse;

/// The media type the schemas are served with (JSON Schema 2020-12, §9.1).
pub const MEDIA_TYPE: &str = "application/schema+json";

/// Where the server publishes them: `/v1/schemas/check.json`, ...
pub const PATH_PREFIX: &str = "/v1/schemas/";

/// A command whose `--format json` output has a published schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `pitfall check --format json`: one answer, or `{"results": [...]}`
    /// with `--batch`.
    Check,
    /// `pitfall scan --format json`: a manifest v1.
    Scan,
    /// `pitfall explain --format json`: the `POST /v1/explain` answer.
    Explain,
    /// `pitfall fix --format json`: the `POST /v1/fix` answer.
    Fix,
}

impl Output {
    /// Every output with a schema.
    pub const ALL: [Output; 4] = [Output::Check, Output::Scan, Output::Explain, Output::Fix];

    /// The schema's file name under [`PATH_PREFIX`].
    pub fn file_name(self) -> &'static str {
        match self {
            Output::Check => "check.json",
            Output::Scan => "scan.json",
            Output::Explain => "explain.json",
            Output::Fix => "fix.json",
        }
    }

    /// The output whose schema is `file_name`, if any.
    pub fn from_file_name(file_name: &str) -> Option<Output> {
        Output::ALL.into_iter().find(|o| o.file_name() == file_name)
    }

    /// The schema's path on a server: `/v1/schemas/check.json`.
    pub fn path(self) -> String {
        format!("{PATH_PREFIX}{}", self.file_name())
    }

    /// The schema, with `$id` = `base` + [`Output::path`]. `base` is the
    /// server's public URL (`https://pitfall.example.org`); empty, `$id` is
    /// the path alone, a URI reference resolved against the address the
    /// schema was fetched from.
    pub fn schema(self, base: &str) -> Value {
        let schema = match self {
            Output::Check => schemars::schema_for!(CheckOutput),
            Output::Scan => schemars::schema_for!(Manifest),
            Output::Explain => schemars::schema_for!(ExplainResponse),
            Output::Fix => schemars::schema_for!(FixResponse),
        };
        let mut value = schema.to_value();
        if let Value::Object(fields) = &mut value {
            let id = format!("{}{}", base.trim_end_matches('/'), self.path());
            fields.insert("$id".into(), Value::String(id));
            fields
                .entry("title")
                .or_insert_with(|| format!("pitfall {} --format json", self.command()).into());
        }
        value
    }

    fn command(self) -> &'static str {
        match self {
            Output::Check => "check",
            Output::Scan => "scan",
            Output::Explain => "explain",
            Output::Fix => "fix",
        }
    }
}

/// What `pitfall check --format json` prints: one manifest's answer, as
/// `POST /v1/check` gives it, or a fleet's with `--batch`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CheckOutput {
    /// `pitfall check MANIFEST`.
    One(Box<CheckResponse>),
    /// `pitfall check --batch FILE...`.
    Batch(CheckBatchOutput),
}

/// `pitfall check --batch --format json`: one entry per manifest, in the
/// order given.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckBatchOutput {
    /// Each manifest's answer or error.
    pub results: Vec<CheckBatchEntry>,
}

/// One manifest of a batch: its answer, or why it could not be checked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CheckBatchEntry {
    /// It could not be read or checked.
    Error(UncheckedManifest),
    /// Its answer.
    Answer(Box<CheckedManifest>),
}

/// A manifest of a batch and its answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckedManifest {
    /// The file, as given (`<stdin>` for `-`).
    pub manifest: String,
    /// The check answer, as `POST /v1/check` gives it.
    #[serde(flatten)]
    pub answer: CheckResponse,
}

/// A manifest of a batch that could not be checked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UncheckedManifest {
    /// The file, as given (`<stdin>` for `-`).
    pub manifest: String,
    /// Why, in the API's error shape (`invalid_manifest`, ...).
    pub error: ErrorBody,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_has_a_distinct_file_and_its_id() {
        for output in Output::ALL {
            assert_eq!(Output::from_file_name(output.file_name()), Some(output));
            let schema = output.schema("https://registry.example/");
            assert_eq!(
                schema["$id"],
                format!("https://registry.example/v1/schemas/{}", output.file_name())
            );
            assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
            assert_eq!(output.schema("")["$id"], output.path());
        }
        assert_eq!(Output::from_file_name("openapi.json"), None);
    }
}
