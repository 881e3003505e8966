//! `GET /v1/schemas/{name}`: the JSON Schemas of the CLI's `--format json`
//! outputs (`check.json`, `scan.json`, `explain.json`, `fix.json`),
//! generated from the types the CLI prints (`pitfall_api::schemas`). Their
//! `$id` is this server's public URL plus the path when one is configured,
//! else the path alone.

use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use pitfall_api::schemas::{MEDIA_TYPE, Output};

use crate::error::AppError;
use crate::state::AppState;

/// `GET /v1/schemas/{name}`.
pub async fn schema(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, AppError> {
    let output = Output::from_file_name(&name).ok_or_else(|| {
        let names: Vec<&str> = Output::ALL.iter().map(|o| o.file_name()).collect();
        AppError::NotFound(format!("no schema named {name:?}; there are {}", names.join(", ")))
    })?;
    let base = state.limits().public_url.as_deref().unwrap_or("");
    let text = serde_json::to_string_pretty(&output.schema(base))
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(([(CONTENT_TYPE, MEDIA_TYPE)], text).into_response())
}
