//! Rules, their versions and module bytes: publishing, review, seeding and
//! what the check path serves.
//!
//! A version's content (module, metadata, tests, report) never changes once
//! stored (the schema's triggers refuse it too); only its review columns
//! move. Each version carries `is_latest_in_state`, recomputed for its rule
//! on every write, so "the highest approved version of each rule" is a
//! plain indexed query on both backends, with semver order decided here in
//! Rust ("1.10.0" > "1.9.0") rather than by either database's collation.

use std::collections::HashMap;

use pitfall_contract::meta::Severity;
use pitfall_contract::selector::Selector;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::accounts::hex;
use super::history::Touched;
use super::{
    AccountRef, Actor, NewVersion, Result, RuleDetail, ServedVersion, Store, StoreError, Subject,
    VersionRecord, VersionState, account_ref, audit, bump_revision, json_column, now, record,
};

/// The columns [`version_from_row`] reads.
const VERSION_SELECT: &str = "SELECT v.rule_id, v.version, v.sha256, m.size, v.state, v.meta, v.tests, v.report, \
     v.published_by AS publisher_id, p.name AS publisher_name, v.created_at, \
     v.reviewed_by AS reviewer_id, r.name AS reviewer_name, v.review_reason, v.state_changed_at \
     FROM versions v JOIN modules m ON m.sha256 = v.sha256 \
     LEFT JOIN accounts p ON p.id = v.published_by LEFT JOIN accounts r ON r.id = v.reviewed_by";

impl Store {
    /// Stores a new version in `initial_state` (pending for contributions,
    /// approved for the seed). A new rule is created with the actor as its
    /// first owner; for an existing rule an account must be an owner
    /// ([`StoreError::NotOwner`]; the system bypasses this). A version that
    /// exists is [`StoreError::Conflict`], except the same bytes stored
    /// again by the system, which returns the stored version (so seeding is
    /// idempotent).
    pub async fn insert_version(
        &self,
        new: NewVersion,
        actor: &Actor,
        initial_state: VersionState,
    ) -> Result<VersionRecord> {
        let mut tx = self.begin_write().await?;
        let (key, inserted) = insert_in(&mut tx, &new, actor, initial_state).await?;
        if inserted {
            bump_revision(&mut tx, Touched::Rule(&key.0)).await?;
        }
        let stored = version_in(&mut tx, &key.0, &key.1).await?;
        tx.commit().await?;
        stored
            .ok_or_else(|| StoreError::NotFound(format!("no version {} of rule {}", key.1, key.0)))
    }

    /// Stores the bundled rules as approved, as the system, in one
    /// transaction. Versions already stored with the same bytes are left
    /// alone; returns how many were inserted. A second call inserts none and
    /// leaves the revision as it was.
    pub async fn seed(&self, versions: Vec<NewVersion>) -> Result<usize> {
        let mut tx = self.begin_write().await?;
        let mut inserted = 0;
        for new in &versions {
            if insert_in(&mut tx, new, &Actor::System, VersionState::Approved).await?.1 {
                inserted += 1;
            }
        }
        if inserted > 0 {
            bump_revision(&mut tx, Touched::All).await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    /// Moves a version through review (see [`VersionState`] for the
    /// allowed transitions), recording who and why. Whether the actor may
    /// do so is the server's decision, made before this call.
    pub async fn set_state(
        &self,
        rule_id: &str,
        version: &str,
        to: VersionState,
        actor: &Actor,
        reason: Option<&str>,
    ) -> Result<VersionRecord> {
        let mut tx = self.begin_write().await?;
        let from: VersionState =
            sqlx::query("SELECT state FROM versions WHERE rule_id = $1 AND version = $2")
                .bind(rule_id)
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| {
                    StoreError::NotFound(format!("no version {version} of rule {rule_id}"))
                })?
                .try_get::<String, _>("state")?
                .parse()?;
        if !from.can_become(to) {
            return Err(StoreError::InvalidTransition { from, to });
        }
        sqlx::query(
            "UPDATE versions SET state = $1, reviewed_by = $2, review_reason = $3, state_changed_at = $4 \
             WHERE rule_id = $5 AND version = $6",
        )
        .bind(to.as_str())
        .bind(actor.account_id())
        .bind(reason)
        .bind(now())
        .bind(rule_id)
        .bind(version)
        .execute(&mut *tx)
        .await?;
        refresh_latest(&mut tx, rule_id).await?;
        let subject =
            Subject { rule_id: Some(rule_id), version: Some(version), ..Subject::default() };
        record(
            &mut tx,
            actor,
            audit::VERSION_STATE,
            subject,
            json!({ "from": from, "to": to, "reason": reason }),
        )
        .await?;
        bump_revision(&mut tx, Touched::Rule(rule_id)).await?;
        let stored = version_in(&mut tx, rule_id, version).await?;
        tx.commit().await?;
        stored
            .ok_or_else(|| StoreError::NotFound(format!("no version {version} of rule {rule_id}")))
    }

    /// For each rule, its highest approved version with the module bytes,
    /// by rule id. Pending, rejected and yanked versions are never served.
    pub async fn served_versions(&self) -> Result<Vec<ServedVersion>> {
        let rows = sqlx::query(
            "SELECT v.rule_id, v.version, v.sha256, m.bytes FROM versions v JOIN modules m ON m.sha256 = v.sha256 \
             WHERE v.state = 'approved' AND v.is_latest_in_state = 1 ORDER BY v.rule_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(served_version).collect()
    }

    /// Every stored version's sha256 by (rule id, version), in any state:
    /// what the seed need not assess again.
    pub async fn version_digests(
        &self,
    ) -> Result<std::collections::HashMap<(String, String), String>> {
        let rows = sqlx::query("SELECT rule_id, version, sha256 FROM versions")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(((row.try_get("rule_id")?, row.try_get("version")?), row.try_get("sha256")?))
            })
            .collect()
    }

