//! Watches: stored manifests re-evaluated when the served ruleset changes,
//! their findings at the last evaluation, the evaluator's cursor, and the
//! outbox of webhook deliveries with every try.
//!
//! Every watch write and every evaluation result takes the one
//! `watch_state` row first (as rule writes take `registry_state`): on
//! PostgreSQL its row lock orders them across replicas, on SQLite the
//! write lock does. So the `seq` each manifest row is written with commits
//! in order, and an index that has read every row up to a seq has read
//! every row that will ever carry a lower one.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::{Backend, Result, Store, StoreError, UnixMillis, is_unique_violation, now};
use crate::secret_box::{SealedSecret, SealingKey, SealingKeys};

/// A finding as stored for a manifest: what the next evaluation compares with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredFinding {
    /// The rule.
    pub rule_id: String,
    /// Its version when it matched.
    pub rule_version: String,
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// The rule's title.
    pub title: String,
}

/// A manifest of a watch, with its findings at evaluation.
#[derive(Debug, Clone)]
pub struct NewWatchManifest {
    /// The user's name for it (a host, a pool).
    pub label: String,
    /// The manifest's JSON text, as sent.
    pub manifest: String,
    /// Its findings against the set it was evaluated with.
    pub findings: Vec<StoredFinding>,
}

/// What creating a watch stores.
#[derive(Debug, Clone)]
pub struct NewWatch {
    /// Unique per account.
    pub name: String,
    /// Where notifications go (validated by the caller).
    pub webhook_url: String,
    /// The HMAC key of the signatures, sealed (the store never holds it
    /// in the clear).
    pub secret: SealedSecret,
    /// The least severity notified.
    pub min_severity: String,
    /// The manifests, each evaluated against `evaluated_revision`.
    pub manifests: Vec<NewWatchManifest>,
    /// The ruleset revision the findings were computed at.
    pub evaluated_revision: i64,
}

/// What a change to a watch replaces; `None` keeps the stored value.
#[derive(Debug, Clone, Default)]
pub struct WatchChange {
    /// New manifests (all of them replaced), evaluated at `evaluated_revision`.
    pub manifests: Option<Vec<NewWatchManifest>>,
    /// The revision the new manifests were evaluated at.
    pub evaluated_revision: i64,
    /// A new webhook URL.
    pub webhook_url: Option<String>,
    /// A new least severity.
    pub min_severity: Option<String>,
}

/// A stored watch, with counts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WatchRecord {
    /// Its id.
    pub id: i64,
    /// The owning account.
    pub account_id: i64,
    /// The owning account's name.
    pub account_name: String,
    /// Its name.
    pub name: String,
    /// Where notifications go.
    pub webhook_url: String,
    /// The least severity notified.
    pub min_severity: String,
    /// When it was created.
    pub created_at: UnixMillis,
    /// When it last changed.
    pub updated_at: UnixMillis,
    /// The ruleset revision it was last evaluated at.
    pub evaluated_revision: i64,
    /// When.
    pub evaluated_at: UnixMillis,
    /// A delivery gave up after its retry window and none succeeded since.
    pub failing: bool,
    /// Manifests stored.
    pub manifests: i64,
    /// Deliveries not yet delivered nor given up.
    pub pending_deliveries: i64,
    /// Deliveries given up.
    pub failed_deliveries: i64,
}

/// A stored manifest as the evaluator reads it.
#[derive(Debug, Clone)]
pub struct ManifestRow {
    /// Its row id.
    pub id: i64,
    /// Its watch.
    pub watch_id: i64,
    /// The order it was written in.
    pub seq: i64,
    /// Its label.
    pub label: String,
    /// The manifest's JSON text.
    pub manifest: String,
    /// The revision its watch's findings are current at.
    pub watch_revision: i64,
}

/// What a fact index reads to catch up ([`Store::watch_index_changes`]).
#[derive(Debug, Clone)]
pub struct IndexChanges {
    /// The `watch_state` seq these are current at.
    pub seq: i64,
    /// Manifest rows written since, in seq order.
    pub rows: Vec<ManifestRow>,
    /// Watches deleted since, in seq order.
    pub deleted_watches: Vec<i64>,
    /// The highest seq of a deletion no longer kept: an index that had
    /// read less than it may have missed one, and is built afresh.
    pub deletions_pruned_to: i64,
}

/// How long a watch's deletion is kept for replicas' indexes to read: a
/// replica catches up at every poll, so only one stopped this long misses
/// one, and that one builds its index afresh.
pub const DELETIONS_KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// The evaluator's cursor.
#[derive(Debug, Clone)]
pub struct WatchCursor {
    /// The revision every watch has been evaluated against.
    pub revision: i64,
    /// What it served (rule id -> sha256, JSON), `None` before the first pass.
    pub served: Option<String>,
    /// The highest manifest seq written.
    pub seq: i64,
}

