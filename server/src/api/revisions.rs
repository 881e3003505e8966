//! `GET /v1/revisions` and `GET /v1/revisions/{revision}`: the ruleset's
//! recorded history, what each revision changed and what it served. Open
//! to anyone: a served version is public, and stays public once yanked.

use axum::Json;
use axum::extract::State;

use crate::api::rules::rfc3339;
use crate::api::types::{
    RevisionChangeView, RevisionDetail, RevisionView, RevisionsQuery, RevisionsResponse,
    ServedRuleView,
};
use crate::error::AppError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use crate::store::RevisionRecord;

/// Revisions per page unless asked, and at most.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 200;

/// `GET /v1/revisions?before=&limit=`: newest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<RevisionsQuery>,
) -> Result<Json<RevisionsResponse>, AppError> {
    // Clamped, as the rule search's page size is.
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let before = query.before.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
    let store = state.registry().store();
    // One more than asked: whether there is a next page.
    let mut page = store.revisions(before, i64::from(limit) + 1).await?;
    let more = page.len() > limit as usize;
    page.truncate(limit as usize);
    let next_before = if more { page.last().map(|r| r.revision as u64) } else { None };
    Ok(Json(RevisionsResponse {
        served_revision: state.registry().rules().revision().to_owned(),
        revisions: page.into_iter().map(view).collect(),
        next_before,
    }))
}

/// `GET /v1/revisions/{revision}`: the rule versions a revision served.
pub async fn detail(
    State(state): State<AppState>,
    ApiPath(revision): ApiPath<u64>,
) -> Result<Json<RevisionDetail>, AppError> {
    let store = state.registry().store();
    let asked = i64::try_from(revision).unwrap_or(i64::MAX);
    let record = store
        .revisions(asked.checked_add(1), 1)
        .await?
        .into_iter()
        .find(|r| r.revision == asked)
        .ok_or_else(|| AppError::NotFound(format!("revision {revision} is not recorded")))?;
    let rules = store
        .served_list_at(asked)
        .await?
        .into_iter()
        .map(|e| ServedRuleView {
            rule_id: e.rule_id,
            version: e.version,
            sha256: e.sha256,
            state: e.state.as_str().to_owned(),
        })
        .collect();
    Ok(Json(RevisionDetail { revision, recorded_at: rfc3339(record.recorded_at), rules }))
}

fn view(record: RevisionRecord) -> RevisionView {
    RevisionView {
        revision: u64::try_from(record.revision).unwrap_or(0),
        recorded_at: rfc3339(record.recorded_at),
        changes: record
            .changes
            .into_iter()
            .map(|c| RevisionChangeView {
                rule_id: c.rule_id,
                change: c.kind.as_str().to_owned(),
                from: c.from,
                to: c.to,
            })
            .collect(),
    }
}
