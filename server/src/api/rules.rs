//! Rules: search, details, module bytes, and publishing.

use std::time::{Duration, UNIX_EPOCH};

use crate::extract::{ApiPath, ApiQuery};
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG};
use axum::response::IntoResponse;
use pitfall_contract::meta::Severity;

use crate::admission::read_body;
use crate::api::types::{RuleDetail, RuleSummary, SearchQuery, SearchResponse, VersionDetail};
use crate::auth::Caller;
use crate::error::AppError;
use crate::publish;
use crate::registry::new_version;
use crate::state::AppState;
use crate::store::{self, Actor, Role, RuleQuery, UnixMillis, VersionRecord, VersionState};

/// `GET /v1/rules`: search and filters.
pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<SearchResponse>, AppError> {
    let rule_query = to_store_query(&query)?;
    if matches!(rule_query.state, Some(VersionState::Pending | VersionState::Rejected)) {
        // Unreviewed and refused versions are for reviewers.
        caller.at_least(Role::Maintainer)?;
    }
    let page = state.registry().store().search(&rule_query).await?;
    let words: Vec<String> =
        query.q.as_deref().unwrap_or("").split_whitespace().map(str::to_lowercase).collect();
    Ok(Json(SearchResponse {
        total: u64::try_from(page.total).unwrap_or(0),
        limit: u32::try_from(page.limit).unwrap_or(0),
        offset: u32::try_from(page.offset).unwrap_or(0),
        items: page.items.into_iter().map(|r| summary(r, &words)).collect(),
    }))
}

/// The longest search text taken: a pasted error message is a few hundred
/// bytes; more is a client sending pages of text to make the store work.
pub const MAX_QUERY_TEXT_CHARS: usize = 2048;

fn to_store_query(query: &SearchQuery) -> Result<RuleQuery, AppError> {
    let invalid = |field: &str, e: String| AppError::BadRequest {
        code: "invalid_query",
        message: format!("{field}: {e}"),
    };
    if let Some(q) = query.q.as_deref().filter(|q| q.chars().count() > MAX_QUERY_TEXT_CHARS) {
        return Err(invalid(
            "q",
            format!(
                "{} characters; at most {MAX_QUERY_TEXT_CHARS} are searched",
                q.chars().count()
            ),
        ));
    }
    let severity = match query.severity.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some("error") => Some(Severity::Error),
        Some("warning") => Some(Severity::Warning),
        Some("info") => Some(Severity::Info),
        Some(other) => {
            return Err(invalid("severity", format!("{other:?} is not error, warning or info")));
        }
    };
    let state = match query.state.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(s.parse::<VersionState>().map_err(|e| invalid("state", e.to_string()))?),
    };
    let nonempty = |s: &Option<String>| {
        s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    Ok(RuleQuery {
        q: nonempty(&query.q),
        package: nonempty(&query.package),
        accelerator: nonempty(&query.accelerator).map(|a| accelerator_vendor(&a)),
        arch: None,
        engine: None,
        severity,
        state,
        limit: query.limit.map(i64::from),
        offset: query.offset.map(i64::from),
    })
}

/// A GPU model of the GPU table stands for its vendor, which is what
/// selectors name (`accelerator:nvidia`); anything else is taken as a vendor.
fn accelerator_vendor(text: &str) -> String {
    match pitfall_facts::gpus::resolve(text, None) {
        pitfall_facts::gpus::Resolution::Found(found) => found.gpu.vendor.clone(),
        _ => text.to_ascii_lowercase(),
    }
}

pub(crate) fn summary(rule: store::RuleSummary, words: &[String]) -> RuleSummary {
    // The signature the query matched best, so a pasted error shows its twin.
    let signature = rule
        .error_signatures
        .iter()
        .max_by_key(|s| {
            let s = s.to_lowercase();
            words.iter().filter(|w| s.contains(w.as_str())).count()
        })
        .cloned();
    RuleSummary {
        url: format!("/v1/rules/{}", rule.id),
        id: rule.id,
        version: rule.version,
        state: rule.state.to_string(),
        title: rule.title,
        severity: rule.severity.as_str().to_owned(),
        summary: rule.summary,
        applies_to: rule.applies_to,
        signature,
    }
}

/// Approved and yanked versions are public; pending and rejected ones are
/// for reviewers and the rule's owners.
fn is_public(version_state: VersionState) -> bool {
    matches!(version_state, VersionState::Approved | VersionState::Yanked)
}

/// Whether the caller may see a rule's unreviewed and rejected versions.
async fn sees_unreviewed(
    state: &AppState,
    caller: &Caller,
    rule_id: &str,
) -> Result<bool, AppError> {
    if caller.has(Role::Maintainer) {
        return Ok(true);
    }
    match &caller.0 {
        Some(p) => Ok(state.registry().store().is_owner(rule_id, p.account_id).await?),
        None => Ok(false),
    }
}

/// `GET /v1/catalogue`: every served rule's component, sources and the
/// date its boundaries were checked, generated from the rules themselves.
pub async fn catalogue(State(state): State<AppState>) -> Json<pitfall_contract::meta::Catalogue> {
    let rules = state.registry().rules();
    Json(pitfall_contract::meta::Catalogue::of(
        rules.revision(),
        rules.rules().iter().map(|r| r.meta()),
    ))
}