/// An event to enqueue for a watch.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// The watch.
    pub watch_id: i64,
    /// The idempotency id (unique: an event decided twice is stored once).
    pub event_id: String,
    /// `findings` or `ping`.
    pub kind: &'static str,
    /// The JSON body delivered.
    pub body: String,
}

/// One manifest's findings after an evaluation: the rows of `rules` are
/// replaced by `findings` (`rules` empty: every row is).
#[derive(Debug, Clone)]
pub struct FindingsUpdate {
    /// The manifest.
    pub manifest_id: i64,
    /// The rules evaluated (their rows are replaced); empty for all.
    pub rules: Vec<String>,
    /// The findings now.
    pub findings: Vec<StoredFinding>,
}

/// The result of one evaluation pass, written in one transaction.
#[derive(Debug, Clone, Default)]
pub struct EvaluationResult {
    /// For a transition: the lease owner that claimed it, the revision and
    /// served set the cursor moves to, and the `watch_state` seq the
    /// pass's index had read up to (later rows evaluated against an older
    /// set are marked for a full evaluation).
    pub transition: Option<(String, i64, String, i64)>,
    /// For a full evaluation of one watch: its id (the pass is void if
    /// another replica did it first).
    pub full_watch: Option<i64>,
    /// Findings per manifest.
    pub updates: Vec<FindingsUpdate>,
    /// Events for the outbox.
    pub events: Vec<NewEvent>,
    /// Watches evaluated, with the revision (a transition moves every
    /// watch's revision itself).
    pub evaluated: Vec<(i64, i64)>,
}

/// A delivery claimed by a worker.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// Its row id.
    pub id: i64,
    /// Its watch.
    pub watch_id: i64,
    /// The idempotency id.
    pub event_id: String,
    /// `findings` or `ping`.
    pub kind: String,
    /// The JSON body.
    pub body: String,
    /// When it was enqueued.
    pub created_at: UnixMillis,
    /// Tries so far, this one included.
    pub attempts: i64,
    /// The lease this worker holds (its results are recorded only under it).
    pub lease_until: UnixMillis,
    /// Where to send it.
    pub webhook_url: String,
    /// The HMAC key as stored: sealed, or in the clear if it was stored
    /// before sealing existed; the deliverer opens it.
    pub secret: SealedSecret,
}

/// A delivery and its tries, for the delivery log.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeliveryRecord {
    /// Its row id.
    pub id: i64,
    /// The idempotency id.
    pub event_id: String,
    /// `findings` or `ping`.
    pub kind: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// Tries so far.
    pub attempts: i64,
    /// When it was enqueued.
    pub created_at: UnixMillis,
    /// When the next try is due (pending only).
    pub next_attempt_at: Option<UnixMillis>,
    /// The last answer's status.
    pub last_status: Option<i64>,
    /// The last failure.
    pub last_error: Option<String>,
    /// When it was delivered.
    pub delivered_at: Option<UnixMillis>,
    /// Every try, oldest first.
    pub tries: Vec<AttemptRecord>,
}

/// One try of a delivery.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AttemptRecord {
    /// When it was made.
    pub at: UnixMillis,
    /// The answer's status, if there was an answer.
    pub status: Option<i64>,
    /// What failed.
    pub error: Option<String>,
    /// How long it took.
    pub elapsed_ms: i64,
}

/// The outcome of one try.
#[derive(Debug, Clone)]
pub enum TryOutcome {
    /// A 2xx answer.
    Delivered { status: u16 },
    /// Another answer or none; retry at `retry_at`, or give up (`None`).
    Failed { status: Option<u16>, error: String, retry_at: Option<UnixMillis> },
}

const WATCH_SELECT: &str = "SELECT w.id, w.account_id, a.name AS account_name, w.name, w.webhook_url, w.min_severity, \
     w.created_at, w.updated_at, w.evaluated_revision, w.evaluated_at, w.failing, \
     (SELECT COUNT(*) FROM watch_manifests m WHERE m.watch_id = w.id) AS manifests, \
     (SELECT COUNT(*) FROM watch_deliveries d WHERE d.watch_id = w.id AND d.state = 'pending') AS pending, \
     (SELECT COUNT(*) FROM watch_deliveries d WHERE d.watch_id = w.id AND d.state = 'failed') AS failed \
     FROM watches w JOIN accounts a ON a.id = w.account_id";

const MANIFEST_SELECT: &str = "SELECT m.id, m.watch_id, m.seq, m.label, m.manifest, w.evaluated_revision \
     FROM watch_manifests m JOIN watches w ON w.id = m.watch_id";

