//! The registry's storage: accounts and tokens, rules, their versions and
//! module bytes, the audit log and the ruleset revision, on SQLite (the
//! embedded default) or PostgreSQL (several replicas), chosen by URL.
//!
//! One set of queries serves both backends through `sqlx::Any`: SQL is
//! written in the common subset (`$N` placeholders, which sqlx's SQLite
//! driver accepts too; BIGINT Unix-millisecond timestamps; JSON as TEXT),
//! and the two schemas in `migrations/` mirror each other.
//!
//! Every write transaction starts with `Store::begin_write`, whose first
//! statement updates the one `registry_state` row. On SQLite that takes the
//! write lock at once, so a concurrent writer waits on the busy timeout
//! instead of failing with `SQLITE_BUSY` when a read snapshot goes stale;
//! on PostgreSQL the row lock serialises writers across processes, so the
//! read-then-insert checks inside a write cannot race and no revision
//! increment is lost. Registry writes are rare and short; one writer at a
//! time costs nothing that matters.
//!
//! The revision counts committed writes to rules: a publish, a state
//! change, a seed that stored something. Each bumps it by exactly one.
//! Account and token changes do not bump it: they change nothing that is
//! served, and the server reloads its rule set when the revision moves.
//! Each bump records the new revision and what it serves in the same
//! transaction (`history.rs`), so every replica and every restart reads
//! the same history.

mod accounts;
mod error;
mod history;
mod rules;
mod search;
mod sessions;
mod types;
mod watches;

use std::sync::Once;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::MigrateDatabase;
use sqlx::{Any, AnyConnection, AnyPool, Executor as _, Row};

pub use accounts::TOKEN_PREFIX;
pub use error::{Result, StoreError};
pub use sessions::{SESSION_IDLE_MS, SESSION_MAX_MS};
pub use types::*;
pub use watches::*;

/// How long a SQLite writer waits for another's lock before failing.
/// Writes are short transactions; this only needs to outlast a burst.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections per pool. SQLite has one writer at a time anyway; readers
/// run in parallel under WAL.
const MAX_CONNECTIONS: u32 = 8;

/// The database behind a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file (`sqlite://PATH`).
    Sqlite,
    /// A PostgreSQL database (`postgres://...`).
    Postgres,
}

impl Backend {
    /// The backend a database URL names.
    pub fn from_url(url: &str) -> Result<Backend> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Backend::Postgres)
        } else {
            Err(StoreError::Invalid(
                "the database URL must start with sqlite:// or postgres://".into(),
            ))
        }
    }

    /// `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The registry's storage. Cheap to clone (a pool handle).
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
}

/// How long a query waits for a connection. sqlx's default (30 s) would
/// make every write, and `/readyz`, hang for half a minute while the
/// database is down; a few seconds tell a busy pool from a dead database.
const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Store {
    /// Connects to `sqlite://PATH` (created if missing; WAL, foreign keys,
    /// a busy timeout) or `postgres://...`, and applies the migrations not
    /// yet applied. `sqlite::memory:` is refused: each pooled connection
    /// would see its own empty database.
    pub async fn connect(url: &str) -> Result<Store> {
        static DRIVERS: Once = Once::new();
        DRIVERS.call_once(sqlx::any::install_default_drivers);
        let backend = Backend::from_url(url)?;
        if backend == Backend::Sqlite {
            if url.contains(":memory:") || url.contains("mode=memory") {
                return Err(StoreError::Invalid(
                    "use a SQLite file, not an in-memory database".into(),
                ));
            }
            if !Any::database_exists(url).await? {
                Any::create_database(url).await?;
            }
        }
        let options: AnyConnectOptions = url.parse()?;
        let pool = AnyPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        configure_sqlite(conn).await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        let migrator = match backend {
            Backend::Sqlite => sqlx::migrate!("../migrations/sqlite"),
            Backend::Postgres => sqlx::migrate!("../migrations/postgres"),
        };
        migrator.run(&pool).await?;
        Ok(Store { pool, backend })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Whether the database answers (for `/readyz`).
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// The ruleset revision: moves by one with every committed rule write.
    pub async fn revision(&self) -> Result<i64> {
        let row = sqlx::query("SELECT revision FROM registry_state WHERE id = 1")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get("revision")?)
    }

    /// Starts a write transaction holding the registry's write lock (see
    /// the module docs); bump the revision in it with [`bump_revision`].
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Any>> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE registry_state SET revision = revision WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    /// Starts a read-only transaction whose reads all see one snapshot:
    /// on PostgreSQL `REPEATABLE READ` (its snapshot is taken at the first
    /// statement and kept; the default `READ COMMITTED` takes one per
    /// statement); on SQLite a deferred `BEGIN`, whose first read fixes the
    /// WAL snapshot every later read of the transaction sees. For reads of
    /// several statements that must agree (a row and its children).
    async fn begin_read(&self) -> Result<sqlx::Transaction<'static, Any>> {
        let begin = match self.backend {
            Backend::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            Backend::Sqlite => "BEGIN DEFERRED",
        };
        Ok(self.pool.begin_with(begin).await?)
    }

    /// Closes the pool, waiting for connections to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Per-connection SQLite settings (journal mode is kept in the file; the
