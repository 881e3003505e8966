//! Watches: `POST/GET /v1/watches`, `GET/PATCH/DELETE /v1/watches/{id}`,
//! `GET /v1/watches/{id}/deliveries`, `POST /v1/watches/{id}/test`.
//!
//! Any account may watch; an account sees and changes only its own
//! watches (another's is 404, as if it did not exist), an admin all. The
//! manifests are evaluated against the served set when stored, so the
//! first notification reports only what a later ruleset changes.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use pitfall_api::watch::{
    ChangeWatchRequest, CreateWatchRequest, DeliveryView, LabelledManifests, PingQueued, TryView,
    WatchDetail, WatchFinding, WatchLabel, WatchView,
};
use pitfall_engine::RuleSet;

use crate::admission::read_body;
use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiPath, ApiQuery, json_object};
use crate::state::AppState;
use crate::store::{NewWatch, NewWatchManifest, Principal, Role, WatchChange, WatchRecord};
use crate::watch::{parse_severity, ping_body, stored_finding};

/// Deliveries listed at most.
const MAX_DELIVERIES_LISTED: i64 = 200;

/// `POST /v1/watches` (any account).
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<(StatusCode, Json<WatchDetail>), AppError> {
    let principal = caller.signed_in()?.clone();
    let request: CreateWatchRequest = read_json(&state, body).await?;
    let name = request.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(bad(
            "invalid_name",
            "a watch's name is 1 to 100 characters, no control characters",
        ));
    }
    check_url(&state, &request.webhook_url)?;
    let min_severity = severity(request.min_severity.as_deref())?;
    let (secret, generated) = match request.secret {
        Some(secret) => {
            let length = secret.chars().count();
            if !(16..=256).contains(&length) {
                return Err(bad("invalid_secret", "the secret is 16 to 256 characters"));
            }
            (secret, false)
        }
        None => (new_secret()?, true),
    };
    let manifests = manifests(&state, request.manifests)?;
    let (manifests, revision) = evaluate(&state, manifests).await?;
    // Sealed before it reaches the store: a dump of the database alone
    // cannot sign as the registry.
    let sealed = state
        .registry()
        .secret_keys()
        .seal(&secret)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("sealing a watch secret: {e}")))?;
    let store = state.registry().store();
    let id = store
        .create_watch(
            principal.account_id,
            NewWatch {
                name,
                webhook_url: request.webhook_url,
                secret: sealed,
                min_severity,
                manifests,
                evaluated_revision: revision,
            },
        )
        .await?;
    tracing::info!(watch = id, account = %principal.name, "watch created");
    let mut detail = detail(&state, id).await?;
    detail.secret = generated.then_some(secret);
    Ok((StatusCode::CREATED, Json(detail)))
}

/// `GET /v1/watches`: the caller's watches (an admin's: everyone's).
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<WatchView>>, AppError> {
    let principal = caller.signed_in()?;
    let account = if caller.has(Role::Admin) { None } else { Some(principal.account_id) };
    let watches = state.registry().store().watches(account).await?;
    Ok(Json(watches.iter().map(view).collect()))
}

/// `GET /v1/watches/{id}`.
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<WatchDetail>, AppError> {
    owned(&state, &caller, id).await?;
    Ok(Json(detail(&state, id).await?))
}

/// `PATCH /v1/watches/{id}`: replace the manifests, the URL or the least
/// severity.
pub async fn change(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
    body: Body,
) -> Result<Json<WatchDetail>, AppError> {
    owned(&state, &caller, id).await?;
    let request: ChangeWatchRequest = read_json(&state, body).await?;
    if let Some(url) = &request.webhook_url {
        check_url(&state, url)?;
    }
    let min_severity = match request.min_severity.as_deref() {
        Some(s) => Some(severity(Some(s))?),
        None => None,
    };
    let mut change =
        WatchChange { webhook_url: request.webhook_url, min_severity, ..WatchChange::default() };
    if let Some(manifests) = request.manifests {
        let (manifests, revision) = evaluate(&state, self::manifests(&state, manifests)?).await?;
        change.manifests = Some(manifests);
        change.evaluated_revision = revision;
    }
    if !state.registry().store().change_watch(id, change).await? {
        return Err(not_found(id));
    }
    Ok(Json(detail(&state, id).await?))
}