/// What the start-up's sealing of watch secrets did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretSealing {
    /// A start with the same key recorded that every secret is sealed
    /// under it: the table was not read.
    Skipped,
    /// The table was read and `sealed` rows sealed under the current key;
    /// `recorded`: none is left to seal, and the record now says so.
    Scanned {
        /// Rows this call sealed (a row another replica sealed first is
        /// not counted).
        sealed: usize,
        /// Rows no key held opens, left as they are.
        unopenable: usize,
        /// Whether the record was written.
        recorded: bool,
    },
}

/// Most ids in one `IN (...)` list.
const IN_CHUNK: usize = 500;

impl Store {
    /// Takes the `watch_state` row (see the module docs) and moves its
    /// seq; returns the new seq and the cursor's revision.
    async fn lock_watch_state(conn: &mut AnyConnection) -> Result<(i64, i64)> {
        let row = sqlx::query(
            "UPDATE watch_state SET seq = seq + 1 WHERE id = 1 RETURNING seq, revision",
        )
        .fetch_one(conn)
        .await?;
        Ok((row.try_get("seq")?, row.try_get("revision")?))
    }

    /// Seals under the current key of `keys` every watch secret not yet
    /// sealed under it: those stored in the clear (before sealing
    /// existed), sealed without a key id (`sealed:v1`), or under the
    /// previous key (a rotation), so a database dump holds none in the
    /// clear and the previous key can go. Unless
    /// `watch_state.secrets_sealed_under` records that a start with this
    /// key left none: then the table is not read. Each row is replaced
    /// only if it still holds what was read, so replicas starting at once
    /// seal each row once; one that no key held opens is left as it is
    /// (its deliveries fail with the reason) and counted.
    ///
    /// The record is written only if no row is left to seal, checked after
    /// taking the `watch_state` row lock, which every watch write takes
    /// first; a write that stores a secret under another key (a process
    /// that has not read a rotation yet) clears it in its transaction
    /// (`create_watch`). So the record is true whenever it is read.
    pub async fn seal_watch_secrets(&self, keys: &SealingKeys) -> Result<SecretSealing> {
        let current = keys.current();
        let recorded: Option<String> =
            sqlx::query("SELECT secrets_sealed_under FROM watch_state WHERE id = 1")
                .fetch_one(&self.pool)
                .await?
                .try_get("secrets_sealed_under")?;
        if recorded.as_deref() == Some(current.id()) {
            return Ok(SecretSealing::Skipped);
        }
        // `substr`, not `NOT LIKE`: SQLite's LIKE ignores ASCII case.
        let prefix = current.stored_prefix();
        let not_current = format!("substr(secret, 1, {}) <> $1", prefix.len());
        let rows = sqlx::query(&format!("SELECT id, secret FROM watches WHERE {not_current}"))
            .bind(&prefix)
            .fetch_all(&self.pool)
            .await?;
        let (mut sealed, mut unopenable) = (0, 0);
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let stored: String = row.try_get("secret")?;
            let secret = match keys.open(&SealedSecret::from_stored(stored.clone())) {
                Ok(secret) => secret,
                Err(e) => {
                    tracing::warn!(watch = id, error = %e, "a watch secret opens with no key held; left as it is");
                    unopenable += 1;
                    continue;
                }
            };
            let resealed = keys.seal(&secret).map_err(|e| StoreError::Invalid(e.to_string()))?;
            let done = sqlx::query("UPDATE watches SET secret = $1 WHERE id = $2 AND secret = $3")
                .bind(resealed.as_stored())
                .bind(id)
                .bind(&stored)
                .execute(&self.pool)
                .await?;
            sealed += done.rows_affected() as usize;
        }
        let mut tx = self.pool.begin().await?;
        // The row lock first: the count below then sees every watch write
        // committed before it, and a later one clears the record.
        sqlx::query("UPDATE watch_state SET seq = seq WHERE id = 1").execute(&mut *tx).await?;
        let left: i64 =
            sqlx::query(&format!("SELECT COUNT(*) AS n FROM watches WHERE {not_current}"))
                .bind(&prefix)
                .fetch_one(&mut *tx)
                .await?
                .try_get("n")?;
        if left == 0 {
            sqlx::query("UPDATE watch_state SET secrets_sealed_under = $1 WHERE id = 1")
                .bind(current.id())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(SecretSealing::Scanned { sealed, unopenable, recorded: left == 0 })
    }

