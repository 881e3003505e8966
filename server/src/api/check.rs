//! `POST /v1/check` and `POST /v1/check/batch`: manifests in, findings out,
//! with the rules served now or, asked `?revision=N`, with those revision N
//! served (`crate::as_of`).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Extension, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use pitfall_contract::Manifest;
use pitfall_contract::report::CheckResponse;
use pitfall_engine::RuleSet;

use crate::admission::{charge_batch, read_body};
use crate::answer::SerializedAnswer;
use crate::api::bundle::REVISION_HEADER;
use crate::api::types::{BatchItem, CheckQuery, ErrorBody};
use crate::as_of::{PastError, PastSet};
use crate::error::AppError;
use crate::extract::{ApiQuery, json_object};
use crate::manifest::read_manifest;
use crate::result_cache::{ManifestDigest, ResultCache, text_digest};
use crate::state::{AppState, RequestDeadline};

/// The rules a check runs against and where its answers are cached.
enum Answering {
    /// The served set and the shared result cache.
    Served(Arc<RuleSet>),
    /// A past revision's set and its own cache.
    Past(Arc<PastSet>),
}

impl Answering {
    /// The served rules, or those of `query.revision` when it names
    /// another revision.
    async fn pick(state: &AppState, query: &CheckQuery) -> Result<Answering, AppError> {
        let served = state.registry().rules();
        let Some(asked) = query.revision else { return Ok(Answering::Served(served)) };
        if served.revision() == asked.to_string() {
            return Ok(Answering::Served(served));
        }
        // Past any i64, past the history: not recorded, like any future one.
        let asked = i64::try_from(asked).unwrap_or(i64::MAX);
        match state.registry().rules_at(asked).await {
            Ok(set) => Ok(Answering::Past(set)),
            Err(e @ PastError::NotRecorded { .. }) => Err(AppError::NotFound(e.to_string())),
            Err(PastError::Failed(e)) => Err(AppError::Internal(e)),
        }
    }

    fn rules(&self) -> &Arc<RuleSet> {
        match self {
            Answering::Served(rules) => rules,
            Answering::Past(set) => &set.rules,
        }
    }

    fn cache<'a>(&'a self, state: &'a AppState) -> &'a ResultCache {
        match self {
            Answering::Served(_) => state.cache(),
            Answering::Past(set) => &set.answers,
        }
    }

    /// Whether answers are labelled `as_of`: a past revision's.
    fn as_of(&self) -> bool {
        matches!(self, Answering::Past(_))
    }
}

/// `POST /v1/check`: one manifest.
pub async fn check(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    ApiQuery(query): ApiQuery<CheckQuery>,
    body: Body,
) -> Result<Response, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let start = Instant::now();
    let answering = Answering::pick(&state, &query).await?;
    let answers = check_manifests(&state, &answering, vec![Ok(&body[..])], deadline).await?;
    let answer = answers
        .into_iter()
        .next()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("no answer")))??;
    Ok(json_response(answer.json(micros(start)), answering.rules().revision()))
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
    ApiQuery(query): ApiQuery<CheckQuery>,
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
    let answering = Answering::pick(&state, &query).await?;
    let answers = check_manifests(&state, &answering, manifests, deadline).await?;
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
    Ok(json_response(out, answering.rules().revision()))
}

fn json_response(body: String, revision: &str) -> Response {
    ([(CONTENT_TYPE.as_str(), "application/json"), (REVISION_HEADER, revision)], body)
        .into_response()
}

/// Looks up each manifest's text in the cache, reads the rest, and
/// evaluates them in an evaluation slot, on this task's worker
/// (`crate::runtime` says why, and why that never holds up the rest of the
/// server), until `deadline`: past it, the answers already evaluated are
/// cached and the request is answered 503. A text the cache answers is
/// never read: the key is its digest (`result_cache::text_digest`).
async fn check_manifests(
    state: &AppState,
    answering: &Answering,
    texts: Vec<Result<&[u8], AppError>>,
    deadline: RequestDeadline,
) -> Result<Vec<Result<Arc<SerializedAnswer>, AppError>>, AppError> {
    let rules = answering.rules();
    let cache = answering.cache(state);
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
        if let Some(hit) = cache.get(&digest, &revision) {
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
                    Arc::new(SerializedAnswer::new(&labelled(answer, answering.as_of()))),
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
        cache.put(digest, &revision, answer.clone());
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

/// An answer with its `as_of` label.
fn labelled(mut answer: CheckResponse, as_of: bool) -> CheckResponse {
    answer.as_of = as_of;
    answer
}

fn micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}