/// `DELETE /v1/watches/{id}`: the watch, its manifests and its deliveries.
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<WatchView>, AppError> {
    let record = owned(&state, &caller, id).await?;
    if !state.registry().store().delete_watch(id).await? {
        return Err(not_found(id));
    }
    tracing::info!(watch = id, "watch deleted");
    Ok(Json(view(&record)))
}

/// `?limit=` of the delivery log.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct DeliveriesQuery {
    /// Newest first, at most this many (1 to 200, default 50).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
}

/// `GET /v1/watches/{id}/deliveries`: newest first, with every try.
pub async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> Result<Json<Vec<DeliveryView>>, AppError> {
    owned(&state, &caller, id).await?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=MAX_DELIVERIES_LISTED).contains(&limit) {
        return Err(bad("invalid_query", "limit is 1 to 200"));
    }
    let records = state.registry().store().watch_deliveries(id, limit).await?;
    Ok(Json(
        records
            .into_iter()
            .map(|d| DeliveryView {
                event_id: d.event_id,
                kind: d.kind,
                state: d.state,
                attempts: d.attempts,
                created_at: d.created_at,
                next_attempt_at: d.next_attempt_at,
                last_status: d.last_status,
                last_error: d.last_error,
                delivered_at: d.delivered_at,
                tries: d
                    .tries
                    .into_iter()
                    .map(|t| TryView {
                        at: t.at,
                        status: t.status,
                        error: t.error,
                        elapsed_ms: t.elapsed_ms,
                    })
                    .collect(),
            })
            .collect(),
    ))
}

/// `POST /v1/watches/{id}/test`: enqueue a ping, delivered as any event.
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<(StatusCode, Json<PingQueued>), AppError> {
    let record = owned(&state, &caller, id).await?;
    let event_id = format!("w{id}-ping-{}", random_hex(8)?);
    let event = crate::store::NewEvent {
        watch_id: id,
        event_id: event_id.clone(),
        kind: "ping",
        body: ping_body(&event_id, id, &record.name),
    };
    state.registry().store().enqueue_watch_event(&event).await?;
    if let Some(watcher) = state.watcher() {
        watcher.wake_delivery();
    }
    Ok((StatusCode::ACCEPTED, Json(PingQueued { event_id })))
}

/// The watch if the caller may see it: its owner or an admin. Another
/// account's watch is answered as missing, so ids reveal nothing.
async fn owned(state: &AppState, caller: &Caller, id: i64) -> Result<WatchRecord, AppError> {
    let principal: &Principal = caller.signed_in()?;
    let record = state.registry().store().watch(id).await?.ok_or_else(|| not_found(id))?;
    if record.account_id != principal.account_id && !caller.has(Role::Admin) {
        return Err(not_found(id));
    }
    Ok(record)
}

async fn detail(state: &AppState, id: i64) -> Result<WatchDetail, AppError> {
    let store = state.registry().store();
    let record = store.watch(id).await?.ok_or_else(|| not_found(id))?;
    let labels = store
        .watch_findings(id)
        .await?
        .into_iter()
        .map(|(label, findings)| WatchLabel {
            label,
            findings: findings
                .into_iter()
                .map(|f| WatchFinding {
                    rule_id: f.rule_id,
                    rule_version: f.rule_version,
                    severity: f.severity,
                    title: f.title,
                })
                .collect(),
        })
        .collect();
    Ok(WatchDetail { watch: view(&record), labels, secret: None })
}

