//! The rules this process serves: the approved versions in the store,
//! loaded into the engine and swapped in whole when the store's ruleset
//! revision moves. Several processes on one database converge by polling
//! that revision; compiled modules are kept per process by sha256, so a
//! swap recompiles only what is new.
//!
//! New modules are loaded deferred (checked and their metadata read; the
//! code compiled, or taken from the compiled-code cache, on first
//! candidacy) and then warmed by one background thread, so a registry of
//! 10,000 rules serves within a second or two of starting and leaves the
//! other cores to checks while it compiles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context;
use pitfall_bundled_rules::BundledModule;
use pitfall_engine::{Engine, Rule, RuleSet};

use crate::as_of::{PastError, PastSet, PastSets};
use crate::publish;
use crate::secret_key::SecretKeys;
use crate::store::{NewVersion, Store};

/// The served rule set and where it comes from.
#[derive(Debug)]
pub struct Registry {
    store: Store,
    engine: Engine,
    /// Seal watch secrets as they are stored and open them to sign
    /// deliveries (`secret_box.rs`, `secret_key.rs`); every replica holds
    /// the same keys.
    secret_keys: SecretKeys,
    current: RwLock<Arc<RuleSet>>,
    /// Loaded modules by sha256, so unchanged rules survive a swap.
    loaded: Mutex<HashMap<String, Arc<Rule>>>,
    /// One refresh at a time (the poller and writes both trigger them).
    refreshing: tokio::sync::Mutex<()>,
    /// Whether the last contact with the store succeeded.
    store_ok: AtomicBool,
    /// Warm-up threads running.
    warming: Arc<AtomicUsize>,
    /// The error-signature matcher of the served set, built on first use
    /// for each revision.
    explainer: Mutex<Option<(String, Arc<pitfall_explain::Explainer>)>>,
    /// Rule sets of past revisions, for checks asked as of one.
    past: PastSets,
}

impl Registry {
    /// Loads what the store serves now; watch secrets are sealed and
    /// opened with `secret_keys` (a [`crate::secret_box::SealingKey`] for
    /// one key never read again).
    pub async fn open(
        store: Store,
        engine: Engine,
        secret_keys: impl Into<SecretKeys>,
    ) -> anyhow::Result<Registry> {
        let registry = Registry {
            store,
            engine,
            secret_keys: secret_keys.into(),
            current: RwLock::new(Arc::new(RuleSet::new(Vec::new(), "0"))),
            loaded: Mutex::new(HashMap::new()),
            refreshing: tokio::sync::Mutex::new(()),
            store_ok: AtomicBool::new(false),
            warming: Arc::new(AtomicUsize::new(0)),
            explainer: Mutex::new(None),
            past: PastSets::default(),
        };
        registry.refresh().await.context("loading the approved rules")?;
        Ok(registry)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The keys watch secrets are sealed and opened with.
    pub fn secret_keys(&self) -> &SecretKeys {
        &self.secret_keys
    }

    /// The rule set checks run against now.
    pub fn rules(&self) -> Arc<RuleSet> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The rules revision `revision` served (yanked ones included if they
    /// were served then), from the store's history; the few asked last are
    /// kept (`as_of.rs`).
    pub async fn rules_at(&self, revision: i64) -> Result<Arc<PastSet>, PastError> {
        let live = || self.loaded.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.past.get(revision, &self.store, &self.engine, live).await
    }

    /// The past revisions whose rules are kept, most recently asked first.
    pub fn kept_past_revisions(&self) -> Vec<String> {
        self.past.kept_revisions()
    }

    /// The served rules and their signatures compiled for explaining logs
    /// (compiled once per ruleset revision, by the first request that
    /// needs them).
    pub fn explainer(&self) -> (Arc<RuleSet>, Arc<pitfall_explain::Explainer>) {
        let rules = self.rules();
        let mut cached = self.explainer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((revision, explainer)) = cached.as_ref()
            && revision == rules.revision()
        {
            return (rules, explainer.clone());
        }
        let explainer =
            Arc::new(pitfall_explain::Explainer::new(rules.rules().iter().map(|r| r.meta())));
        for skipped in &explainer.skipped {
            tracing::warn!(error = %skipped, "signature left out of explain");
        }
        *cached = Some((rules.revision().to_owned(), explainer.clone()));
        (rules, explainer)
    }

    /// Whether the store answered the last time it was asked.
    pub fn store_ok(&self) -> bool {
        self.store_ok.load(Ordering::Relaxed)
    }

    /// Swaps in the store's approved rules if its revision moved. Returns
    /// whether the served set changed. On a store error the current set
    /// stays (checks go on being answered from memory).
    pub async fn refresh(&self) -> anyhow::Result<bool> {
        let _one_at_a_time = self.refreshing.lock().await;
        let result = self.refresh_locked().await;
        self.store_ok.store(result.is_ok(), Ordering::Relaxed);
        result
    }

    async fn refresh_locked(&self) -> anyhow::Result<bool> {
        // Read the revision first: if a write lands between the two reads,
        // the set is labelled older than its contents, and the next poll
        // sees the newer revision and reloads. The label never runs ahead.
        let revision =
            self.store.revision().await.context("reading the ruleset revision")?.to_string();
        if self.rules().revision() == revision {
            return Ok(false);
        }
        let served = self.store.served_versions().await.context("reading the approved versions")?;
        let known = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let rules = crate::modules::load_rules(&self.engine, known, served).await?;
        {
            let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
            loaded.clear();
            loaded.extend(rules.iter().map(|r| (r.sha256.clone(), r.clone())));
        }
        tracing::info!(revision = %revision, rules = rules.len(), "serving a new ruleset");
        let set = Arc::new(RuleSet::new(rules, revision));
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = set.clone();
        self.warm_in_background(set);
        Ok(true)
    }

    /// Compiles (or deserialises) every rule of `set` not yet linked, on
    /// one background thread, so first candidacies rarely pay for it.
    /// Rules a check links first are skipped (linking is once per rule).
    fn warm_in_background(&self, set: Arc<RuleSet>) {
        let engine = self.engine.clone();
        let warming = self.warming.clone();
        warming.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("pitfall-warm".into()).spawn(move || {
            let start = std::time::Instant::now();
            let mut failed = 0usize;
            for rule in set.rules() {
                if let Err(e) = engine.link(rule) {
                    failed += 1;
                    tracing::error!(rule = %rule.id(), error = %e, "approved module does not compile; its checks report it");
                }
            }
            tracing::info!(rules = set.rules().len(), failed, elapsed_ms = start.elapsed().as_millis() as u64, "ruleset warm");
            warming.fetch_sub(1, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            // Not fatal: each rule then compiles on its first candidacy.
            self.warming.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(error = %e, "could not start the warm-up thread");
        }
    }

    /// Whether every served rule is compiled and linked (no warm-up running).
    pub fn is_warm(&self) -> bool {
        self.warming.load(Ordering::SeqCst) == 0
            && self.rules().rules().iter().all(|r| r.is_linked())
    }

    /// Polls the store every `interval` until the process ends.
    pub fn spawn_poller(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let registry = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(e) = registry.refresh().await {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        "ruleset refresh failed; serving the last good set"
                    );
                }
            }
        })
    }
}

