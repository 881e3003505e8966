//! Accounts, tokens and the audit log. Admins manage accounts and roles;
//! every account manages its own tokens. A token's secret appears in
//! exactly one answer: the one that issued it.

use crate::extract::{ApiJson, ApiPath, ApiQuery};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use crate::api::rules::rfc3339;
use crate::api::types::{
    AccountView, AuditView, CreateAccountRequest, IssueTokenRequest, IssuedToken, SetRoleRequest,
    TokenView,
};
use crate::auth::Caller;
use crate::error::AppError;
use crate::state::AppState;
use crate::store::{
    Account, Actor, AuditEntry, Role, Scope, Scopes, TokenGrant, TokenInfo, UnixMillis,
};

fn account_view(a: &Account) -> AccountView {
    AccountView {
        name: a.name.clone(),
        role: a.role.to_string(),
        created_at: rfc3339(a.created_at),
    }
}

fn token_view(t: &TokenInfo) -> TokenView {
    TokenView {
        id: t.id,
        account: t.account_name.clone(),
        label: t.label.clone(),
        created_at: rfc3339(t.created_at),
        revoked_at: t.revoked_at.map(rfc3339),
        expires_at: t.expires_at.map(rfc3339),
        scopes: t.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
    }
}

/// The scopes a request asks for: a subset of the calling token's
/// (default: all of them), so no token mints a broader one.
fn requested_scopes(asked: Option<&[String]>, caller: Scopes) -> Result<Scopes, AppError> {
    let Some(asked) = asked else { return Ok(caller) };
    let scopes = asked
        .iter()
        .map(|s| {
            s.parse::<Scope>().map_err(|_| AppError::BadRequest {
                code: "invalid_scope",
                message: format!("{s:?} is not a scope: check, publish, review or admin"),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scopes = Scopes::of(scopes);
    if scopes == Scopes::of([]) {
        return Err(AppError::BadRequest {
            code: "invalid_scope",
            message: "a token needs at least one scope".into(),
        });
    }
    if !scopes.is_subset(caller) {
        return Err(AppError::Forbidden(
            "a token can only be issued scopes the calling token has".into(),
        ));
    }
    Ok(scopes)
}

/// When a new token expires: in `days` if asked, never by default, and
/// never after the calling token does.
fn requested_expiry(
    days: Option<u32>,
    caller: Option<UnixMillis>,
) -> Result<Option<UnixMillis>, AppError> {
    let asked = match days {
        None => None,
        Some(days @ 1..=3650) => Some(now_millis() + i64::from(days) * 86_400_000),
        Some(days) => {
            return Err(AppError::BadRequest {
                code: "invalid_expiry",
                message: format!("expires_in_days is 1 to 3650, not {days}"),
            });
        }
    };
    Ok(match (asked, caller) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    })
}

fn now_millis() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn parse_role(text: &str) -> Result<Role, AppError> {
    text.parse::<Role>().map_err(|_| AppError::BadRequest {
        code: "invalid_role",
        message: format!("{text:?} is not a role: contributor, maintainer or admin"),
    })
}

/// Account names: short, and safe in URLs, logs and pages.
pub fn validate_account_name(name: &str) -> Result<(), AppError> {
    let ok = (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(AppError::BadRequest {
            code: "invalid_account_name",
            message: format!(
                "{name:?}: an account name is 1 to 64 letters, digits, '-', '_' or '.'"
            ),
        })
    }
}

/// `GET /v1/whoami`.
pub async fn whoami(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<AccountView>, AppError> {
    let principal = caller.signed_in()?;
    let account = state
        .registry()
        .store()
        .account(principal.account_id)
        .await?
        .ok_or_else(|| AppError::Unauthorized("the token's account no longer exists".into()))?;
    Ok(Json(account_view(&account)))
}

/// `POST /v1/accounts` (admin).
pub async fn create_account(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<CreateAccountRequest>,
) -> Result<(StatusCode, Json<AccountView>), AppError> {
    let admin = caller.at_least(Role::Admin)?.clone();
    validate_account_name(&request.name)?;
    let role = request.role.as_deref().map_or(Ok(Role::Contributor), parse_role)?;
    let account = state
        .registry()
        .store()
        .create_account(&request.name, role, &Actor::Account(admin))
        .await?;
    Ok((StatusCode::CREATED, Json(account_view(&account))))
}

/// `PUT /v1/accounts/{name}/role` (admin).
pub async fn set_role(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<SetRoleRequest>,
) -> Result<Json<AccountView>, AppError> {
    let admin = caller.at_least(Role::Admin)?.clone();
    let role = parse_role(&request.role)?;
    let store = state.registry().store();
    let account = store
        .account_by_name(&name)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("no account {name}")))?;
    let account = store.set_role(account.id, role, &Actor::Account(admin)).await?;
    Ok(Json(account_view(&account)))
}

/// `POST /v1/tokens`: a new token for the caller (or, for an admin, for
/// any account).
pub async fn issue_token(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<IssueTokenRequest>,
) -> Result<(StatusCode, Json<IssuedToken>), AppError> {
    let principal = caller.signed_in()?.clone();
    let label = request.label.trim();
    if label.is_empty() || label.chars().count() > 100 {
        return Err(AppError::BadRequest {
            code: "invalid_label",
            message: "a token's label is 1 to 100 characters".into(),
        });
    }
    let store = state.registry().store();
    let account_id = match request.account.as_deref() {
        None => principal.account_id,
        Some(name) if name == principal.name => principal.account_id,
        Some(name) => {
            caller.at_least(Role::Admin)?;
            store
                .account_by_name(name)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("no account {name}")))?
                .id
        }
    };
    let grant = TokenGrant {
        scopes: requested_scopes(request.scopes.as_deref(), principal.scopes)?,
        expires_at: requested_expiry(request.expires_in_days, principal.expires_at)?,
    };
    let (secret, info) =
        store.issue_token_with(account_id, label, grant, &Actor::Account(principal)).await?;
    Ok((StatusCode::CREATED, Json(IssuedToken { token: secret, info: token_view(&info) })))
}