/// The wire form of a stored watch.
pub fn view(r: &WatchRecord) -> WatchView {
    WatchView {
        id: r.id,
        name: r.name.clone(),
        account: r.account_name.clone(),
        webhook_url: r.webhook_url.clone(),
        min_severity: r.min_severity.clone(),
        manifests: r.manifests,
        evaluated_revision: r.evaluated_revision,
        evaluated_at: r.evaluated_at,
        failing: r.failing,
        pending_deliveries: r.pending_deliveries,
        failed_deliveries: r.failed_deliveries,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// Reads a JSON object body within the watch body bound.
async fn read_json<T: serde::de::DeserializeOwned>(
    state: &AppState,
    body: Body,
) -> Result<T, AppError> {
    let bytes = read_body(body, state.limits().watch.max_watch_body_bytes).await?;
    json_object(&bytes).map_err(|e| AppError::BadRequest {
        code: "invalid_json",
        message: format!("the body is not the JSON expected: {e}"),
    })
}

fn check_url(state: &AppState, url: &str) -> Result<(), AppError> {
    let policy = crate::watch::target::UrlPolicy {
        allow_private: state.limits().watch.watch_allow_private_urls,
    };
    crate::watch::target::validate(url, policy)
        .map_err(|why| bad("invalid_webhook_url", &format!("webhook_url: {why}")))
}

fn severity(text: Option<&str>) -> Result<String, AppError> {
    let text = text.unwrap_or("warning");
    parse_severity(text)
        .map(|s| s.as_str().to_owned())
        .ok_or_else(|| bad("invalid_severity", "min_severity is info, warning or error"))
}

/// The manifests of a request, each read and validated as a check reads
/// it: (label, JSON text), by label.
fn manifests(state: &AppState, list: LabelledManifests) -> Result<Vec<(String, String)>, AppError> {
    let bound = state.limits().watch.max_watch_manifests;
    if list.is_empty() || list.len() > bound {
        return Err(bad("invalid_manifests", &format!("a watch holds 1 to {bound} manifests")));
    }
    let mut out = Vec::with_capacity(list.len());
    for (label, manifest) in list {
        // A label is the user's own text, kept as given (escaped where
        // shown); the body bound bounds it.
        let text = manifest.to_string();
        if text.len() > state.limits().max_manifest_bytes {
            return Err(AppError::TooLarge { limit: state.limits().max_manifest_bytes });
        }
        crate::manifest::read_manifest(text.as_bytes()).map_err(|e| match e {
            AppError::BadRequest { code, message } => {
                AppError::BadRequest { code, message: format!("manifests[{label:?}]: {message}") }
            }
            AppError::Unprocessable { code, message } => AppError::Unprocessable {
                code,
                message: format!("manifests[{label:?}]: {message}"),
            },
            other => other,
        })?;
        out.push((label, text));
    }
    Ok(out)
}

/// Evaluates manifests against the served set (refreshed first, so a
/// watch is not born behind the store); their findings and the revision.
async fn evaluate(
    state: &AppState,
    manifests: Vec<(String, String)>,
) -> Result<(Vec<NewWatchManifest>, i64), AppError> {
    if let Err(e) = state.registry().refresh().await {
        tracing::warn!(error = format!("{e:#}"), "refresh before a watch write failed");
    }
    let rules: Arc<RuleSet> = state.registry().rules();
    let revision = rules.revision().parse::<i64>().unwrap_or(0);
    let engine = state.registry().engine().clone();
    let _slot = state.check_slot().await?;
    let evaluated = tokio::task::spawn_blocking(move || {
        use rayon::prelude::*;
        manifests
            .into_par_iter()
            .map(|(label, manifest)| {
                let findings = crate::manifest::read_manifest(manifest.as_bytes())
                    .map(|m| {
                        rules
                            .check(&engine, m)
                            .findings
                            .iter()
                            .map(|f| stored_finding(f.finding()))
                            .collect()
                    })
                    .unwrap_or_default();
                NewWatchManifest { label, manifest, findings }
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| AppError::Internal(anyhow::anyhow!("evaluating a watch: {e}")))?;
    Ok((evaluated, revision))
}

fn new_secret() -> Result<String, AppError> {
    Ok(format!("whsec_{}", random_hex(24)?))
}

fn random_hex(bytes: usize) -> Result<String, AppError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn bad(code: &'static str, message: &str) -> AppError {
    AppError::BadRequest { code, message: message.to_owned() }
}

fn not_found(id: i64) -> AppError {
    AppError::NotFound(format!("no watch {id}"))
}
