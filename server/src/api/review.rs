//! Review: approve, reject, yank, and the queue of pending versions.

use crate::extract::ApiPath;
use axum::Json;
use axum::body::Body;
use axum::extract::State;

use crate::admission::read_body;
use crate::api::rules::{refresh_after_write, version_detail};
use crate::api::types::{ReviewRequest, VersionDetail};
use crate::auth::Caller;
use crate::error::AppError;
use crate::state::AppState;
use crate::store::{Actor, Principal, Role, VersionState};

/// A review body is tiny; anything larger is not a reason.
const MAX_REVIEW_BODY: usize = 16 << 10;

/// The optional `{"reason": ...}` body (an empty body means no reason).
async fn reason(body: Body) -> Result<Option<String>, AppError> {
    let bytes = read_body(body, MAX_REVIEW_BODY).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let request: ReviewRequest =
        crate::extract::json_object(&bytes).map_err(|e| AppError::BadRequest {
            code: "invalid_json",
            message: format!("the body must be {{\"reason\": \"...\"}}: {e}"),
        })?;
    Ok(request.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()))
}

async fn change_state(
    state: &AppState,
    actor: Actor,
    id: &str,
    version: &str,
    to: VersionState,
    reason: Option<String>,
) -> Result<Json<VersionDetail>, AppError> {
    let record =
        state.registry().store().set_state(id, version, to, &actor, reason.as_deref()).await?;
    tracing::info!(rule = %id, version = %version, state = %to, "review");
    refresh_after_write(state).await;
    Ok(Json(version_detail(&record)))
}

/// `POST /v1/rules/{id}/versions/{version}/approve` (maintainer).
pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, version)): ApiPath<(String, String)>,
    body: Body,
) -> Result<Json<VersionDetail>, AppError> {
    review(&state, &caller, &id, &version, body, VersionState::Approved).await
}

/// `POST /v1/rules/{id}/versions/{version}/reject` (maintainer).
pub async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, version)): ApiPath<(String, String)>,
    body: Body,
) -> Result<Json<VersionDetail>, AppError> {
    review(&state, &caller, &id, &version, body, VersionState::Rejected).await
}

/// A maintainer's decision on a version.
async fn review(
    state: &AppState,
    caller: &Caller,
    id: &str,
    version: &str,
    body: Body,
    to: VersionState,
) -> Result<Json<VersionDetail>, AppError> {
    let principal = caller.at_least(Role::Maintainer)?.clone();
    if to == VersionState::Approved {
        refuse_self_approval(state, &principal, id, version).await?;
    }
    let reason = reason(body).await?;
    change_state(state, Actor::Account(principal), id, version, to, reason).await
}

/// A maintainer may not approve a version they published or of a rule
/// they own: a second pair of eyes is the point of review. The exception
/// is a registry with one reviewer in all, and only when its server was
/// started with `--sole-maintainer-self-approval` (someone has to approve).
async fn refuse_self_approval(
    state: &AppState,
    principal: &Principal,
    id: &str,
    version: &str,
) -> Result<(), AppError> {
    let store = state.registry().store();
    let published_by = store.version(id, version).await?.and_then(|v| v.published_by);
    let own = published_by.is_some_and(|by| by.id == principal.account_id)
        || store.is_owner(id, principal.account_id).await?;
    if !own {
        return Ok(());
    }
    if state.limits().sole_maintainer_self_approval && store.reviewer_count().await? <= 1 {
        tracing::info!(rule = %id, version = %version, account = %principal.name, "self-approval by the sole maintainer");
        return Ok(());
    }
    Err(AppError::Forbidden(format!(
        "{} may not approve {id} {version}: they published it or own the rule, and review needs \
         another maintainer (a registry with a single maintainer may allow it with \
         --sole-maintainer-self-approval)",
        principal.name
    )))
}

/// `POST /v1/rules/{id}/versions/{version}/yank` (an owner or a maintainer).
pub async fn yank(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, version)): ApiPath<(String, String)>,
    body: Body,
) -> Result<Json<VersionDetail>, AppError> {
    let principal = caller.signed_in()?.clone();
    let as_owner = principal.scopes.contains(crate::store::Scope::Publish)
        && state.registry().store().is_owner(&id, principal.account_id).await?;
    if !caller.has(Role::Maintainer) && !as_owner {
        return Err(AppError::Forbidden(format!(
            "only an owner of {id} or a maintainer may yank it"
        )));
    }
    let reason = reason(body).await?;
    change_state(&state, Actor::Account(principal), &id, &version, VersionState::Yanked, reason)
        .await
}

/// `GET /v1/review` (maintainer): pending versions, oldest first.
pub async fn queue(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<VersionDetail>>, AppError> {
    caller.at_least(Role::Maintainer)?;
    let pending = state.registry().store().pending_versions().await?;
    Ok(Json(pending.iter().map(version_detail).collect()))
}