    /// Watch secrets not sealed under `key` (in the clear, `sealed:v1`, or
    /// under another key): what a start with `key` would re-seal.
    pub async fn watch_secrets_not_under(&self, key: &SealingKey) -> Result<i64> {
        let prefix = key.stored_prefix();
        let row = sqlx::query(&format!(
            "SELECT COUNT(*) AS n FROM watches WHERE substr(secret, 1, {}) <> $1",
            prefix.len()
        ))
        .bind(&prefix)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    /// Stores a watch of `account_id`; its id. A name the account uses
    /// already is [`StoreError::Conflict`].
    pub async fn create_watch(&self, account_id: i64, new: NewWatch) -> Result<i64> {
        let mut tx = self.pool.begin().await?;
        let (seq, cursor) = Store::lock_watch_state(&mut tx).await?;
        let at = now();
        let row = sqlx::query(
            "INSERT INTO watches (account_id, name, webhook_url, secret, min_severity, created_at, updated_at, \
             evaluated_revision, evaluated_at, needs_full) VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $6, $8) RETURNING id",
        )
        .bind(account_id)
        .bind(&new.name)
        .bind(&new.webhook_url)
        .bind(new.secret.as_stored())
        .bind(&new.min_severity)
        .bind(at)
        .bind(new.evaluated_revision)
        .bind(i64::from(cursor > new.evaluated_revision))
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::Conflict(format!("a watch named {:?} exists already", new.name))
            } else {
                e.into()
            }
        })?;
        let id: i64 = row.try_get("id")?;
        // A secret sealed under another key than the one the start-up
        // recorded (this process has not read a rotation yet): the record
        // no longer holds, and the next start reads the table again.
        sqlx::query(
            "UPDATE watch_state SET secrets_sealed_under = NULL WHERE id = 1 AND secrets_sealed_under <> $1",
        )
        .bind(new.secret.key_id().unwrap_or_default())
        .execute(&mut *tx)
        .await?;
        insert_manifests(&mut tx, id, seq, &new.manifests).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Changes a watch; false if there is none.
    pub async fn change_watch(&self, id: i64, change: WatchChange) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let (seq, cursor) = Store::lock_watch_state(&mut tx).await?;
        let at = now();
        let exists = sqlx::query("UPDATE watches SET updated_at = $1 WHERE id = $2")
            .bind(at)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !exists {
            return Ok(false);
        }
        if let Some(url) = &change.webhook_url {
            sqlx::query("UPDATE watches SET webhook_url = $1, failing = 0 WHERE id = $2")
                .bind(url)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(severity) = &change.min_severity {
            sqlx::query("UPDATE watches SET min_severity = $1 WHERE id = $2")
                .bind(severity)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(manifests) = &change.manifests {
            sqlx::query("DELETE FROM watch_manifests WHERE watch_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            insert_manifests(&mut tx, id, seq, manifests).await?;
            sqlx::query(
                "UPDATE watches SET evaluated_revision = $1, evaluated_at = $2, needs_full = $3 WHERE id = $4",
            )
            .bind(change.evaluated_revision)
            .bind(at)
            .bind(i64::from(cursor > change.evaluated_revision))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes a watch, its manifests, findings and deliveries; false if
    /// there was none. The deletion is recorded with the write's seq, so
    /// every replica's fact index forgets the manifests when it next
    /// catches up ([`Store::watch_index_changes`]); deletions older than
    /// [`DELETIONS_KEPT_MS`] are pruned here.
    pub async fn delete_watch(&self, id: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let (seq, _) = Store::lock_watch_state(&mut tx).await?;
        // Children first: SQLite enforces the cascades only with its
        // foreign-key pragma on, which every pooled connection sets, but
        // the order makes the intent plain on both.
        sqlx::query(
            "DELETE FROM watch_attempts WHERE delivery_id IN (SELECT id FROM watch_deliveries WHERE watch_id = $1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM watch_deliveries WHERE watch_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM watch_findings WHERE manifest_id IN (SELECT id FROM watch_manifests WHERE watch_id = $1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM watch_manifests WHERE watch_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query("DELETE FROM watches WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !deleted {
            return Ok(false);
        }
        let at = now();
        sqlx::query("INSERT INTO watch_deletions (seq, watch_id, deleted_at) VALUES ($1, $2, $3)")
            .bind(seq)
            .bind(id)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        let pruned: Option<i64> =
            sqlx::query("SELECT MAX(seq) AS seq FROM watch_deletions WHERE deleted_at < $1")
                .bind(at - DELETIONS_KEPT_MS)
                .fetch_one(&mut *tx)
                .await?
                .try_get("seq")?;
        if let Some(pruned) = pruned {
            // Recorded first: an index that had not read up to here
            // rebuilds rather than miss what goes.
            sqlx::query(
                "UPDATE watch_state SET deletions_pruned_to = $1 WHERE id = 1 AND deletions_pruned_to < $1",
            )
            .bind(pruned)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM watch_deletions WHERE seq <= $1")
                .bind(pruned)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// One watch.
    pub async fn watch(&self, id: i64) -> Result<Option<WatchRecord>> {
        let row = sqlx::query(&format!("{WATCH_SELECT} WHERE w.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(watch_from_row).transpose()
    }

    /// An account's watches (`None`: everyone's), by id.
    pub async fn watches(&self, account_id: Option<i64>) -> Result<Vec<WatchRecord>> {
        let rows = match account_id {
            Some(account) => {
                sqlx::query(&format!("{WATCH_SELECT} WHERE w.account_id = $1 ORDER BY w.id"))
                    .bind(account)
                    .fetch_all(&self.pool)
                    .await?
            }
            None => {
                sqlx::query(&format!("{WATCH_SELECT} ORDER BY w.id")).fetch_all(&self.pool).await?
            }
        };
        rows.iter().map(watch_from_row).collect()
    }

    /// A watch's labels with their findings at the last evaluation, by label.
    pub async fn watch_findings(&self, id: i64) -> Result<Vec<(String, Vec<StoredFinding>)>> {
        let rows = sqlx::query(
            "SELECT m.label, f.rule_id, f.rule_version, f.severity, f.title FROM watch_manifests m \
             LEFT JOIN watch_findings f ON f.manifest_id = m.id WHERE m.watch_id = $1 ORDER BY m.label, f.rule_id",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<(String, Vec<StoredFinding>)> = Vec::new();
        for row in &rows {
            let label: String = row.try_get("label")?;
            if out.last().is_none_or(|(l, _)| *l != label) {
                out.push((label, Vec::new()));
            }
            let rule_id: Option<String> = row.try_get("rule_id")?;
            if let (Some(rule_id), Some((_, findings))) = (rule_id, out.last_mut()) {
                findings.push(StoredFinding {
                    rule_id,
                    rule_version: row.try_get("rule_version")?,
                    severity: row.try_get("severity")?,
                    title: row.try_get("title")?,
                });
            }
        }
        Ok(out)
    }

    /// The evaluator's cursor.
    pub async fn watch_cursor(&self) -> Result<WatchCursor> {
        let row = sqlx::query("SELECT revision, served, seq FROM watch_state WHERE id = 1")
            .fetch_one(&self.pool)
            .await?;
        Ok(WatchCursor {
            revision: row.try_get("revision")?,
            served: row.try_get("served")?,
            seq: row.try_get("seq")?,
        })
    }

    /// Claims the transition of the cursor to `revision` for `owner` until
    /// `until`, unless the cursor is there already or another owner's
    /// lease runs. Whether it was claimed.
    pub async fn claim_watch_transition(
        &self,
        owner: &str,
        revision: i64,
        until: UnixMillis,
    ) -> Result<bool> {
        let claimed = sqlx::query(
            "UPDATE watch_state SET lease_owner = $1, lease_until = $2 WHERE id = 1 AND revision < $3 \
             AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $4)",
        )
        .bind(owner)
        .bind(until)
        .bind(revision)
        .bind(now())
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(claimed == 1)
    }

    /// Moves the cursor without evaluating (the first pass: there is no
    /// earlier set to compare with). Only if it is still at `from`.
    pub async fn init_watch_cursor(&self, from: i64, revision: i64, served: &str) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        Store::lock_watch_state(&mut tx).await?;
        sqlx::query(
            "UPDATE watch_state SET revision = $1, served = $2 WHERE id = 1 AND revision = $3 AND served IS NULL",
        )
        .bind(revision)
        .bind(served)
        .bind(from)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// What a fact index that has read up to `watch_state` seq `after`
    /// must read to be current (its catch-up): the manifest rows written
    /// and the watches deleted since, in seq order, as of one snapshot
    /// ([`Store::begin_read`]) whose `watch_state` seq it has then read up
    /// to. Rows and deletions commit in seq order (each write holds the
    /// row lock it took its seq under until it commits), so nothing below
    /// that seq can commit later.
    pub async fn watch_index_changes(&self, after: i64) -> Result<IndexChanges> {
        let mut tx = self.begin_read().await?;
        let state = sqlx::query("SELECT seq, deletions_pruned_to FROM watch_state WHERE id = 1")
            .fetch_one(&mut *tx)
            .await?;
        let mut changes = IndexChanges {
            seq: state.try_get("seq")?,
            rows: Vec::new(),
            deleted_watches: Vec::new(),
            deletions_pruned_to: state.try_get("deletions_pruned_to")?,
        };
        if changes.seq != after {
            changes.rows =
                sqlx::query(&format!("{MANIFEST_SELECT} WHERE m.seq > $1 ORDER BY m.seq, m.id"))
                    .bind(after)
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(manifest_from_row)
                    .collect::<Result<_>>()?;
            changes.deleted_watches =
                sqlx::query("SELECT watch_id FROM watch_deletions WHERE seq > $1 ORDER BY seq")
                    .bind(after)
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|r| Ok(r.try_get("watch_id")?))
                    .collect::<Result<_>>()?;
        }
        tx.commit().await?;
        Ok(changes)
    }

    /// The manifest rows among `ids` that still exist.
    pub async fn watch_manifest_rows(&self, ids: &[i64]) -> Result<Vec<ManifestRow>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let sql = format!("{MANIFEST_SELECT} WHERE m.id IN ({})", placeholders(1, chunk.len()));
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.push(manifest_from_row(&row)?);
            }
        }
        Ok(out)
    }

    /// Every manifest row of one watch.
    pub async fn watch_manifest_rows_of(&self, watch_id: i64) -> Result<Vec<ManifestRow>> {
        let rows = sqlx::query(&format!("{MANIFEST_SELECT} WHERE m.watch_id = $1 ORDER BY m.id"))
            .bind(watch_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(manifest_from_row).collect()
    }

    /// The manifests that have a stored finding of one of `rules`.
    pub async fn manifests_with_findings_of(&self, rules: &[String]) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        for chunk in rules.chunks(IN_CHUNK) {
            let sql = format!(
                "SELECT DISTINCT manifest_id FROM watch_findings WHERE rule_id IN ({})",
                placeholders(1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for rule in chunk {
                query = query.bind(rule);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.push(row.try_get("manifest_id")?);
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The stored findings of these manifests, by manifest.
    pub async fn findings_of_manifests(
        &self,
        ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, Vec<StoredFinding>>> {
        let mut out: std::collections::HashMap<i64, Vec<StoredFinding>> = Default::default();
        for chunk in ids.chunks(IN_CHUNK) {
            let sql = format!(
                "SELECT manifest_id, rule_id, rule_version, severity, title FROM watch_findings WHERE manifest_id IN ({})",
                placeholders(1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.entry(row.try_get("manifest_id")?).or_default().push(StoredFinding {
                    rule_id: row.try_get("rule_id")?,
                    rule_version: row.try_get("rule_version")?,
                    severity: row.try_get("severity")?,
                    title: row.try_get("title")?,
                });
            }
        }
        Ok(out)
    }

    /// Watches (id, name, least severity) by id, for the notifications.
    pub async fn watch_names(&self, ids: &[i64]) -> Result<Vec<(i64, String, String)>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(IN_CHUNK) {
            let sql = format!(
                "SELECT id, name, min_severity FROM watches WHERE id IN ({})",
                placeholders(1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.push((row.try_get("id")?, row.try_get("name")?, row.try_get("min_severity")?));
            }
        }
        Ok(out)
    }

    /// Watches waiting for a full evaluation.
    pub async fn watches_needing_full(&self) -> Result<Vec<i64>> {
        let rows = sqlx::query("SELECT id FROM watches WHERE needs_full = 1 ORDER BY id")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok(r.try_get("id")?)).collect()
    }

    /// Writes an evaluation's findings, its events (the outbox) and, for a
    /// transition, the cursor, in one transaction. False (nothing written)
    /// when the pass no longer holds its claim: its lease was taken over,
    /// or another replica did the full evaluation first.
    pub async fn write_evaluation(&self, result: &EvaluationResult) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        Store::lock_watch_state(&mut tx).await?;
        let at = now();
        if let Some((owner, revision, served, read_seq)) = &result.transition {
            let moved = sqlx::query(
                "UPDATE watch_state SET revision = $1, served = $2, lease_owner = NULL, lease_until = NULL \
                 WHERE id = 1 AND lease_owner = $3 AND revision < $1",
            )
            .bind(*revision)
            .bind(served)
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if moved != 1 {
                return Ok(false);
            }
            // Rows this pass's index had not read were evaluated against
            // whatever set their writer served: if older than this
            // revision, the next pass evaluates them whole.
            sqlx::query(
                "UPDATE watches SET needs_full = 1 WHERE evaluated_revision < $1 \
                 AND id IN (SELECT watch_id FROM watch_manifests WHERE seq > $2)",
            )
            .bind(*revision)
            .bind(*read_seq)
            .execute(&mut *tx)
            .await?;
            // Every other watch's findings are now current at this
            // revision: the change could not touch them.
            sqlx::query(
                "UPDATE watches SET evaluated_revision = $1, evaluated_at = $2 \
                 WHERE needs_full = 0 AND evaluated_revision < $1",
            )
            .bind(*revision)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(watch) = result.full_watch {
            let cleared =
                sqlx::query("UPDATE watches SET needs_full = 0 WHERE id = $1 AND needs_full = 1")
                    .bind(watch)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if cleared != 1 {
                return Ok(false);
            }
        }
        for update in &result.updates {
            if update.rules.is_empty() {
                sqlx::query("DELETE FROM watch_findings WHERE manifest_id = $1")
                    .bind(update.manifest_id)
                    .execute(&mut *tx)
                    .await?;
            } else {
                for chunk in update.rules.chunks(IN_CHUNK) {
                    let sql = format!(
                        "DELETE FROM watch_findings WHERE manifest_id = $1 AND rule_id IN ({})",
                        placeholders(2, chunk.len())
                    );
                    let mut query = sqlx::query(&sql).bind(update.manifest_id);
                    for rule in chunk {
                        query = query.bind(rule);
                    }
                    query.execute(&mut *tx).await?;
                }
            }
            insert_findings(&mut tx, update.manifest_id, &update.findings).await?;
        }
        for &(watch, revision) in &result.evaluated {
            sqlx::query(
                "UPDATE watches SET evaluated_revision = $1, evaluated_at = $2 WHERE id = $3 AND evaluated_revision < $1",
            )
            .bind(revision)
            .bind(at)
            .bind(watch)
            .execute(&mut *tx)
            .await?;
        }
        for event in &result.events {
            insert_event(&mut tx, event, at).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Enqueues an event alone (a ping).
    pub async fn enqueue_watch_event(&self, event: &NewEvent) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        insert_event(&mut conn, event, now()).await
    }

    /// Claims the oldest due delivery whose watch has no older one pending
    /// (so a watch's events arrive in order), leasing it until `until`;
    /// the try is counted now, so a worker that dies mid-send still
    /// counts it. On PostgreSQL `FOR UPDATE SKIP LOCKED` lets replicas
    /// claim side by side without waiting on each other's candidates; on
    /// SQLite the one writer decides.
    pub async fn claim_delivery(&self, until: UnixMillis) -> Result<Option<ClaimedDelivery>> {
        let at = now();
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE watch_deliveries SET lease_until = $1, attempts = attempts + 1 WHERE id = (\
               SELECT d.id FROM watch_deliveries d WHERE d.state = 'pending' AND d.next_attempt_at <= $2 \
               AND (d.lease_until IS NULL OR d.lease_until < $2) \
               AND NOT EXISTS (SELECT 1 FROM watch_deliveries e WHERE e.watch_id = d.watch_id \
                               AND e.state = 'pending' AND e.id < d.id) \
               ORDER BY d.id LIMIT 1{lock}) \
             AND state = 'pending' AND (lease_until IS NULL OR lease_until < $2) \
             RETURNING id, watch_id, event_id, kind, body, created_at, attempts"
        );
        let Some(row) = sqlx::query(&sql).bind(until).bind(at).fetch_optional(&self.pool).await?
        else {
            return Ok(None);
        };
        let watch_id: i64 = row.try_get("watch_id")?;
        let Some(target) = sqlx::query("SELECT webhook_url, secret FROM watches WHERE id = $1")
            .bind(watch_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(ClaimedDelivery {
            id: row.try_get("id")?,
            watch_id,
            event_id: row.try_get("event_id")?,
            kind: row.try_get("kind")?,
            body: row.try_get("body")?,
            created_at: row.try_get("created_at")?,
            attempts: row.try_get("attempts")?,
            lease_until: until,
            webhook_url: target.try_get("webhook_url")?,
            secret: SealedSecret::from_stored(target.try_get("secret")?),
        }))
    }

    /// Records a try of a claimed delivery, under its lease (a worker
    /// whose lease ran out records nothing: another has it now).
    pub async fn record_delivery_try(
        &self,
        claimed: &ClaimedDelivery,
        outcome: &TryOutcome,
        elapsed_ms: i64,
    ) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let at = now();
        let (status, error) = match outcome {
            TryOutcome::Delivered { status } => (Some(i64::from(*status)), None),
            TryOutcome::Failed { status, error, .. } => {
                (status.map(i64::from), Some(error.as_str()))
            }
        };
        let (state, next, delivered_at) = match outcome {
            TryOutcome::Delivered { .. } => ("delivered", at, Some(at)),
            TryOutcome::Failed { retry_at: Some(when), .. } => ("pending", *when, None),
            TryOutcome::Failed { retry_at: None, .. } => ("failed", at, None),
        };
        let updated = sqlx::query(
            "UPDATE watch_deliveries SET state = $1, next_attempt_at = $2, lease_until = NULL, last_status = $3, \
             last_error = $4, delivered_at = $5 WHERE id = $6 AND lease_until = $7 AND state = 'pending'",
        )
        .bind(state)
        .bind(next)
        .bind(status)
        .bind(error)
        .bind(delivered_at)
        .bind(claimed.id)
        .bind(claimed.lease_until)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated != 1 {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO watch_attempts (delivery_id, at, status, error, elapsed_ms) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(claimed.id)
        .bind(at)
        .bind(status)
        .bind(error)
        .bind(elapsed_ms)
        .execute(&mut *tx)
        .await?;
        let failing = match state {
            "delivered" => Some(0),
            "failed" => Some(1),
            _ => None,
        };
        if let Some(failing) = failing {
            sqlx::query("UPDATE watches SET failing = $1 WHERE id = $2")
                .bind(failing as i64)
                .bind(claimed.watch_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// A watch's deliveries, newest first, with their tries, as of one
    /// moment: both reads run in one read transaction ([`Store::begin_read`]),
    /// so a try recorded meanwhile shows with its delivery's new state or
    /// not at all (`record_delivery_try` writes the two together).
    pub async fn watch_deliveries(&self, watch_id: i64, limit: i64) -> Result<Vec<DeliveryRecord>> {
        let mut tx = self.begin_read().await?;
        let rows = sqlx::query(
            "SELECT id, event_id, kind, state, attempts, created_at, next_attempt_at, last_status, last_error, delivered_at \
             FROM watch_deliveries WHERE watch_id = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(watch_id)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get("id")?;
            let state: String = row.try_get("state")?;
            let tries = sqlx::query(
                "SELECT at, status, error, elapsed_ms FROM watch_attempts WHERE delivery_id = $1 ORDER BY id",
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| {
                Ok(AttemptRecord {
                    at: r.try_get("at")?,
                    status: r.try_get("status")?,
                    error: r.try_get("error")?,
                    elapsed_ms: r.try_get("elapsed_ms")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
            out.push(DeliveryRecord {
                id,
                event_id: row.try_get("event_id")?,
                kind: row.try_get("kind")?,
                next_attempt_at: if state == "pending" {
                    Some(row.try_get("next_attempt_at")?)
                } else {
                    None
                },
                state,
                attempts: row.try_get("attempts")?,
                created_at: row.try_get("created_at")?,
                last_status: row.try_get("last_status")?,
                last_error: row.try_get("last_error")?,
                delivered_at: row.try_get("delivered_at")?,
                tries,
            });
        }
        // Read only: ending it either way changes nothing.
        tx.commit().await?;
        Ok(out)
    }
}

/// `$from, $from+1, ...`: `count` placeholders.
fn placeholders(from: usize, count: usize) -> String {
    (from..from + count).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

async fn insert_manifests(
    conn: &mut AnyConnection,
    watch_id: i64,
    seq: i64,
    manifests: &[NewWatchManifest],
) -> Result<()> {
    for m in manifests {
        let row = sqlx::query(
            "INSERT INTO watch_manifests (watch_id, seq, label, manifest) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(watch_id)
        .bind(seq)
        .bind(&m.label)
        .bind(&m.manifest)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::Conflict(format!("the label {:?} is given twice", m.label))
            } else {
                e.into()
            }
        })?;
        insert_findings(conn, row.try_get("id")?, &m.findings).await?;
    }
    Ok(())
}

async fn insert_findings(
    conn: &mut AnyConnection,
    manifest_id: i64,
    findings: &[StoredFinding],
) -> Result<()> {
    for f in findings {
        sqlx::query(
            "INSERT INTO watch_findings (manifest_id, rule_id, rule_version, severity, title) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(manifest_id)
        .bind(&f.rule_id)
        .bind(&f.rule_version)
        .bind(&f.severity)
        .bind(&f.title)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Inserts an event into the outbox; an event id stored already is left
/// as it is (an event decided twice is delivered once).
async fn insert_event(conn: &mut AnyConnection, event: &NewEvent, at: UnixMillis) -> Result<()> {
    sqlx::query(
        "INSERT INTO watch_deliveries (watch_id, event_id, kind, body, created_at, state, next_attempt_at) \
         VALUES ($1, $2, $3, $4, $5, 'pending', $5) ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(event.watch_id)
    .bind(&event.event_id)
    .bind(event.kind)
    .bind(&event.body)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

fn watch_from_row(row: &AnyRow) -> Result<WatchRecord> {
    Ok(WatchRecord {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        account_name: row.try_get("account_name")?,
        name: row.try_get("name")?,
        webhook_url: row.try_get("webhook_url")?,
        min_severity: row.try_get("min_severity")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        evaluated_revision: row.try_get("evaluated_revision")?,
        evaluated_at: row.try_get("evaluated_at")?,
        failing: row.try_get::<i64, _>("failing")? != 0,
        manifests: row.try_get("manifests")?,
        pending_deliveries: row.try_get("pending")?,
        failed_deliveries: row.try_get("failed")?,
    })
}

fn manifest_from_row(row: &AnyRow) -> Result<ManifestRow> {
    Ok(ManifestRow {
        id: row.try_get("id")?,
        watch_id: row.try_get("watch_id")?,
        seq: row.try_get("seq")?,
        label: row.try_get("label")?,
        manifest: row.try_get("manifest")?,
        watch_revision: row.try_get("evaluated_revision")?,
    })
}
