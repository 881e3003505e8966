//! A manifest from a request's text, with the contract's error codes:
//! what `/v1/check`, `/v1/fix`, `/v1/explain` and the watches read, and
//! what the watch evaluator reads back from the store.

use pitfall_contract::manifest::MANIFEST_VERSION;
use pitfall_contract::{Manifest, manifest_from_slice, manifest_from_value};
use serde_json::Value;

use crate::error::AppError;

/// A manifest from its JSON text, with the contract's error codes. Valid
/// manifests take the fast path (text straight into the types); anything
/// else is read through a JSON value, which names what is wrong.
pub(crate) fn read_manifest(text: &[u8]) -> Result<Manifest, AppError> {
    if let Some(manifest) = manifest_from_slice(text) {
        return Ok(manifest);
    }
    let value: Value = serde_json::from_slice(text).map_err(|e| AppError::BadRequest {
        code: "invalid_json",
        message: format!("the body is not JSON: {e}"),
    })?;
    parse(value)
}

/// A JSON value as a manifest, with the contract's error codes.
pub(crate) fn parse(value: Value) -> Result<Manifest, AppError> {
    let version_ok =
        value.get("manifest_version").and_then(Value::as_u64) == Some(u64::from(MANIFEST_VERSION));
    manifest_from_value(value).map_err(|e| {
        if e.field == "manifest_version" && !version_ok && !e.message.contains("missing") {
            AppError::Unprocessable { code: "unsupported_manifest_version", message: e.message }
        } else {
            AppError::BadRequest { code: "invalid_manifest", message: e.message }
        }
    })
}
