//! Watches: stored manifests re-evaluated when the served ruleset moves,
//! and the webhook deliveries of what changed.
//!
//! - `index.rs`: stored manifests filed under the facts selectors read,
//!   so a changed rule is evaluated only on the manifests it admits.
//! - `evaluate.rs` (here): one pass per ruleset transition, claimed in the
//!   database so that one replica does it; its findings, its outbox rows
//!   and the cursor move in one transaction.
//! - `deliver.rs`: signing, a try, backoff; `target.rs`: which URLs and
//!   addresses a webhook may reach, and the HTTP exchange.
//!
//! Invariants: a transition is evaluated once, whatever the replicas; a
//! notification is decided in the transaction that stores the findings it
//! reports, so none is lost or decided twice; a watch's events are
//! delivered in order, each until a 2xx or its retry window ends.

pub mod deliver;
pub mod index;
pub mod target;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pitfall_contract::meta::Severity;
use pitfall_contract::report::Finding;
use pitfall_engine::{Rule, RuleSet};
use serde_json::json;

use crate::registry::Registry;
use crate::store::{
    EvaluationResult, FindingsUpdate, ManifestRow, NewEvent, StoredFinding, now_ms,
};
use deliver::Backoff;
use index::FactIndex;
use target::UrlPolicy;

/// The largest notification body: a fleet's changes past it are left out
/// and counted (`labels_left_out`), so a receiver's body bound is known.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// How the watcher runs: from the server's flags.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Which webhook URLs are allowed.
    pub policy: UrlPolicy,
    /// One try's bound: connect, send, answer.
    pub timeout: Duration,
    /// Retry timing.
    pub backoff: Backoff,
    /// Delivery workers in this process (0: it delivers nothing).
    pub workers: usize,
    /// How long a claimed transition is this replica's before another may
    /// take it over (a replica that died mid-pass).
    pub lease: Duration,
    /// How often to look for work without being woken.
    pub poll: Duration,
}

impl WatchOptions {
    /// The options the server's watch settings give, polling every `poll`.
    pub fn from_settings(settings: &crate::config::WatchSettings, poll: Duration) -> WatchOptions {
        WatchOptions {
            policy: target::UrlPolicy { allow_private: settings.watch_allow_private_urls },
            timeout: Duration::from_millis(settings.watch_timeout_ms.max(1)),
            backoff: deliver::Backoff {
                base: Duration::from_millis(settings.watch_backoff_base_ms.max(1)),
                max: Duration::from_millis(settings.watch_backoff_max_ms.max(1)),
                give_up_after: Duration::from_millis(settings.watch_retry_for_ms),
            },
            workers: settings.watch_workers,
            lease: Duration::from_millis(settings.watch_lease_ms.max(1)),
            poll,
        }
    }
}

/// What one evaluation pass did (for logs, metrics and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassStats {
    /// The transition, (before, after), if one was evaluated.
    pub transition: Option<(i64, i64)>,
    /// Rules added, changed or removed.
    pub changed_rules: usize,
    /// Manifests the changed rules' selectors admit, or that had a finding
    /// of a changed rule.
    pub evaluated: usize,
    /// Manifests stored in all (the index's size).
    pub indexed: usize,
    /// Events written to the outbox.
    pub events: usize,
    /// Watches evaluated whole (their writes raced a transition).
    pub full: usize,
}

/// Re-evaluates watches and delivers their notifications.
#[derive(Debug)]
pub struct Watcher {
    registry: Arc<Registry>,
    options: WatchOptions,
    /// This process's lease name.
    owner: String,
    index: tokio::sync::Mutex<FactIndex>,
    wake_delivery: tokio::sync::Notify,
    wake_evaluation: tokio::sync::Notify,
}