/// Stores these modules (the bundled rules, or a subset in tests) as
/// approved versions, idempotently: a version already stored is left
/// alone, whatever its bytes. Each new one goes through the publish
/// pipeline first, so a bundled rule meets the bar a contributed one does.
/// Only the modules whose (id, version) the store lacks are assessed: id
/// and version are read with `inspect` (no compile), so a restart with
/// everything stored compiles and tests nothing.
pub async fn seed_modules(
    store: &Store,
    engine: &Engine,
    modules: Vec<BundledModule>,
) -> anyhow::Result<usize> {
    let plan = plan_seed(store, engine, modules).await?;
    seed_unstored(store, engine, plan.unstored).await
}

/// What seeding a store would do, decided from one read of its versions.
#[derive(Debug)]
pub struct SeedPlan {
    /// The modules whose exact (id, version, sha256) the store lacks (read
    /// with `inspect`, no compile): what [`seed_unstored`] would assess.
    pub unstored: Vec<BundledModule>,
    /// Whether the store held no version at all, in any state (a registry
    /// that never had a rule).
    pub store_was_empty: bool,
    /// Bundled versions the store holds with other bytes (`id@version`):
    /// the same rule built again (an SDK change or another toolchain
    /// changes every module's bytes). A version is immutable, so the
    /// stored one is kept; seeding it would be refused, and its refusal
    /// used to fail the whole seed, new bundled versions included.
    pub rebuilt: Vec<String>,
}

/// Reads the stored versions' digests once and tells which of `modules`
/// the store lacks, and whether it held any version.
pub async fn plan_seed(
    store: &Store,
    engine: &Engine,
    modules: Vec<BundledModule>,
) -> anyhow::Result<SeedPlan> {
    let stored = store.version_digests().await.context("reading the stored versions")?;
    let store_was_empty = stored.is_empty();
    let limits = engine.limits().clone();
    let (unstored, rebuilt) = tokio::task::spawn_blocking(move || {
        let (mut unstored, mut rebuilt) = (Vec::new(), Vec::new());
        for m in modules {
            let info = pitfall_engine::inspect::inspect(m.wasm, &limits).with_context(|| {
                format!("bundled rule {} fails the publish pipeline", m.crate_name)
            })?;
            let version = (info.meta.id, info.meta.version);
            match stored.get(&version) {
                None => unstored.push(m),
                Some(sha256) if *sha256 == sha256_hex(m.wasm) => {}
                Some(_) => rebuilt.push(format!("{}@{}", version.0, version.1)),
            }
        }
        anyhow::Ok((unstored, rebuilt))
    })
    .await
    .context("seeding task")??;
    Ok(SeedPlan { unstored, store_was_empty, rebuilt })
}

/// Assesses `fresh` (modules the store lacks, from [`plan_seed`])
/// through the publish pipeline and stores them approved.
pub async fn seed_unstored(
    store: &Store,
    engine: &Engine,
    fresh: Vec<BundledModule>,
) -> anyhow::Result<usize> {
    if fresh.is_empty() {
        return Ok(0);
    }
    let engine = engine.clone();
    // Side by side on every core: on a first start these compiles are
    // what the server waits for before it is ready (about 77 ms each).
    let versions = tokio::task::spawn_blocking(move || {
        use rayon::prelude::*;
        fresh
            .into_par_iter()
            .map(|m| {
                let accepted = publish::assess_blocking(&engine, m.wasm).with_context(|| {
                    format!("bundled rule {} fails the publish pipeline", m.crate_name)
                })?;
                Ok(new_version(&accepted, m.wasm))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await
    .context("seeding task")??;
    store.seed(versions).await.context("seeding the bundled rules")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored form of an accepted module.
pub fn new_version(accepted: &publish::Accepted, bytes: &[u8]) -> NewVersion {
    NewVersion {
        meta: accepted.rule.meta().clone(),
        tests: accepted.rule.info.tests.clone(),
        module: bytes.to_vec(),
        sha256: accepted.rule.sha256.clone(),
        report: serde_json::to_value(&accepted.report).unwrap_or_default(),
    }
}