    /// A rule with its owners and all its versions (any state), highest first.
    pub async fn rule(&self, rule_id: &str) -> Result<Option<RuleDetail>> {
        let Some(row) = sqlx::query("SELECT id, created_at FROM rules WHERE id = $1")
            .bind(rule_id)
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let rows = sqlx::query(&format!("{VERSION_SELECT} WHERE v.rule_id = $1"))
            .bind(rule_id)
            .fetch_all(&self.pool)
            .await?;
        let mut versions = rows.iter().map(version_from_row).collect::<Result<Vec<_>>>()?;
        versions.sort_by(|a, b| version_order(&b.version, &a.version));
        Ok(Some(RuleDetail {
            id: row.try_get("id")?,
            owners: self.owners(rule_id).await?,
            created_at: row.try_get("created_at")?,
            versions,
        }))
    }

    /// One version of a rule, in any state.
    pub async fn version(&self, rule_id: &str, version: &str) -> Result<Option<VersionRecord>> {
        let mut conn = self.pool.acquire().await?;
        version_in(&mut conn, rule_id, version).await
    }

    /// A version's module bytes, in any state: yanking hides a version from
    /// serving and listing, but whoever names it exactly may still audit it.
    pub async fn module(&self, rule_id: &str, version: &str) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query(
            "SELECT m.bytes FROM versions v JOIN modules m ON m.sha256 = v.sha256 WHERE v.rule_id = $1 AND v.version = $2",
        )
        .bind(rule_id)
        .bind(version)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.try_get("bytes")).transpose()?)
    }

    /// The review queue: every pending version, oldest first.
    pub async fn pending_versions(&self) -> Result<Vec<VersionRecord>> {
        let rows = sqlx::query(&format!(
            "{VERSION_SELECT} WHERE v.state = 'pending' ORDER BY v.created_at, v.rule_id, v.version"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(version_from_row).collect()
    }

    /// A rule's owners, the first publisher first.
    pub async fn owners(&self, rule_id: &str) -> Result<Vec<AccountRef>> {
        let rows = sqlx::query(
            "SELECT a.id, a.name FROM rule_owners o JOIN accounts a ON a.id = o.account_id \
             WHERE o.rule_id = $1 ORDER BY o.added_at, a.id",
        )
        .bind(rule_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok(AccountRef { id: r.try_get("id")?, name: r.try_get("name")? }))
            .collect()
    }

    /// Whether an account owns a rule.
    pub async fn is_owner(&self, rule_id: &str, account_id: i64) -> Result<bool> {
        let row =
            sqlx::query("SELECT 1 AS one FROM rule_owners WHERE rule_id = $1 AND account_id = $2")
                .bind(rule_id)
                .bind(account_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.is_some())
    }
}

/// Inserts a version inside a write transaction; returns its key and
/// whether anything was inserted (false: the system re-stored the same
/// bytes).
async fn insert_in(
    conn: &mut AnyConnection,
    new: &NewVersion,
    actor: &Actor,
    state: VersionState,
) -> Result<((String, String), bool)> {
    let meta = &new.meta;
    let (rule_id, version) = (meta.id.as_str(), meta.version.as_str());
    if !matches!(state, VersionState::Pending | VersionState::Approved) {
        return Err(StoreError::Invalid(format!(
            "a new version starts pending or approved, not {state}"
        )));
    }
    if semver::Version::parse(version).is_err() {
        return Err(StoreError::Invalid(format!(
            "version {version:?} of rule {rule_id} is not semver"
        )));
    }
    let sha256 = hex(&Sha256::digest(&new.module));
    if sha256 != new.sha256.to_ascii_lowercase() {
        return Err(StoreError::Invalid(format!(
            "the module's sha256 is {sha256}, not {}",
            new.sha256
        )));
    }
    let key = (rule_id.to_owned(), version.to_owned());
    let at = now();

    let rule_exists = sqlx::query("SELECT 1 AS one FROM rules WHERE id = $1")
        .bind(rule_id)
        .fetch_optional(&mut *conn)
        .await?
        .is_some();
    if rule_exists {
        if let Actor::Account(p) = actor {
            let owner = sqlx::query(
                "SELECT 1 AS one FROM rule_owners WHERE rule_id = $1 AND account_id = $2",
            )
            .bind(rule_id)
            .bind(p.account_id)
            .fetch_optional(&mut *conn)
            .await?
            .is_some();
            if !owner {
                return Err(StoreError::NotOwner {
                    rule_id: rule_id.to_owned(),
                    account: p.name.clone(),
                });
            }
        }
        let existing =
            sqlx::query("SELECT sha256 FROM versions WHERE rule_id = $1 AND version = $2")
                .bind(rule_id)
                .bind(version)
                .fetch_optional(&mut *conn)
                .await?;
        if let Some(row) = existing {
            let stored: String = row.try_get("sha256")?;
            return match (actor, stored == sha256) {
                (Actor::System, true) => Ok((key, false)),
                _ => Err(StoreError::Conflict(format!(
                    "version {version} of rule {rule_id} exists and is immutable; publish a higher version"
                ))),
            };
        }
    } else {
        sqlx::query("INSERT INTO rules (id, created_at) VALUES ($1, $2)")
            .bind(rule_id)
            .bind(at)
            .execute(&mut *conn)
            .await?;
        if let Some(account_id) = actor.account_id() {
            sqlx::query(
                "INSERT INTO rule_owners (rule_id, account_id, added_at) VALUES ($1, $2, $3)",
            )
            .bind(rule_id)
            .bind(account_id)
            .bind(at)
            .execute(&mut *conn)
            .await?;
        }
    }

    sqlx::query("INSERT INTO modules (sha256, bytes, size, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (sha256) DO NOTHING")
        .bind(&sha256)
        .bind(new.module.as_slice())
        .bind(i64::try_from(new.module.len()).unwrap_or(i64::MAX))
        .bind(at)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO versions (rule_id, version, sha256, state, meta, tests, report, title, summary, severity, \
         severity_rank, search_text, published_by, created_at, state_changed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)",
    )
    .bind(rule_id)
    .bind(version)
    .bind(&sha256)
    .bind(state.as_str())
    .bind(to_json(meta, "metadata")?)
    .bind(to_json(&new.tests, "tests")?)
    .bind(new.report.to_string())
    .bind(&meta.title)
    .bind(&meta.summary)
    .bind(meta.severity.as_str())
    .bind(severity_rank(meta.severity))
    .bind(search_text(meta))
    .bind(actor.account_id())
    .bind(at)
    .execute(&mut *conn)
    .await?;
    for (kind, value) in selector_values(&meta.applies_to) {
        sqlx::query("INSERT INTO version_selectors (rule_id, version, kind, value) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
            .bind(rule_id)
            .bind(version)
            .bind(kind)
            .bind(value)
            .execute(&mut *conn)
            .await?;
    }
    refresh_latest(conn, rule_id).await?;
    let subject = Subject { rule_id: Some(rule_id), version: Some(version), ..Subject::default() };
    let detail = json!({ "sha256": sha256, "size": new.module.len(), "state": state });
    record(conn, actor, audit::VERSION_PUBLISH, subject, detail).await?;
    Ok((key, true))
}

/// JSON text for a TEXT column.
fn to_json<T: serde::Serialize>(value: &T, what: &str) -> Result<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("{what}: {e}")))
}

