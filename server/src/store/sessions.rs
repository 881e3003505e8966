//! The review pages' sessions. Signing in with a token makes a session: a
//! random id (`pfs_` + 64 hex digits) that only the browser's cookie
//! holds; the store keeps its sha256, so a copy of the database opens no
//! session. A session ends after [`SESSION_IDLE_MS`] without use or
//! [`SESSION_MAX_MS`] in all, at sign-out, and when its token is revoked
//! (`revoke_token` deletes them) or expires. A token in a cookie, as
//! before, would have put an API credential that never expires in every
//! request the browser sends.

use sqlx::Row;

use super::accounts::{principal_from_row, random_secret, secret_hash};
use super::{Principal, Result, Store, UnixMillis, now};

/// A session unused this long ends: 12 hours, a working day and then some.
pub const SESSION_IDLE_MS: UnixMillis = 12 * 3600 * 1000;
/// A session ends this long after sign-in, used or not: 7 days.
pub const SESSION_MAX_MS: UnixMillis = 7 * 24 * 3600 * 1000;
/// The prefix of a session id.
const SESSION_PREFIX: &str = "pfs_";
/// `last_seen_at` is refreshed at most this often: most page views read.
const LAST_SEEN_GRANULARITY_MS: UnixMillis = 60_000;

impl Store {
    /// Starts a session for the caller's token; returns its id, which is
    /// shown here only (for the cookie). Ended sessions are swept first.
    pub async fn create_session(&self, principal: &Principal) -> Result<String> {
        let now = now();
        self.sweep_sessions(now).await?;
        let id = random_secret(SESSION_PREFIX)?;
        sqlx::query(
            "INSERT INTO review_sessions (id_sha256, token_id, created_at, last_seen_at) \
             VALUES ($1, $2, $3, $3)",
        )
        .bind(secret_hash(&id))
        .bind(principal.token_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(id)
    }

    /// The caller a session id stands for; `None` for an unknown or ended
    /// session, or one whose token was revoked or has expired.
    pub async fn session(&self, id: &str) -> Result<Option<Principal>> {
        if !id.starts_with(SESSION_PREFIX) {
            return Ok(None);
        }
        let now = now();
        let row = sqlx::query(
            "SELECT s.last_seen_at, t.id AS token_id, t.expires_at, t.scopes, a.id AS account_id, a.name, a.role \
             FROM review_sessions s JOIN api_tokens t ON t.id = s.token_id JOIN accounts a ON a.id = t.account_id \
             WHERE s.id_sha256 = $1 AND s.created_at > $2 AND s.last_seen_at > $3 \
             AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $4)",
        )
        .bind(secret_hash(id))
        .bind(now - SESSION_MAX_MS)
        .bind(now - SESSION_IDLE_MS)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let principal = principal_from_row(&row)?;
        let last_seen: UnixMillis = row.try_get("last_seen_at")?;
        if now - last_seen >= LAST_SEEN_GRANULARITY_MS {
            // Bookkeeping: a failure (a busy database) only shortens the
            // session's idle allowance, it refuses no one now.
            let touched =
                sqlx::query("UPDATE review_sessions SET last_seen_at = $1 WHERE id_sha256 = $2")
                    .bind(now)
                    .bind(secret_hash(id))
                    .execute(&self.pool)
                    .await;
            if let Err(e) = touched {
                tracing::warn!(error = %e, "could not record session use");
            }
        }
        Ok(Some(principal))
    }

    /// Ends a session (sign-out). Ending an unknown one changes nothing.
    pub async fn end_session(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM review_sessions WHERE id_sha256 = $1")
            .bind(secret_hash(id))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Sessions stored, ended ones included until the next sweep.
    pub async fn session_count(&self) -> Result<i64> {
        let row =
            sqlx::query("SELECT COUNT(*) AS n FROM review_sessions").fetch_one(&self.pool).await?;
        Ok(row.try_get("n")?)
    }

    /// Deletes sessions past either bound.
    async fn sweep_sessions(&self, now: UnixMillis) -> Result<()> {
        sqlx::query("DELETE FROM review_sessions WHERE created_at <= $1 OR last_seen_at <= $2")
            .bind(now - SESSION_MAX_MS)
            .bind(now - SESSION_IDLE_MS)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
