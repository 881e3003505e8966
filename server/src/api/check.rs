//! `POST /v1/check` and `POST /v1/check/batch`: manifests in, findings out.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Extension, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use pitfall_contract::manifest::MANIFEST_VERSION;
use pitfall_contract::{Manifest, manifest_from_slice, manifest_from_value};
use serde_json::Value;

use crate::admission::{charge_batch, read_body};
use crate::answer::SerializedAnswer;
use crate::api::types::{BatchItem, ErrorBody};
use crate::error::AppError;
use crate::extract::json_object;
use crate::result_cache::{ManifestDigest, text_digest};
use crate::state::{AppState, RequestDeadline};

/// `POST /v1/check`: one manifest.
pub async fn check(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    body: Body,
) -> Result<Response, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let start = Instant::now();
    let answers = check_manifests(&state, vec![Ok(&body[..])], deadline).await?;
    let answer = answers
        .into_iter()
        .next()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("no answer")))??;
    Ok(json_response(answer.json(micros(start))))
}

/// The batch body as received (`api::types::BatchRequest` documents it).
#[derive(serde::Deserialize)]
struct RawBatch<'a> {
    #[serde(borrow)]
    manifests: Vec<&'a serde_json::value::RawValue>,
}

/// `POST /v1/check/batch`: `{"manifests": [...]}`, answered in order. A bad
/// manifest gets its own error entry; the others are still checked. The
/// body is `api::types::BatchResponse`, written from the answers' text.
pub async fn batch(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    request: Request,
) -> Result<Response, AppError> {
    let (parts, body) = request.into_parts();
    let charged = Request::from_parts(parts, Body::empty());
    let body = read_body(body, state.limits().max_body_bytes).await?;
    let start = Instant::now();
    // Raw entries: each manifest's size is its text's length, with no
    // second serialisation to measure it.
    let request: RawBatch<'_> = match json_object(&body) {
        Ok(request) => request,
        Err(e) => {
            charge_batch(&state, &charged, 1)?;
            return Err(AppError::BadRequest {
                code: "invalid_json",
                message: format!("the body must be {{\"manifests\": [...]}}: {e}"),
            });
        }
    };
    let max = state.limits().max_batch;
    // One unit for a batch refused as too large; else one per manifest.
    let manifests = if request.manifests.len() > max { 1 } else { request.manifests.len() };
    charge_batch(&state, &charged, manifests)?;
    if request.manifests.len() > max {
        return Err(AppError::BadRequest {
            code: "batch_too_large",
            message: format!(
                "{} manifests in one batch; the limit is {max}",
                request.manifests.len()
            ),
        });
    }
    let max_manifest = state.limits().max_manifest_bytes;
    let manifests = request
        .manifests
        .iter()
        .map(|raw| {
            if raw.get().len() > max_manifest {
                return Err(AppError::TooLarge { limit: max_manifest });
            }
            Ok(raw.get().as_bytes())
        })
        .collect();
    let answers = check_manifests(&state, manifests, deadline).await?;
    let elapsed_us = micros(start);
    let mut out = String::from("{\"results\":[");
    for (i, answer) in answers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match answer {
            Ok(answer) => answer.write(elapsed_us, &mut out),
            Err(e) => {
                let entry = BatchItem::Error { error: ErrorBody::from(e) };
                out.push_str(
                    &serde_json::to_string(&entry).map_err(|e| AppError::Internal(e.into()))?,
                );
            }
        }
    }
    out.push_str("]}");
    Ok(json_response(out))
}

fn json_response(body: String) -> Response {
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

/// Looks up each manifest's text in the cache, reads the rest, and
/// evaluates them in an evaluation slot, on this task's worker
/// (`crate::runtime` says why, and why that never holds up the rest of the
/// server), until `deadline`: past it, the answers already evaluated are
/// cached and the request is answered 503. A text the cache answers is
/// never read: the key is its digest (`result_cache::text_digest`).
async fn check_manifests(
    state: &AppState,
    texts: Vec<Result<&[u8], AppError>>,
    deadline: RequestDeadline,
) -> Result<Vec<Result<Arc<SerializedAnswer>, AppError>>, AppError> {
    let rules = state.registry().rules();
    let revision = rules.revision().to_owned();
    let mut answers: Vec<Option<Result<Arc<SerializedAnswer>, AppError>>> =
        Vec::with_capacity(texts.len());
    let mut work: Vec<(usize, ManifestDigest, Manifest)> = Vec::new();
    for (i, text) in texts.into_iter().enumerate() {
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                answers.push(Some(Err(e)));
                continue;
            }
        };
        let digest = text_digest(text);
        if let Some(hit) = state.cache().get(&digest, &revision) {
            state.metrics().check_cache_hits.inc();
            answers.push(Some(Ok(hit)));
            continue;
        }
        match read_manifest(text) {
            Ok(manifest) => {
                work.push((i, digest, manifest));
                answers.push(None);
            }
            Err(e) => answers.push(Some(Err(e))),
        }
    }
    let mut evaluated = Vec::with_capacity(work.len());
    let mut past_deadline = None;
    if !work.is_empty() {
        let _slot = state.check_slot().await?;
        let engine = state.registry().engine();
        for (i, digest, manifest) in work {
            // Before each manifest: another worker stays awake for the
            // rest of the server, and a batch gives its worker back between
            // manifests, so one stretch of this worker's time is one check.
            crate::runtime::requeue().await;
            // On this thread: the server's parallelism is one check per
            // slot, and handing a check's candidates to other cores would
            // only take them from the other slots.
            let started = std::time::Instant::now();
            match rules.check_on_this_thread(engine, manifest, deadline.0) {
                Ok(answer) => evaluated.push((
                    // Read before anything else can run on this thread.
                    (
                        started.elapsed(),
                        answer.stats.rules_evaluated,
                        pitfall_engine::engine::take_last_replays(),
                    ),
                    i,
                    digest,
                    answer.rule_errors.len(),
                    Arc::new(SerializedAnswer::new(&answer)),
                )),
                Err(past) => {
                    past_deadline = Some(past);
                    break;
                }
            }
        }
    }
    for ((elapsed, rules_evaluated, replays), i, digest, rule_errors, answer) in evaluated {
        state.metrics().record_check(elapsed, rules_evaluated, replays);
        state.metrics().rule_errors.inc_by(rule_errors as u64);
        state.cache().put(digest, &revision, answer.clone());
        answers[i] = Some(Ok(answer));
    }
    if let Some(past) = past_deadline {
        tracing::info!(%past, "a check stopped at its request's time bound");
        return Err(AppError::Timeout);
    }
    state.metrics().checks.inc_by(answers.len() as u64);
    Ok(answers
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                Err(AppError::Internal(anyhow::anyhow!("manifest left unanswered")))
            })
        })
        .collect())
}

fn micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

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