/// Recomputes `is_latest_in_state` for one rule: per state, its highest
/// version in semver order.
async fn refresh_latest(conn: &mut AnyConnection, rule_id: &str) -> Result<()> {
    let rows =
        sqlx::query("SELECT version, state, is_latest_in_state FROM versions WHERE rule_id = $1")
            .bind(rule_id)
            .fetch_all(&mut *conn)
            .await?;
    let mut latest: HashMap<String, String> = HashMap::new();
    let mut current = Vec::with_capacity(rows.len());
    for row in &rows {
        let version: String = row.try_get("version")?;
        let state: String = row.try_get("state")?;
        let flag: i64 = row.try_get("is_latest_in_state")?;
        match latest.get(&state) {
            Some(best) if version_order(best, &version).is_ge() => {}
            _ => {
                latest.insert(state, version.clone());
            }
        }
        current.push((version, flag));
    }
    for (version, flag) in current {
        let want = i64::from(latest.values().any(|v| *v == version));
        if want != flag {
            sqlx::query(
                "UPDATE versions SET is_latest_in_state = $1 WHERE rule_id = $2 AND version = $3",
            )
            .bind(want)
            .bind(rule_id)
            .bind(&version)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}

/// Semver order; text order only for (never stored) unparseable versions.
fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// The listing order: errors first.
fn severity_rank(s: Severity) -> i64 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    }
}

