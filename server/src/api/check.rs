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

use crate::api::types::{BatchItem, BatchResponse, ErrorBody};
use crate::app::{AppState, read_body};
use crate::error::AppError;
use crate::result_cache::manifest_digest;

/// `POST /v1/check`: one manifest.
pub async fn check(State(state): State<AppState>, body: Body) -> Result<Json<CheckResponse>, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest { code: "invalid_json", message: format!("the body is not JSON: {e}") })?;
    let answers = check_values(&state, vec![Ok(value)]).await?;
    let answer = answers.into_iter().next().ok_or_else(|| AppError::Internal(anyhow::anyhow!("no answer")))?;
    Ok(Json(answer?))
}

/// The batch body as received (`api::types::BatchRequest` documents it).
#[derive(serde::Deserialize)]
struct RawBatch<'a> {
    #[serde(borrow)]
    manifests: Vec<&'a serde_json::value::RawValue>,
}

/// `POST /v1/check/batch`: `{"manifests": [...]}`, answered in order. A bad
/// manifest gets its own error entry; the others are still checked.
pub async fn batch(State(state): State<AppState>, body: Body) -> Result<Json<BatchResponse>, AppError> {
    let body = read_body(body, state.limits().max_body_bytes).await?;
    // Raw entries: each manifest's size is its text's length, with no
    // second serialisation to measure it.
    let request: RawBatch<'_> = serde_json::from_slice(&body).map_err(|e| AppError::BadRequest {
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
    let max_manifest = state.limits().max_manifest_bytes;
    let values = request
        .manifests
        .iter()
        .map(|raw| {
            if raw.get().len() > max_manifest {
                return Err(AppError::TooLarge { limit: max_manifest });
            }
            serde_json::from_str::<Value>(raw.get())
                .map_err(|e| AppError::BadRequest { code: "invalid_json", message: e.to_string() })
        })
        .collect();
    let answers = check_values(&state, values).await?;
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
async fn check_values(state: &AppState, values: Vec<Result<Value, AppError>>) -> Result<Vec<Result<CheckResponse, AppError>>, AppError> {
    let start = Instant::now();
    let rules = state.registry().rules();
    let revision = rules.revision().to_owned();
    let mut answers: Vec<Option<Result<CheckResponse, AppError>>> = Vec::with_capacity(values.len());
    let mut work: Vec<(usize, [u8; 32], Manifest)> = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        let value = match value {
            Ok(value) => value,
            Err(e) => {
                answers.push(Some(Err(e)));
                continue;
            }
        };
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
        match parse(value) {
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
fn parse(value: Value) -> Result<Manifest, AppError> {
    let version_ok = value.get("manifest_version").and_then(Value::as_u64) == Some(u64::from(MANIFEST_VERSION));
    manifest_from_value(value).map_err(|e| {
        if e.field == "manifest_version" && !version_ok && !e.message.contains("missing") {
            AppError::Unprocessable { code: "unsupported_manifest_version", message: e.message }
        } else {
            AppError::BadRequest { code: "invalid_manifest", message: e.message }
        }
    })
}
