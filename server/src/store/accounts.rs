//! Accounts, API tokens and reading the audit log.
//!
//! A token's secret is `pft_` + 64 hex digits (32 random bytes from the
//! OS). Only its sha256 is stored: a copy of the database authenticates no
//! one. Lookup is by that hash, so no secret is ever compared in SQL.

use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{
    Account, Actor, AuditEntry, Principal, Result, Role, Scope, Scopes, Store, StoreError, Subject,
    TokenGrant, TokenInfo, account_ref, audit, is_unique_violation, json_column, now, record,
};

/// The prefix of every token secret: makes leaked tokens recognisable to
/// secret scanners and lets `authenticate` refuse other strings unread.
pub const TOKEN_PREFIX: &str = "pft_";
/// Random bytes in a token secret.
const TOKEN_BYTES: usize = 32;
/// `last_used_at` is refreshed at most this often, so authenticating is a
/// read, not a write, on almost every request.
const LAST_USED_GRANULARITY_MS: i64 = 60_000;
/// The most audit entries one call returns.
const MAX_AUDIT_PAGE: i64 = 500;

const ACCOUNT_COLUMNS: &str = "id, name, role, created_at";
const TOKEN_SELECT: &str = "SELECT t.id, t.account_id, a.name AS account_name, t.label, t.created_at, t.revoked_at, \
     t.last_used_at, t.expires_at, t.scopes FROM api_tokens t JOIN accounts a ON a.id = t.account_id";