/// What free-text search matches against, lowercased.
fn search_text(meta: &pitfall_contract::meta::RuleMeta) -> String {
    let mut parts =
        vec![meta.id.as_str(), meta.title.as_str(), meta.summary.as_str(), meta.message.as_str()];
    for sig in &meta.error_signatures {
        parts.push(sig.template.as_str());
        parts.extend(sig.example.as_deref());
    }
    parts.join("\n").to_lowercase()
}

/// The (kind, value) pairs of the selectors, normalised as the engine
/// normalises them, so filters compare like with like.
fn selector_values(applies_to: &[String]) -> Vec<(&'static str, String)> {
    applies_to
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .map(|s| match s {
            // A version range narrows the rule, not what it is about: it
            // is found under its package.
            Selector::Package { name, .. } => ("package", name),
            // Stored for completeness (migration 0002); no search filter
            // uses it (the rules that have one also name their vendor).
            Selector::Capability(spec) => ("capability", spec.as_str().to_owned()),
            Selector::Accelerator(v) => ("accelerator", v),
            Selector::Arch(v) => ("arch", v),
            Selector::Engine(v) => ("engine", v),
            Selector::Container => ("container", String::new()),
        })
        .collect()
}

async fn version_in(
    conn: &mut AnyConnection,
    rule_id: &str,
    version: &str,
) -> Result<Option<VersionRecord>> {
    let row = sqlx::query(&format!("{VERSION_SELECT} WHERE v.rule_id = $1 AND v.version = $2"))
        .bind(rule_id)
        .bind(version)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(version_from_row).transpose()
}

fn version_from_row(row: &AnyRow) -> Result<VersionRecord> {
    Ok(VersionRecord {
        rule_id: row.try_get("rule_id")?,
        version: row.try_get("version")?,
        sha256: row.try_get("sha256")?,
        size: row.try_get("size")?,
        state: row.try_get::<String, _>("state")?.parse()?,
        meta: json_column(&row.try_get::<String, _>("meta")?, "metadata")?,
        tests: json_column(&row.try_get::<String, _>("tests")?, "tests")?,
        report: json_column(&row.try_get::<String, _>("report")?, "report")?,
        published_by: account_ref(row, "publisher")?,
        created_at: row.try_get("created_at")?,
        reviewed_by: account_ref(row, "reviewer")?,
        review_reason: row.try_get("review_reason")?,
        state_changed_at: row.try_get("state_changed_at")?,
    })
}

/// A served version from a row of `rule_id`, `version`, `sha256` and the
/// module's `bytes` (the live set's query and a past revision's).
pub(super) fn served_version(row: &AnyRow) -> Result<ServedVersion> {
    Ok(ServedVersion {
        rule_id: row.try_get("rule_id")?,
        version: row.try_get("version")?,
        sha256: row.try_get("sha256")?,
        module: row.try_get("bytes")?,
    })
}
