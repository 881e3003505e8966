//! Who is calling: an `Authorization: Bearer <token>` header resolved to an
//! account and its role. No header means anonymous (check and read); a
//! header with an unknown or revoked token is refused outright rather than
//! treated as anonymous, so a client with a broken token learns it at once.
//! Tokens are never logged: only the account name and token id are.
//!
//! A token's rights are its account's role's narrowed to the token's
//! scopes (`check`, `publish`, `review`, `admin`): a role's own powers need
//! its scope ([`Scope::of_role`]), so a `publish` token of an admin
//! publishes but manages no account.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::error::AppError;
use crate::state::AppState;
use crate::store::{Principal, Role, Scope};

/// The caller of a request: anonymous, or an account.
#[derive(Debug, Clone)]
pub struct Caller(pub Option<Principal>);

impl Caller {
    /// The account, or 401 for anonymous callers.
    pub fn signed_in(&self) -> Result<&Principal, AppError> {
        self.0.as_ref().ok_or_else(|| {
            AppError::Unauthorized("this needs a token: Authorization: Bearer <token>".into())
        })
    }

    /// The account if its role is at least `role` (contributor < maintainer
    /// < admin) and its token carries that role's scope, else 401 or 403.
    pub fn at_least(&self, role: Role) -> Result<&Principal, AppError> {
        let principal = self.signed_in()?;
        if rank(principal.role) < rank(role) {
            return Err(AppError::Forbidden(format!(
                "this needs the {} role; {} is a {}",
                role.as_str(),
                principal.name,
                principal.role.as_str()
            )));
        }
        let scope = Scope::of_role(role);
        if !principal.scopes.contains(scope) {
            return Err(AppError::Forbidden(format!(
                "this needs a token with the {} scope; this one has {}",
                scope.as_str(),
                principal.scopes.iter().map(Scope::as_str).collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(principal)
    }

    /// Whether the caller's role is at least `role` and its token carries
    /// that role's scope.
    pub fn has(&self, role: Role) -> bool {
        self.0
            .as_ref()
            .is_some_and(|p| rank(p.role) >= rank(role) && p.scopes.contains(Scope::of_role(role)))
    }
}

/// The token of an `Authorization: Bearer <token>` header, if the request
/// has one of that form: what authentication and the per-token rate limit
/// both key on.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)?
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

fn rank(role: Role) -> u8 {
    match role {
        Role::Contributor => 1,
        Role::Maintainer => 2,
        Role::Admin => 3,
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, AppError> {
        if !parts.headers.contains_key(AUTHORIZATION) {
            return Ok(Caller(None));
        }
        let token = bearer_token(&parts.headers).ok_or_else(|| {
            AppError::Unauthorized("the Authorization header must be `Bearer <token>`".into())
        })?;
        match state.registry().store().authenticate(token).await? {
            Some(principal) => Ok(Caller(Some(principal))),
            None => Err(AppError::Unauthorized("unknown or revoked token".into())),
        }
    }
}
