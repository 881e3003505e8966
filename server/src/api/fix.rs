//! `POST /v1/fix`: a manifest in, the nearest configuration that passes
//! out (`pitfall-fix`'s answer). Bounded like a check, and more: at most
//! `pitfall_fix::EVALUATION_BOUND` checks, all within the request's time
//! bound, in one evaluation slot.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use pitfall_fix::{FixError, FixResponse};

use crate::admission::read_body;
use crate::error::AppError;
use crate::state::{AppState, RequestDeadline};

/// `POST /v1/fix`: one manifest, as for `POST /v1/check`.
pub async fn fix(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    body: Body,
) -> Result<Response, AppError> {
    let answer = fix_answer(&state, deadline, body).await?;
    let text = serde_json::to_string(&answer).map_err(|e| AppError::Internal(e.into()))?;
    Ok(([(CONTENT_TYPE, "application/json")], text).into_response())
}

/// The fix of a manifest's body, for the API and the web page.
pub(crate) async fn fix_answer(
    state: &AppState,
    deadline: RequestDeadline,
    body: Body,
) -> Result<FixResponse, AppError> {
    let limit = state.limits().max_manifest_bytes.min(state.limits().max_body_bytes);
    let body = read_body(body, limit).await?;
    let manifest = crate::manifest::read_manifest(&body)?;
    let rules = state.registry().rules();
    let _slot = state.check_slot().await?;
    crate::runtime::requeue().await;
    let engine = state.registry().engine();
    // On this worker, as a check is (`crate::runtime` says why), each
    // check stopped at the request's deadline.
    let mut check =
        |m: pitfall_contract::Manifest| rules.check_on_this_thread(engine, m, deadline.0);
    let answer = pitfall_fix::solve(&manifest, &rules, &mut check).map_err(|e| match e {
        FixError::PastDeadline(past) => {
            tracing::info!(%past, "a fix stopped at its request's time bound");
            AppError::Timeout
        }
    })?;
    state.metrics().checks.inc_by(u64::from(answer.evaluations));
    Ok(answer)
}
