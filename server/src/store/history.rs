//! The ruleset's history: every revision with the time it was committed,
//! and which version of each rule it served, so a check can be answered as
//! the registry answered it at any recorded revision.
//!
//! What a revision serves is kept as spans (`served_spans`): a version is
//! served from the revision that started serving it up to, not including,
//! the one that stopped. A write changes a few spans, not a copy of the
//! whole set, and the set at revision N is one indexed query.
//!
//! [`record`] runs inside the transaction that bumps the revision (see
//! `bump_revision`), after the write's own statements: it compares what
//! the versions table now serves with the open spans, in two set-based
//! statements, for the one rule a publish or a review touched (a few
//! milliseconds) or, after a seed, for all (a scan of the served set: 0.3
//! s for 10,000 rules). So the history can never disagree with what was
//! committed, on either backend, whichever replica wrote.

use std::collections::BTreeMap;

use sqlx::{AnyConnection, Row};

use super::rules::served_version;
use super::{
    ChangeKind, Result, RevisionChange, RevisionRecord, ServedEntry, ServedVersion, Store, now,
};

/// Which rules a write may have changed the served version of: what
/// [`record`] compares.
#[derive(Debug, Clone, Copy)]
pub(super) enum Touched<'a> {
    /// One rule: a publish or a review changes only its own rule.
    Rule(&'a str),
    /// Any: a seed of many rules.
    All,
}