impl Store {
    /// Creates an account. A taken name is [`StoreError::Conflict`].
    pub async fn create_account(&self, name: &str, role: Role, actor: &Actor) -> Result<Account> {
        let name = name.trim();
        if name.is_empty() || name.len() > 64 || name.chars().any(char::is_whitespace) {
            return Err(StoreError::Invalid(
                "an account name is 1 to 64 characters without spaces".into(),
            ));
        }
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(&format!(
            "INSERT INTO accounts (name, role, created_at) VALUES ($1, $2, $3) RETURNING {ACCOUNT_COLUMNS}"
        ))
        .bind(name)
        .bind(role.as_str())
        .bind(now())
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::Conflict(format!("the account name {name:?} is taken"))
            } else {
                e.into()
            }
        })?;
        let account = account_from_row(&row)?;
        let subject = Subject { account_id: Some(account.id), ..Subject::default() };
        record(
            &mut tx,
            actor,
            audit::ACCOUNT_CREATE,
            subject,
            json!({ "name": name, "role": role }),
        )
        .await?;
        tx.commit().await?;
        Ok(account)
    }

    /// The account with this id.
    pub async fn account(&self, id: i64) -> Result<Option<Account>> {
        let row = sqlx::query(&format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(account_from_row).transpose()
    }

    /// The account with this name.
    pub async fn account_by_name(&self, name: &str) -> Result<Option<Account>> {
        let row = sqlx::query(&format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE name = $1"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(account_from_row).transpose()
    }

    /// Every account, by name.
    pub async fn accounts(&self) -> Result<Vec<Account>> {
        let rows = sqlx::query(&format!("SELECT {ACCOUNT_COLUMNS} FROM accounts ORDER BY name"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(account_from_row).collect()
    }

    /// How many accounts may review (maintainers and admins).
    pub async fn reviewer_count(&self) -> Result<i64> {
        let row =
            sqlx::query("SELECT COUNT(*) AS n FROM accounts WHERE role IN ('maintainer', 'admin')")
                .fetch_one(&self.pool)
                .await?;
        Ok(row.try_get("n")?)
    }

    /// Changes an account's role.
    pub async fn set_role(&self, account_id: i64, role: Role, actor: &Actor) -> Result<Account> {
        let mut tx = self.begin_write().await?;
        let before: Option<String> = sqlx::query("SELECT role FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| r.try_get("role"))
            .transpose()?;
        let row = sqlx::query(&format!(
            "UPDATE accounts SET role = $1 WHERE id = $2 RETURNING {ACCOUNT_COLUMNS}"
        ))
        .bind(role.as_str())
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("no account {account_id}")))?;
        let account = account_from_row(&row)?;
        let subject = Subject { account_id: Some(account_id), ..Subject::default() };
        record(
            &mut tx,
            actor,
            audit::ACCOUNT_SET_ROLE,
            subject,
            json!({ "from": before, "to": role }),
        )
        .await?;
        tx.commit().await?;
        Ok(account)
    }

    /// Issues a token for an account, with no expiry and every scope. The
    /// secret is returned here and never again; only its hash is stored.
    pub async fn issue_token(
        &self,
        account_id: i64,
        label: &str,
        actor: &Actor,
    ) -> Result<(String, TokenInfo)> {
        self.issue_token_with(account_id, label, TokenGrant::default(), actor).await
    }

    /// [`Store::issue_token`] with an expiry and scopes.
    pub async fn issue_token_with(
        &self,
        account_id: i64,
        label: &str,
        grant: TokenGrant,
        actor: &Actor,
    ) -> Result<(String, TokenInfo)> {
        if grant.scopes == Scopes::of([]) {
            return Err(StoreError::Invalid("a token needs at least one scope".into()));
        }
        let secret = new_secret()?;
        let mut tx = self.begin_write().await?;
        let id: i64 = sqlx::query(
            "INSERT INTO api_tokens (account_id, label, secret_sha256, created_at, expires_at, scopes) \
             SELECT id, $1, $2, $3, $4, $5 FROM accounts WHERE id = $6 RETURNING id",
        )
        .bind(label)
        .bind(secret_hash(&secret))
        .bind(now())
        .bind(grant.expires_at)
        .bind(grant.scopes.stored())
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("no account {account_id}")))?
        .try_get("id")?;
        let subject =
            Subject { token_id: Some(id), account_id: Some(account_id), ..Subject::default() };
        let detail = json!({
            "label": label,
            "expires_at": grant.expires_at,
            "scopes": grant.scopes.iter().map(Scope::as_str).collect::<Vec<_>>(),
        });
        record(&mut tx, actor, audit::TOKEN_ISSUE, subject, detail).await?;
        let info = token_by_id(&mut tx, id).await?;
        tx.commit().await?;
        Ok((secret, info))
    }

    /// The account behind a token secret; `None` for an unknown, revoked
    /// or expired token (or a string that is not a token at all).
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Principal>> {
        if !secret.starts_with(TOKEN_PREFIX) {
            return Ok(None);
        }
        let row = sqlx::query(
            "SELECT t.id AS token_id, t.last_used_at, t.expires_at, t.scopes, a.id AS account_id, a.name, a.role \
             FROM api_tokens t JOIN accounts a ON a.id = t.account_id \
             WHERE t.secret_sha256 = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $2)",
        )
        .bind(secret_hash(secret))
        .bind(now())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let principal = principal_from_row(&row)?;
        let last_used: Option<i64> = row.try_get("last_used_at")?;
        let now = now();
        if last_used.is_none_or(|t| now - t >= LAST_USED_GRANULARITY_MS) {
            // Bookkeeping, not a registry write: not audited, and its
            // failure (a busy database) does not refuse the caller.
            let touched = sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2")
                .bind(now)
                .bind(principal.token_id)
                .execute(&self.pool)
                .await;
            if let Err(e) = touched {
                tracing::warn!(token_id = principal.token_id, error = %e, "could not record token use");
            }
        }
        Ok(Some(principal))
    }

    /// Revokes a token. Revoking a revoked token changes nothing and
    /// returns it as it is.
    pub async fn revoke_token(&self, token_id: i64, actor: &Actor) -> Result<TokenInfo> {
        let mut tx = self.begin_write().await?;
        let revoked = sqlx::query(
            "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
        )
        .bind(now())
        .bind(token_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let info = token_by_id(&mut tx, token_id).await?;
        // Its review sessions end with it (they would no longer
        // authenticate anyway: a session is only as good as its token).
        sqlx::query("DELETE FROM review_sessions WHERE token_id = $1")
            .bind(token_id)
            .execute(&mut *tx)
            .await?;
        if revoked > 0 {
            let subject = Subject {
                token_id: Some(token_id),
                account_id: Some(info.account_id),
                ..Subject::default()
            };
            record(&mut tx, actor, audit::TOKEN_REVOKE, subject, json!({ "label": info.label }))
                .await?;
        }
        tx.commit().await?;
        Ok(info)
    }

    /// The token with this id (never its secret).
    pub async fn token(&self, token_id: i64) -> Result<Option<TokenInfo>> {
        let row = sqlx::query(&format!("{TOKEN_SELECT} WHERE t.id = $1"))
            .bind(token_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(token_from_row).transpose()
    }

    /// Tokens, of one account or of all, oldest first (never their secrets).
    pub async fn list_tokens(&self, account_id: Option<i64>) -> Result<Vec<TokenInfo>> {
        let rows = match account_id {
            Some(id) => {
                sqlx::query(&format!("{TOKEN_SELECT} WHERE t.account_id = $1 ORDER BY t.id"))
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await?
            }
            None => {
                sqlx::query(&format!("{TOKEN_SELECT} ORDER BY t.id")).fetch_all(&self.pool).await?
            }
        };
        rows.iter().map(token_from_row).collect()
    }

    /// Audit entries, newest first; `limit` is capped at 500.
    pub async fn audit(&self, limit: i64, offset: i64) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT l.id, l.at, l.actor_account_id AS actor_id, a.name AS actor_name, l.actor_token_id, l.action, \
             l.rule_id, l.version, l.token_id, l.account_id, l.detail \
             FROM audit_log l LEFT JOIN accounts a ON a.id = l.actor_account_id \
             ORDER BY l.id DESC LIMIT $1 OFFSET $2",
        )
        .bind(limit.clamp(0, MAX_AUDIT_PAGE))
        .bind(offset.max(0))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AuditEntry {
                    id: row.try_get("id")?,
                    at: row.try_get("at")?,
                    actor: account_ref(row, "actor")?,
                    actor_token_id: row.try_get("actor_token_id")?,
                    action: row.try_get("action")?,
                    rule_id: row.try_get("rule_id")?,
                    version: row.try_get("version")?,
                    token_id: row.try_get("token_id")?,
                    account_id: row.try_get("account_id")?,
                    detail: json_column(&row.try_get::<String, _>("detail")?, "audit detail")?,
                })
            })
            .collect()
    }
}