/// others are per connection, so every new connection sets them).
async fn configure_sqlite(conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
    let busy = format!("PRAGMA busy_timeout = {}", SQLITE_BUSY_TIMEOUT.as_millis());
    // WAL: readers never block the writer. synchronous = NORMAL under WAL
    // survives application crashes; a power loss may drop the last
    // commits, never corrupt the file.
    for pragma in [
        "PRAGMA journal_mode = WAL",
        "PRAGMA foreign_keys = ON",
        busy.as_str(),
        "PRAGMA synchronous = NORMAL",
    ] {
        (&mut *conn).execute(pragma).await?;
    }
    Ok(())
}

/// Now, in Unix milliseconds (computed here, not by the database, so both
/// backends record the same kind of value).
fn now() -> UnixMillis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Now, in Unix milliseconds, as the store records it.
pub fn now_ms() -> UnixMillis {
    now()
}

/// Bumps the revision and records what the new revision serves
/// (`history.rs`), inside a transaction from `Store::begin_write`, after
/// the write's own statements, which changed the served version of the
/// `touched` rules at most.
async fn bump_revision(conn: &mut AnyConnection, touched: history::Touched<'_>) -> Result<i64> {
    let row = sqlx::query(
        "UPDATE registry_state SET revision = revision + 1 WHERE id = 1 RETURNING revision",
    )
    .fetch_one(&mut *conn)
    .await?;
    let revision = row.try_get("revision")?;
    history::record(conn, revision, touched).await?;
    Ok(revision)
}

/// What an audit entry is about, besides its action.
#[derive(Debug, Default)]
struct Subject<'a> {
    rule_id: Option<&'a str>,
    version: Option<&'a str>,
    token_id: Option<i64>,
    account_id: Option<i64>,
}

/// Records a write in the audit log; called inside the write's transaction.
async fn record(
    conn: &mut AnyConnection,
    actor: &Actor,
    action: &str,
    subject: Subject<'_>,
    detail: serde_json::Value,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (at, actor_account_id, actor_token_id, action, rule_id, version, token_id, account_id, detail) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(now())
    .bind(actor.account_id())
    .bind(actor.token_id())
    .bind(action)
    .bind(subject.rule_id)
    .bind(subject.version)
    .bind(subject.token_id)
    .bind(subject.account_id)
    .bind(detail.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether a database error is a unique-constraint violation.
fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| d.is_unique_violation())
}

/// Parses a stored JSON column.
fn json_column<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Reads an optional account reference from `{prefix}_id` / `{prefix}_name` columns.
fn account_ref(row: &sqlx::any::AnyRow, prefix: &str) -> Result<Option<AccountRef>> {
    let id: Option<i64> = row.try_get(format!("{prefix}_id").as_str())?;
    let name: Option<String> = row.try_get(format!("{prefix}_name").as_str())?;
    Ok(id.zip(name).map(|(id, name)| AccountRef { id, name }))
}