/// Records `revision`, just bumped in this transaction, and what it
/// serves: the spans of `touched` rules closed or opened where the
/// versions table now serves otherwise.
pub(super) async fn record(
    conn: &mut AnyConnection,
    revision: i64,
    touched: Touched<'_>,
) -> Result<()> {
    sqlx::query("INSERT INTO ruleset_revisions (revision, recorded_at) VALUES ($1, $2)")
        .bind(revision)
        .bind(now())
        .execute(&mut *conn)
        .await?;
    let (span_rule, version_rule, rule_id) = match touched {
        Touched::Rule(id) => (" AND served_spans.rule_id = $2", " AND v.rule_id = $2", Some(id)),
        Touched::All => ("", "", None),
    };
    // Close the spans of versions no longer served (a yank, or a higher
    // version approved), keeping the state each left in. A scalar
    // subquery, not NOT EXISTS: it is always one primary-key probe per
    // open span, where PostgreSQL, without statistics on fresh tables
    // (right after a seed), planned NOT EXISTS as a nested loop over
    // every pair: 10 s instead of 45 ms with 10,000 served rules.
    let close = format!(
        "UPDATE served_spans SET to_revision = $1, \
         ended_state = (SELECT v.state FROM versions v \
                        WHERE v.rule_id = served_spans.rule_id AND v.version = served_spans.version) \
         WHERE to_revision IS NULL{span_rule} AND COALESCE((SELECT \
               CASE WHEN v.state = 'approved' AND v.is_latest_in_state = 1 THEN 1 ELSE 0 END \
               FROM versions v \
               WHERE v.rule_id = served_spans.rule_id AND v.version = served_spans.version), 0) = 0"
    );
    // Open a span for each served version that has none.
    let open = format!(
        "INSERT INTO served_spans (rule_id, version, sha256, from_revision) \
         SELECT v.rule_id, v.version, v.sha256, $1 FROM versions v \
         WHERE v.state = 'approved' AND v.is_latest_in_state = 1{version_rule} AND NOT EXISTS \
               (SELECT 1 FROM served_spans s WHERE s.rule_id = v.rule_id AND s.version = v.version \
                AND s.to_revision IS NULL)"
    );
    for statement in [close, open] {
        let mut query = sqlx::query(&statement).bind(revision);
        if let Some(id) = rule_id {
            query = query.bind(id);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The spans that served at revision `$1`.
const SERVED_AT: &str = "s.from_revision <= $1 AND (s.to_revision IS NULL OR s.to_revision > $1)";

impl Store {
    /// The first and last recorded revisions (history starts at the
    /// revision the database was at when it was first migrated to keep
    /// it).
    pub async fn recorded_revisions(&self) -> Result<(i64, i64)> {
        let row = sqlx::query(
            "SELECT MIN(revision) AS first, MAX(revision) AS last FROM ruleset_revisions",
        )
        .fetch_one(&self.pool)
        .await?;
        let first: Option<i64> = row.try_get("first")?;
        let last: Option<i64> = row.try_get("last")?;
        // The migration records the revision it found, so the table is
        // never empty; an empty one would mean nothing can be asked.
        Ok(first.zip(last).unwrap_or((0, -1)))
    }

    /// What revision `revision` served, with the module bytes, by rule id
    /// (the order of [`Store::served_versions`]). Empty for a revision that
    /// served nothing; the caller checks that it was recorded.
    pub async fn served_at(&self, revision: i64) -> Result<Vec<ServedVersion>> {
        let rows = sqlx::query(&format!(
            "SELECT s.rule_id, s.version, s.sha256, m.bytes FROM served_spans s \
             JOIN modules m ON m.sha256 = s.sha256 WHERE {SERVED_AT} ORDER BY s.rule_id"
        ))
        .bind(revision)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(served_version).collect()
    }

    /// What revision `revision` served, without the bytes, each version
    /// with its state now (a version served then may have been yanked
    /// since).
    pub async fn served_list_at(&self, revision: i64) -> Result<Vec<ServedEntry>> {
        let rows = sqlx::query(&format!(
            "SELECT s.rule_id, s.version, s.sha256, v.state FROM served_spans s \
             JOIN versions v ON v.rule_id = s.rule_id AND v.version = s.version \
             WHERE {SERVED_AT} ORDER BY s.rule_id"
        ))
        .bind(revision)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ServedEntry {
                    rule_id: row.try_get("rule_id")?,
                    version: row.try_get("version")?,
                    sha256: row.try_get("sha256")?,
                    state: row.try_get::<String, _>("state")?.parse()?,
                })
            })
            .collect()
    }

    /// Recorded revisions below `before` (all when `None`), newest first,
    /// at most `limit`, each with what it changed against the one before.
    pub async fn revisions(&self, before: Option<i64>, limit: i64) -> Result<Vec<RevisionRecord>> {
        let rows = sqlx::query(
            "SELECT revision, recorded_at FROM ruleset_revisions WHERE revision < $1 \
             ORDER BY revision DESC LIMIT $2",
        )
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let mut page = rows
            .iter()
            .map(|row| {
                Ok(RevisionRecord {
                    revision: row.try_get("revision")?,
                    recorded_at: row.try_get("recorded_at")?,
                    changes: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (Some(newest), Some(oldest)) = (page.first(), page.last()) else {
            return Ok(page);
        };
        let (lo, hi) = (oldest.revision, newest.revision);
        let first = self.recorded_revisions().await?.0;
        let spans = sqlx::query(
            "SELECT rule_id, version, from_revision, to_revision, ended_state FROM served_spans \
             WHERE (from_revision BETWEEN $1 AND $2) OR (to_revision BETWEEN $1 AND $2)",
        )
        .bind(lo)
        .bind(hi)
        .fetch_all(&self.pool)
        .await?;
        // Per revision and rule: the version that stopped, with its state,
        // and the one that started.
        type Edge = (Option<(String, String)>, Option<String>);
        let mut edges: BTreeMap<(i64, String), Edge> = BTreeMap::new();
        for row in &spans {
            let rule_id: String = row.try_get("rule_id")?;
            let version: String = row.try_get("version")?;
            let from: i64 = row.try_get("from_revision")?;
            let to: Option<i64> = row.try_get("to_revision")?;
            // The first recorded revision's spans are where history
            // starts, not changes it made.
            if (lo..=hi).contains(&from) && from != first {
                edges.entry((from, rule_id.clone())).or_default().1 = Some(version.clone());
            }
            if let Some(to) = to.filter(|to| (lo..=hi).contains(to)) {
                let state: Option<String> = row.try_get("ended_state")?;
                edges.entry((to, rule_id)).or_default().0 =
                    Some((version, state.unwrap_or_default()));
            }
        }
        for record in &mut page {
            let changes = edges
                .range((record.revision, String::new())..)
                .take_while(|((r, _), _)| *r == record.revision);
            record.changes = changes
                .map(|((_, rule_id), (ended, started))| {
                    let kind = match (ended, started) {
                        (Some((_, state)), _) if state == "yanked" => ChangeKind::Yanked,
                        (Some(_), Some(_)) => ChangeKind::VersionChanged,
                        (None, _) => ChangeKind::Added,
                        (Some(_), None) => ChangeKind::Removed,
                    };
                    RevisionChange {
                        rule_id: rule_id.clone(),
                        kind,
                        from: ended.as_ref().map(|(v, _)| v.clone()),
                        to: started.clone(),
                    }
                })
                .collect();
        }
        Ok(page)
    }
}