/// The sha256 of a token secret, as stored.
pub(crate) fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// A fresh secret from the OS's random source.
fn new_secret() -> Result<String> {
    random_secret(TOKEN_PREFIX)
}

/// `prefix` and 32 random bytes from the OS, in hex.
pub(super) fn random_secret(prefix: &str) -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| StoreError::Invalid(format!("no randomness from the OS: {e}")))?;
    Ok(format!("{prefix}{}", hex(&bytes)))
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

async fn token_by_id(conn: &mut sqlx::AnyConnection, token_id: i64) -> Result<TokenInfo> {
    let row = sqlx::query(&format!("{TOKEN_SELECT} WHERE t.id = $1"))
        .bind(token_id)
        .fetch_optional(conn)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("no token {token_id}")))?;
    token_from_row(&row)
}

fn account_from_row(row: &AnyRow) -> Result<Account> {
    Ok(Account {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        role: row.try_get::<String, _>("role")?.parse()?,
        created_at: row.try_get("created_at")?,
    })
}

/// The caller a row of `api_tokens t JOIN accounts a` names (columns
/// `token_id`, `expires_at`, `scopes`, `account_id`, `name`, `role`).
pub(super) fn principal_from_row(row: &AnyRow) -> Result<Principal> {
    Ok(Principal {
        account_id: row.try_get("account_id")?,
        name: row.try_get("name")?,
        role: row.try_get::<String, _>("role")?.parse()?,
        token_id: row.try_get("token_id")?,
        scopes: Scopes::from_stored(row.try_get::<Option<String>, _>("scopes")?.as_deref())?,
        expires_at: row.try_get("expires_at")?,
    })
}

fn token_from_row(row: &AnyRow) -> Result<TokenInfo> {
    Ok(TokenInfo {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        account_name: row.try_get("account_name")?,
        label: row.try_get("label")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
        last_used_at: row.try_get("last_used_at")?,
        expires_at: row.try_get("expires_at")?,
        scopes: Scopes::from_stored(row.try_get::<Option<String>, _>("scopes")?.as_deref())?,
    })
}
