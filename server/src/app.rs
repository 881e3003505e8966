//! The router: `fn app(state) -> Router`, so tests drive it with `oneshot`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use pitfall_engine::{Engine, RuleSet};
use pitfall_sdk::model::report::CheckResponse;
use pitfall_sdk::model::{manifest_from_value, manifest::MANIFEST_VERSION};
use serde_json::{Value, json};

use crate::error::{AppError, not_found};

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The sandbox.
    pub engine: Engine,
    /// The rules checks run against.
    pub rules: Arc<RuleSet>,
}

/// The HTTP API.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/check", post(check))
        .fallback(not_found)
        // Bodies are bounded by `read_body`, which answers with the envelope.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// Reads at most `limit` bytes of body, or answers 413 in the envelope.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, AppError> {
    axum::body::to_bytes(body, limit).await.map_err(|_| AppError::TooLarge { limit })
}

async fn healthz(State(state): State<AppState>) -> Json<Value> {
    Json(json!({ "status": "ok", "ruleset_revision": state.rules.revision(), "rules": state.rules.rules().len() }))
}

/// `POST /v1/check`: a manifest in, findings out.
async fn check(State(state): State<AppState>, body: Body) -> Result<Json<CheckResponse>, AppError> {
    let body = read_body(body, state.max_body_bytes).await?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest { code: "invalid_json", message: format!("the body is not JSON: {e}") })?;
    let version_ok = value.get("manifest_version").and_then(Value::as_u64) == Some(u64::from(MANIFEST_VERSION));
    let manifest = manifest_from_value(value).map_err(|e| {
        if e.field == "manifest_version" && !version_ok && !e.message.contains("missing") {
            AppError::Unprocessable { code: "unsupported_manifest_version", message: e.message }
        } else {
            AppError::BadRequest { code: "invalid_manifest", message: e.message }
        }
    })?;
    // Evaluation is CPU work (and fans out over a thread pool): keep it
    // off the async workers.
    let answer = tokio::task::spawn_blocking(move || state.rules.check(&state.engine, manifest))
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("check task failed: {e}")))?;
    Ok(Json(answer))
}