impl Watcher {
    /// A watcher over `registry`.
    pub fn new(registry: Arc<Registry>, options: WatchOptions) -> Arc<Watcher> {
        let mut id = [0u8; 8];
        let _ = getrandom::fill(&mut id);
        let owner = format!(
            "{}-{}",
            std::process::id(),
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        Arc::new(Watcher {
            registry,
            options,
            owner,
            index: tokio::sync::Mutex::new(FactIndex::default()),
            wake_delivery: tokio::sync::Notify::new(),
            wake_evaluation: tokio::sync::Notify::new(),
        })
    }

    /// The options.
    pub fn options(&self) -> &WatchOptions {
        &self.options
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Something was enqueued: delivery workers look now.
    pub fn wake_delivery(&self) {
        self.wake_delivery.notify_waiters();
    }

    /// The served set may have moved: evaluate now.
    pub fn wake_evaluation(&self) {
        self.wake_evaluation.notify_one();
    }

    /// Runs the evaluation loop and the delivery workers until the process ends.
    pub fn spawn(self: &Arc<Self>) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        let watcher = Arc::clone(self);
        tasks.push(tokio::spawn(async move {
            loop {
                match watcher.pass().await {
                    Ok(stats) if stats.events > 0 => watcher.wake_delivery(),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(
                        error = format!("{e:#}"),
                        "watch evaluation failed; retried at the next poll"
                    ),
                }
                tokio::select! {
                    () = watcher.wake_evaluation.notified() => {}
                    () = tokio::time::sleep(watcher.options.poll) => {}
                }
            }
        }));
        for worker in 0..self.options.workers {
            let watcher = Arc::clone(self);
            tasks.push(tokio::spawn(async move { watcher.deliver_loop(worker).await }));
        }
        tasks
    }

    /// One evaluation pass: the transition to the served revision if the
    /// cursor is behind it and this replica claims it, then the watches
    /// waiting for a full evaluation.
    pub async fn pass(&self) -> anyhow::Result<PassStats> {
        // The index follows the stored manifests at every pass (a query
        // that returns nothing when nothing was written), so a transition
        // finds it built: a fresh replica builds it at its first poll.
        {
            let mut index = self.index.lock().await;
            self.catch_up(&mut index).await?;
        }
        let mut stats = self.transition().await?.unwrap_or_default();
        for watch in self.registry.store().watches_needing_full().await? {
            if self.evaluate_whole(watch).await? {
                stats.full += 1;
            }
        }
        Ok(stats)
    }

    async fn transition(&self) -> anyhow::Result<Option<PassStats>> {
        let set = self.registry.rules();
        let Ok(target) = set.revision().parse::<i64>() else { return Ok(None) };
        let store = self.registry.store();
        let cursor = store.watch_cursor().await.context("reading the watch cursor")?;
        if cursor.revision >= target {
            return Ok(None);
        }
        let served = served_map(&set);
        let served_json = serde_json::to_string(&served)?;
        let Some(before_json) = cursor.served else {
            // The first pass on this database: no earlier set to compare
            // with, and every watch stored was evaluated when written.
            store.init_watch_cursor(cursor.revision, target, &served_json).await?;
            return Ok(None);
        };
        let until = now_ms() + i64::try_from(self.options.lease.as_millis()).unwrap_or(i64::MAX);
        if !store.claim_watch_transition(&self.owner, target, until).await? {
            return Ok(None);
        }
        let before: BTreeMap<String, String> =
            serde_json::from_str(&before_json).context("the cursor's served set")?;
        let changed: Vec<String> = before
            .keys()
            .chain(served.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|id| before.get(*id) != served.get(*id))
            .cloned()
            .collect();
        let rules: Vec<Arc<Rule>> = set
            .rules()
            .iter()
            .filter(|r| changed.binary_search(&r.id().to_owned()).is_ok())
            .cloned()
            .collect();

        let mut index = self.index.lock().await;
        self.catch_up(&mut index).await?;
        let read_seq = index.read_seq;
        let mut candidates: BTreeSet<i64> = BTreeSet::new();
        for rule in &rules {
            candidates.extend(index.admitted(&rule.selectors));
        }
        candidates.extend(store.manifests_with_findings_of(&changed).await?);
        let ids: Vec<i64> = candidates.into_iter().collect();
        let rows = store.watch_manifest_rows(&ids).await?;
        // A row deleted since the catch-up above is not evaluated; the
        // index forgets it now rather than at its next catch-up.
        let found: BTreeSet<i64> = rows.iter().map(|r| r.id).collect();
        for id in ids.iter().filter(|id| !found.contains(id)) {
            index.remove(*id);
        }
        let indexed = index.len();
        drop(index);
        // A watch written at this revision or later was evaluated
        // against this set or a newer one already.
        let rows: Vec<ManifestRow> =
            rows.into_iter().filter(|r| r.watch_revision < target).collect();
        let evaluated = rows.len();
        let subset = Arc::new(RuleSet::new(rules, target.to_string()));
        let outcome = self.evaluate(rows, subset, Some(changed.clone())).await?;
        let events = self
            .events(
                outcome,
                |watch| format!("w{watch}-r{}-r{target}", cursor.revision),
                cursor.revision,
                target,
            )
            .await?;
        let result = EvaluationResult {
            transition: Some((self.owner.clone(), target, served_json, read_seq)),
            full_watch: None,
            updates: events.updates,
            events: events.events,
            evaluated: Vec::new(),
        };
        let written = store.write_evaluation(&result).await?;
        if !written {
            tracing::warn!(
                revision = target,
                "the watch transition was taken over; its results are dropped"
            );
            return Ok(None);
        }
        let stats = PassStats {
            transition: Some((cursor.revision, target)),
            changed_rules: changed.len(),
            evaluated,
            indexed,
            events: result.events.len(),
            full: 0,
        };
        tracing::info!(
            before = cursor.revision,
            after = target,
            changed_rules = stats.changed_rules,
            evaluated = stats.evaluated,
            indexed = stats.indexed,
            events = stats.events,
            "watches evaluated"
        );
        Ok(Some(stats))
    }

    /// Evaluates one watch against the whole served set (its write raced a
    /// transition); whether this pass wrote it.
    async fn evaluate_whole(&self, watch: i64) -> anyhow::Result<bool> {
        let set = self.registry.rules();
        let Ok(revision) = set.revision().parse::<i64>() else { return Ok(false) };
        let store = self.registry.store();
        let Some(record) = store.watch(watch).await? else { return Ok(false) };
        let rows = store.watch_manifest_rows_of(watch).await?;
        let outcome = self.evaluate(rows, set, None).await?;
        let mut nonce = [0u8; 6];
        let _ = getrandom::fill(&mut nonce);
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let events = self
            .events(
                outcome,
                |w| format!("w{w}-full-r{revision}-{nonce}"),
                record.evaluated_revision,
                revision,
            )
            .await?;
        let result = EvaluationResult {
            transition: None,
            full_watch: Some(watch),
            updates: events.updates,
            events: events.events,
            evaluated: vec![(watch, revision)],
        };
        Ok(store.write_evaluation(&result).await?)
    }

    /// The fact index's heap bytes, by its own count (the bench's figure).
    pub async fn index_heap_bytes(&self) -> usize {
        self.index.lock().await.heap_bytes()
    }

    /// Manifests in the fact index, as of its last catch-up (each pass
    /// starts with one).
    pub async fn indexed_manifests(&self) -> usize {
        self.index.lock().await.len()
    }

    /// Reads what was written since the index last looked: new manifest
    /// rows are filed, and the rows they replace and those of deleted
    /// watches forgotten, so a deleted manifest leaves the index at the
    /// next pass of every replica.
    async fn catch_up(&self, index: &mut FactIndex) -> anyhow::Result<()> {
        if index.wants_rebuild() {
            *index = FactIndex::default();
        }
        let store = self.registry.store();
        let mut changes = store.watch_index_changes(index.read_seq).await?;
        if index.read_seq > 0 && changes.deletions_pruned_to > index.read_seq {
            // Deletions it had not read were pruned (this replica did not
            // catch up for a day): read everything afresh.
            tracing::info!("the watch index missed pruned deletions; building it afresh");
            *index = FactIndex::default();
            changes = store.watch_index_changes(0).await?;
        }
        if changes.seq == index.read_seq {
            return Ok(());
        }
        let taken = std::mem::take(index);
        let filled = tokio::task::spawn_blocking(move || {
            let mut index = taken;
            for watch in changes.deleted_watches {
                index.remove_watch(watch);
            }
            for row in changes.rows {
                match index::prepare(&row.manifest) {
                    Some(prepared) => {
                        index.insert(row.id, row.watch_id, row.seq, &prepared.manifest)
                    }
                    None => index.supersede(row.watch_id, row.seq),
                }
            }
            index.read_seq = changes.seq;
            index
        })
        .await
        .context("indexing stored manifests")?;
        *index = filled;
        Ok(())
    }

    /// Checks each manifest against `set`; each row with its findings
    /// (restricted to `rules` when given) and its stored ones.
    async fn evaluate(
        &self,
        rows: Vec<ManifestRow>,
        set: Arc<RuleSet>,
        rules: Option<Vec<String>>,
    ) -> anyhow::Result<Evaluated> {
        let store = self.registry.store();
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let stored = store.findings_of_manifests(&ids).await?;
        let engine = self.registry.engine().clone();
        let checked = tokio::task::spawn_blocking(move || {
            use rayon::prelude::*;
            rows.into_par_iter()
                .map(|row| {
                    let findings = match crate::manifest::read_manifest(row.manifest.as_bytes()) {
                        Ok(manifest) => set
                            .check(&engine, manifest)
                            .findings
                            .iter()
                            .map(|f| f.finding().clone())
                            .collect(),
                        Err(_) => Vec::new(),
                    };
                    (row, findings)
                })
                .collect::<Vec<_>>()
        })
        .await
        .context("evaluating watched manifests")?;
        Ok(Evaluated { checked, stored, rules })
    }

    /// The findings to store and the events to enqueue for an evaluation.
    async fn events(
        &self,
        evaluated: Evaluated,
        event_id: impl Fn(i64) -> String,
        before: i64,
        after: i64,
    ) -> anyhow::Result<Decided> {
        let Evaluated { checked, mut stored, rules } = evaluated;
        let in_scope =
            |rule: &str| rules.as_ref().is_none_or(|r| r.binary_search(&rule.to_owned()).is_ok());
        let mut updates = Vec::with_capacity(checked.len());
        let mut changes: BTreeMap<i64, BTreeMap<String, LabelChange>> = BTreeMap::new();
        for (row, findings) in checked {
            let old: Vec<StoredFinding> = stored
                .remove(&row.id)
                .unwrap_or_default()
                .into_iter()
                .filter(|f| in_scope(&f.rule_id))
                .collect();
            let new: Vec<&Finding> = findings.iter().filter(|f| in_scope(&f.rule_id)).collect();
            let appeared: Vec<Finding> = new
                .iter()
                .filter(|f| !old.iter().any(|o| o.rule_id == f.rule_id))
                .map(|f| (*f).clone())
                .collect();
            let gone: Vec<StoredFinding> = old
                .iter()
                .filter(|o| !new.iter().any(|f| f.rule_id == o.rule_id))
                .cloned()
                .collect();
            if !appeared.is_empty() || !gone.is_empty() {
                changes
                    .entry(row.watch_id)
                    .or_default()
                    .insert(row.label.clone(), (appeared, gone));
            }
            updates.push(FindingsUpdate {
                manifest_id: row.id,
                rules: rules.clone().unwrap_or_default(),
                findings: new.iter().map(|f| stored_finding(f)).collect(),
            });
        }
        let watch_ids: Vec<i64> = changes.keys().copied().collect();
        let names: HashMap<i64, (String, String)> = self
            .registry
            .store()
            .watch_names(&watch_ids)
            .await?
            .into_iter()
            .map(|(id, name, severity)| (id, (name, severity)))
            .collect();
        let mut events = Vec::new();
        for (watch, labels) in changes {
            let Some((name, min)) = names.get(&watch) else { continue };
            let min = parse_severity(min).unwrap_or(Severity::Info);
            let mut entries = Vec::new();
            for (label, (appeared, gone)) in labels {
                let appeared: Vec<&Finding> =
                    appeared.iter().filter(|f| f.severity >= min).collect();
                let gone: Vec<&StoredFinding> = gone
                    .iter()
                    .filter(|f| parse_severity(&f.severity).unwrap_or(Severity::Error) >= min)
                    .collect();
                if appeared.is_empty() && gone.is_empty() {
                    continue;
                }
                entries.push(json!({ "label": label, "new": appeared, "gone": gone }));
            }
            if entries.is_empty() {
                continue;
            }
            let id = event_id(watch);
            let body = event_body(&id, watch, name, before, after, entries);
            events.push(NewEvent { watch_id: watch, event_id: id, kind: "findings", body });
        }
        Ok(Decided { updates, events })
    }

    async fn deliver_loop(self: Arc<Self>, worker: usize) {
        let agent = target::agent(self.options.policy, self.options.timeout);
        let store = self.registry.store().clone();
        let keys = self.registry.secret_keys().clone();
        // The lease outlives the try's own bound, so only a dead worker's
        // delivery is taken over.
        let lease_ms = i64::try_from(self.options.timeout.as_millis()).unwrap_or(i64::MAX) + 30_000;
        loop {
            match store.claim_delivery(now_ms() + lease_ms).await {
                Ok(Some(claimed)) => {
                    let agent = agent.clone();
                    let backoff = self.options.backoff;
                    let keys = keys.clone();
                    let sent = tokio::task::spawn_blocking(move || {
                        let (outcome, elapsed) =
                            deliver::try_once(&agent, &claimed, &keys, &backoff);
                        (claimed, outcome, elapsed)
                    })
                    .await;
                    let Ok((claimed, outcome, elapsed)) = sent else { continue };
                    match &outcome {
                        crate::store::TryOutcome::Delivered { status } => {
                            tracing::info!(worker, event = %claimed.event_id, status, attempts = claimed.attempts, "webhook delivered")
                        }
                        crate::store::TryOutcome::Failed { status, error, retry_at } => {
                            tracing::warn!(worker, event = %claimed.event_id, ?status, error = %error, attempts = claimed.attempts, gives_up = retry_at.is_none(), "webhook delivery failed")
                        }
                    }
                    if let Err(e) = store.record_delivery_try(&claimed, &outcome, elapsed).await {
                        tracing::warn!(error = %e, "recording a delivery failed; it is tried again when its lease ends");
                    }
                }
                Ok(None) => {
                    tokio::select! {
                        () = self.wake_delivery.notified() => {}
                        () = tokio::time::sleep(self.options.poll) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming a delivery failed");
                    tokio::time::sleep(self.options.poll).await;
                }
            }
        }
    }
}

/// One label's findings that appeared and went away.
type LabelChange = (Vec<Finding>, Vec<StoredFinding>);

/// An evaluation's rows with their findings, and what was stored.
struct Evaluated {
    checked: Vec<(ManifestRow, Vec<Finding>)>,
    stored: HashMap<i64, Vec<StoredFinding>>,
    rules: Option<Vec<String>>,
}

struct Decided {
    updates: Vec<FindingsUpdate>,
    events: Vec<NewEvent>,
}

/// The served set as rule id -> module sha256.
fn served_map(set: &RuleSet) -> BTreeMap<String, String> {
    set.rules().iter().map(|r| (r.id().to_owned(), r.sha256.clone())).collect()
}

/// A finding as stored for comparison.
pub fn stored_finding(f: &Finding) -> StoredFinding {
    StoredFinding {
        rule_id: f.rule_id.clone(),
        rule_version: f.rule_version.clone(),
        severity: f.severity.as_str().to_owned(),
        title: f.title.clone(),
    }
}

/// `info`, `warning` or `error`.
pub fn parse_severity(text: &str) -> Option<Severity> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

/// A findings notification's body, bounded by [`MAX_EVENT_BYTES`].
fn event_body(
    event_id: &str,
    watch: i64,
    name: &str,
    before: i64,
    after: i64,
    mut entries: Vec<serde_json::Value>,
) -> String {
    let mut left_out = 0usize;
    loop {
        let body = json!({
            "event_id": event_id,
            "type": "findings",
            "watch": { "id": watch, "name": name },
            "revision_before": before,
            "revision_after": after,
            "created_at": now_ms(),
            "changes": entries,
            "labels_left_out": left_out,
        })
        .to_string();
        if body.len() <= MAX_EVENT_BYTES || entries.is_empty() {
            return body;
        }
        // Drop a share of the labels at once: a fleet of 10,000 fits in
        // a few rounds.
        let drop = (entries.len() / 8).max(1);
        entries.truncate(entries.len() - drop);
        left_out += drop;
    }
}

/// A ping's body.
pub fn ping_body(event_id: &str, watch: i64, name: &str) -> String {
    json!({
        "event_id": event_id,
        "type": "ping",
        "watch": { "id": watch, "name": name },
        "created_at": now_ms(),
    })
    .to_string()
}