/// `GET /v1/tokens`: the caller's tokens (an admin's: all), no secrets.
pub async fn list_tokens(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<TokenView>>, AppError> {
    let principal = caller.signed_in()?;
    let filter = if caller.has(Role::Admin) { None } else { Some(principal.account_id) };
    let tokens = state.registry().store().list_tokens(filter).await?;
    Ok(Json(tokens.iter().map(token_view).collect()))
}

/// `DELETE /v1/tokens/{id}`: revoke the caller's own token (an admin: any).
pub async fn revoke_token(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<TokenView>, AppError> {
    let principal = caller.signed_in()?.clone();
    let store = state.registry().store();
    let token = store.token(id).await?;
    // To anyone but an admin, someone else's token and a missing one look
    // the same.
    if !token.is_some_and(|t| t.account_id == principal.account_id || caller.has(Role::Admin)) {
        return Err(AppError::NotFound(format!("no token {id} of yours")));
    }
    let info = store.revoke_token(id, &Actor::Account(principal)).await?;
    Ok(Json(token_view(&info)))
}

/// `GET /v1/audit` query.
#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /v1/audit` (admin): newest first.
pub async fn audit(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Json<Vec<AuditView>>, AppError> {
    caller.at_least(Role::Admin)?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let entries = state.registry().store().audit(limit, query.offset.unwrap_or(0).max(0)).await?;
    Ok(Json(entries.iter().map(audit_view).collect()))
}

fn audit_view(e: &AuditEntry) -> AuditView {
    let subject = match (&e.rule_id, &e.version, e.token_id, e.account_id) {
        (Some(rule), Some(version), _, _) => format!("rule {rule} {version}"),
        (Some(rule), None, _, _) => format!("rule {rule}"),
        (_, _, Some(token), _) => format!("token {token}"),
        (_, _, _, Some(account)) => format!("account {account}"),
        _ => String::new(),
    };
    AuditView {
        id: e.id,
        at: rfc3339(e.at),
        actor: e.actor.as_ref().map(|a| a.name.clone()),
        action: e.action.clone(),
        subject,
        detail: e.detail.clone(),
    }
}
