//! `POST /v1/check` and `POST /v1/check/batch`: manifests in, findings out.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use pitfall_sdk::model::manifest::MANIFEST_VERSION;
use pitfall_sdk::model::report::CheckResponse;
use pitfall_sdk::model::{Manifest, manifest_from_value};
use serde_json::Value;

use crate::api::types::{BatchItem, BatchRequest, BatchResponse, ErrorBody};
use crate::app::{AppState, read_body};
use crate::error::AppError;
use crate::result_cache::manifest_digest;

/// `POST /v1/check`: one manifest.
pub async fn check(State(state): State<AppState>, body: Body) -> Result<Json<CheckResponse>, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest { code: "invalid_json", message: format!("the body is not JSON: {e}") })?;
    let answers = check_values(&state, vec![value]).await?;
    let answer = answers.into_iter().next().ok_or_else(|| AppError::Internal(anyhow::anyhow!("no answer")))?;
    Ok(Json(answer?))
}

/// `POST /v1/check/batch`: `{"manifests": [...]}`, answered in order. A bad
/// manifest gets its own error entry; the others are still checked.
pub async fn batch(State(state): State<AppState>, body: Body) -> Result<Json<BatchResponse>, AppError> {
    let body = read_body(body, state.limits().max_body_bytes).await?;
    let request: BatchRequest = serde_json::from_slice(&body).map_err(|e| AppError::BadRequest {
        code: "invalid_json",
        message: format!("the body must be {{\"manifests\": [...]}}: {e}"),
    })?;
    let max = state.limits().max_batch;
    if request.manifests.len() > max {
        return Err(AppError::BadRequest {
            code: "batch_too_large",
            message: format!("{} manifests in one batch; the limit is {max}", request.manifests.len()),
        });
    }
    let answers = check_values(&state, request.manifests).await?;
    let results = answers
        .into_iter()
        .map(|answer| match answer {
            Ok(answer) => BatchItem::Answer(Box::new(answer)),
            Err(e) => BatchItem::Error { error: ErrorBody::from(&e) },
        })
        .collect();
    Ok(Json(BatchResponse { results }))
}

/// Parses, looks up the cache, and evaluates the rest on a blocking thread
/// (evaluation is CPU work and fans out over a thread pool).
async fn check_values(state: &AppState, values: Vec<Value>) -> Result<Vec<Result<CheckResponse, AppError>>, AppError> {
    let start = Instant::now();
    let rules = state.registry().rules();
    let revision = rules.revision().to_owned();
    let max_manifest = state.limits().max_manifest_bytes;
    let mut answers: Vec<Option<Result<CheckResponse, AppError>>> = Vec::with_capacity(values.len());
    let mut work: Vec<(usize, [u8; 32], Manifest)> = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        let digest = manifest_digest(&value);
        if let Some(hit) = state.cache().get(&digest, &revision) {
            state.metrics().check_cache_hits.fetch_add(1, Relaxed);
            let mut answer = (*hit).clone();
            // The time this request took, not that of the evaluation that
            // filled the cache.
            answer.stats.elapsed_us = micros(start);
            answers.push(Some(Ok(answer)));
            continue;
        }
        match parse(value, max_manifest) {
            Ok(manifest) => {
                work.push((i, digest, manifest));
                answers.push(None);
            }
            Err(e) => answers.push(Some(Err(e))),
        }
    }
    let evaluated = if work.is_empty() {
        Vec::new()
    } else {
        let engine = state.registry().engine().clone();
        let rules = rules.clone();
        tokio::task::spawn_blocking(move || {
            work.into_iter().map(|(i, digest, manifest)| (i, digest, rules.check(&engine, manifest))).collect::<Vec<_>>()
        })
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("check task failed: {e}")))?
    };
    for (i, digest, answer) in evaluated {
        let metrics = state.metrics();
        metrics.rule_errors.fetch_add(answer.rule_errors.len() as u64, Relaxed);
        state.cache().put(digest, &revision, Arc::new(answer.clone()));
        answers[i] = Some(Ok(answer));
    }
    state.metrics().checks.fetch_add(answers.len() as u64, Relaxed);
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(AppError::Internal(anyhow::anyhow!("manifest left unanswered")))))
        .collect())
}

fn micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A JSON value as a manifest, with the contract's error codes.
fn parse(value: Value, max_manifest_bytes: usize) -> Result<Manifest, AppError> {
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
    if size > max_manifest_bytes {
        return Err(AppError::TooLarge { limit: max_manifest_bytes });
    }
    let version_ok = value.get("manifest_version").and_then(Value::as_u64) == Some(u64::from(MANIFEST_VERSION));
    manifest_from_value(value).map_err(|e| {
        if e.field == "manifest_version" && !version_ok && !e.message.contains("missing") {
            AppError::Unprocessable { code: "unsupported_manifest_version", message: e.message }
        } else {
            AppError::BadRequest { code: "invalid_manifest", message: e.message }
        }
    })
}