/// `GET /v1/rules/{id}`.
pub async fn rule(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RuleDetail>, AppError> {
    let detail = state
        .registry()
        .store()
        .rule(&id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("no rule {id}")))?;
    let all = detail.versions.iter().all(|v| is_public(v.state))
        || sees_unreviewed(&state, &caller, &id).await?;
    let versions: Vec<VersionDetail> =
        detail.versions.iter().filter(|v| all || is_public(v.state)).map(version_detail).collect();
    if versions.is_empty() {
        return Err(AppError::NotFound(format!("no rule {id}")));
    }
    let served_version = state
        .registry()
        .rules()
        .rules()
        .iter()
        .find(|r| r.id() == id)
        .map(|r| r.meta().version.clone());
    Ok(Json(RuleDetail {
        id: detail.id,
        owners: detail.owners.into_iter().map(|o| o.name).collect(),
        created_at: rfc3339(detail.created_at),
        served_version,
        versions,
    }))
}

async fn visible_version(
    state: &AppState,
    caller: &Caller,
    id: &str,
    version: &str,
) -> Result<VersionRecord, AppError> {
    let not_found = || AppError::NotFound(format!("no version {version} of rule {id}"));
    let record = state.registry().store().version(id, version).await?.ok_or_else(not_found)?;
    if !is_public(record.state) && !sees_unreviewed(state, caller, id).await? {
        return Err(not_found());
    }
    Ok(record)
}

/// `GET /v1/rules/{id}/versions/{version}`.
pub async fn version(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, version)): ApiPath<(String, String)>,
) -> Result<Json<VersionDetail>, AppError> {
    Ok(Json(version_detail(&visible_version(&state, &caller, &id, &version).await?)))
}

/// `GET /v1/rules/{id}/versions/{version}/module`: the wasm, immutable.
pub async fn module(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, version)): ApiPath<(String, String)>,
) -> Result<impl IntoResponse, AppError> {
    let record = visible_version(&state, &caller, &id, &version).await?;
    let bytes = state
        .registry()
        .store()
        .module(&id, &version)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("no module for {id} {version}")))?;
    Ok((
        [
            (CONTENT_TYPE, "application/wasm".to_owned()),
            // A version's bytes never change: clients may cache them for good.
            (CACHE_CONTROL, "public, max-age=31536000, immutable".to_owned()),
            (ETAG, format!("\"{}\"", record.sha256)),
        ],
        bytes,
    ))
}

/// `POST /v1/rules`: the body is a module; the pipeline decides.
pub async fn publish(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<(StatusCode, Json<VersionDetail>), AppError> {
    let principal = caller.at_least(Role::Contributor)?.clone();
    let limit = state.registry().engine().limits().max_module_bytes;
    let result = async {
        let bytes = read_body(body, limit).await.map_err(|e| match e {
            AppError::TooLarge { limit } => AppError::Refused {
                step: "size",
                message: format!("the module exceeds the limit of {limit} bytes"),
            },
            other => other,
        })?;
        if bytes.is_empty() {
            return Err(AppError::Refused {
                step: "validation",
                message: "the body is empty; send the .wasm module".into(),
            });
        }
        let accepted = publish::assess(state.registry().engine(), bytes.to_vec().into()).await?;
        let record = state
            .registry()
            .store()
            .insert_version(
                new_version(&accepted, &bytes),
                &Actor::Account(principal.clone()),
                VersionState::Pending,
            )
            .await?;
        Ok(record)
    }
    .await;
    let outcome = match &result {
        Ok(_) => "pending",
        Err(AppError::Refused { step, .. }) => step,
        Err(_) => "error",
    };
    state.metrics().record_publish(outcome);
    let record = result?;
    tracing::info!(rule = %record.rule_id, version = %record.version, account = %principal.name, "published, pending review");
    // The revision moved: keep this process's view current at once.
    refresh_after_write(&state).await;
    Ok((StatusCode::CREATED, Json(version_detail(&record))))
}

/// Reloads the served set after a write through this process (others see
/// it at their next poll). A failure leaves the poller to retry.
pub(crate) async fn refresh_after_write(state: &AppState) {
    if let Err(e) = state.registry().refresh().await {
        tracing::warn!(
            error = format!("{e:#}"),
            "refresh after a write failed; the poller retries"
        );
    }
    // Watches are evaluated against the change now, not at the next poll.
    if let Some(watcher) = state.watcher() {
        watcher.wake_evaluation();
    }
}

/// The wire form of a stored version.
pub(crate) fn version_detail(v: &VersionRecord) -> VersionDetail {
    VersionDetail {
        rule_id: v.rule_id.clone(),
        version: v.version.clone(),
        state: v.state.to_string(),
        sha256: v.sha256.clone(),
        meta: v.meta.clone(),
        tests: v.tests.clone(),
        report: v.report.clone(),
        published_by: v.published_by.as_ref().map(|a| a.name.clone()),
        created_at: rfc3339(v.created_at),
        reviewed_by: v.reviewed_by.as_ref().map(|a| a.name.clone()),
        review_reason: v.review_reason.clone(),
        module_url: format!("/v1/rules/{}/versions/{}/module", v.rule_id, v.version),
    }
}

/// A stored time as RFC 3339 (UTC, milliseconds).
pub(crate) fn rfc3339(at: UnixMillis) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(u64::try_from(at).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}
