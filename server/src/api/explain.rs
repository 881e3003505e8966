//! `POST /v1/explain`: a pasted log in, the known breakages that explain it
//! out, each with its fix; with a manifest, each also evaluated on it.

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use pitfall_contract::manifest::Manifest;
use pitfall_contract::report::CheckResponse;
use pitfall_explain::outcome::explained_causes;
use pitfall_explain::{Explanation, SCORE_THRESHOLD};
use serde_json::Value;

use crate::admission::read_body;
use crate::api::types::{ExplainRequest, ExplainResponse, RuleSummary};
use crate::error::AppError;
use crate::state::{AppState, RequestDeadline};
use crate::store::RuleQuery;

/// The longest log explained: a traceback, or the tail of a server log,
/// is far less; a whole day of logs is not a paste.
pub const MAX_LOG_BYTES: usize = 256 << 10;

/// Leads the text search offers when no signature explains a log.
const RELATED: u32 = 5;

/// `POST /v1/explain`.
pub async fn explain(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ExplainResponse>, AppError> {
    let limit =
        (MAX_LOG_BYTES * 4 + state.limits().max_manifest_bytes).min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let request = read_request(&headers, &body)?;
    let answer = explain_log(&state, &request.log, request.manifest, deadline).await?;
    Ok(Json(answer))
}

/// The request from its body: JSON (`ExplainRequest`), or the log itself
/// as `text/plain`. Bytes that are not UTF-8 are replaced, so a log with a
/// stray byte is still explained.
pub fn read_request(headers: &HeaderMap, body: &[u8]) -> Result<ExplainRequest, AppError> {
    let text = String::from_utf8_lossy(body);
    let plain = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/plain"));
    let request = if plain {
        ExplainRequest { log: text.into_owned(), manifest: None }
    } else {
        serde_json::from_str::<ExplainRequest>(&text).map_err(|e| AppError::BadRequest {
            code: "invalid_json",
            message: format!(
                "the body must be {{\"log\": \"...\", \"manifest\": {{...}}}} (or the log as text/plain): {e}"
            ),
        })?
    };
    if request.log.len() > MAX_LOG_BYTES {
        let message = format!(
            "the log is {} bytes; at most {MAX_LOG_BYTES} are explained (send its last lines)",
            request.log.len()
        );
        // The log as the body is a body too large; as a JSON member it is
        // a member out of its schema's bounds.
        return Err(if plain {
            AppError::TooLargeBody(message)
        } else {
            AppError::BadRequest { code: "log_too_large", message }
        });
    }
    // An empty log is outside the schema (`minLength` 1); one of blanks is a
    // log with nothing to explain, answered as such.
    if request.log.is_empty() {
        return Err(AppError::BadRequest {
            code: "empty_log",
            message: "the log is empty: paste the error or traceback".into(),
        });
    }
    Ok(request)
}

/// Explains `log` with the served rules; with `manifest`, each ranked rule
/// is evaluated on it and the matched ones rank first.
pub async fn explain_log(
    state: &AppState,
    log: &str,
    manifest: Option<Value>,
    deadline: RequestDeadline,
) -> Result<ExplainResponse, AppError> {
    // Read the manifest first: a bad one is the client's error whatever
    // the log says.
    let manifest = match manifest {
        Some(value) => Some(crate::manifest::parse(value)?),
        None => None,
    };
    let (rules, explainer) = state.registry().explainer();
    let explanation: Explanation = explainer.explain(log);
    let check: Option<(CheckResponse, Manifest)> = match manifest {
        Some(manifest) if !explanation.causes.is_empty() => {
            let _slot = state.check_slot().await?;
            crate::runtime::requeue().await;
            let engine = state.registry().engine();
            let kept = manifest.clone();
            let answer =
                rules.check_on_this_thread(engine, manifest, deadline.0).map_err(|past| {
                    tracing::info!(%past, "an explain's check stopped at its request's time bound");
                    AppError::Timeout
                })?;
            Some((answer, kept))
        }
        _ => None,
    };
    let manifest_checked = check.is_some();
    let causes =
        explained_causes(&explanation.causes, |rule| rules.rules()[rule].meta(), check.as_ref());
    let related = if causes.is_empty() { related(state, log).await? } else { Vec::new() };
    Ok(ExplainResponse {
        causes,
        threshold: SCORE_THRESHOLD,
        lines_total: explanation.lines_total,
        related,
        manifest_checked,
        ruleset_revision: rules.revision().to_owned(),
    })
}

/// The rules whose text ranks best against the log's most telling lines
/// (its exception lines, else its last lines): the text search's leads.
async fn related(state: &AppState, log: &str) -> Result<Vec<RuleSummary>, AppError> {
    let query = pitfall_explain::search_text(log);
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let page = state
        .registry()
        .store()
        .search(&RuleQuery {
            q: Some(query),
            limit: Some(i64::from(RELATED)),
            ..RuleQuery::default()
        })
        .await?;
    Ok(page.items.into_iter().map(|r| crate::api::rules::summary(r, &words)).collect())
}
