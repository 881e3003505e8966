//! The rules this process serves: the approved versions in the store,
//! loaded into the engine and swapped in whole when the store's ruleset
//! revision moves. Several processes on one database converge by polling
//! that revision; compiled modules are kept per process by sha256, so a
//! swap recompiles only what is new.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context;
use pitfall_bundled_rules::BundledModule;
use pitfall_engine::{Engine, Rule, RuleSet};

use crate::publish;
use crate::store::{NewVersion, Store};

/// The served rule set and where it comes from.
#[derive(Debug)]
pub struct Registry {
    store: Store,
    engine: Engine,
    current: RwLock<Arc<RuleSet>>,
    /// Loaded modules by sha256, so unchanged rules survive a swap.
    loaded: Mutex<HashMap<String, Arc<Rule>>>,
    /// One refresh at a time (the poller and writes both trigger them).
    refreshing: tokio::sync::Mutex<()>,
    /// Whether the last contact with the store succeeded.
    store_ok: AtomicBool,
}

impl Registry {
    /// Loads what the store serves now.
    pub async fn open(store: Store, engine: Engine) -> anyhow::Result<Registry> {
        let registry = Registry {
            store,
            engine,
            current: RwLock::new(Arc::new(RuleSet::new(Vec::new(), "0"))),
            loaded: Mutex::new(HashMap::new()),
            refreshing: tokio::sync::Mutex::new(()),
            store_ok: AtomicBool::new(false),
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

    /// The rule set checks run against now.
    pub fn rules(&self) -> Arc<RuleSet> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
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
        let revision = self.store.revision().await.context("reading the ruleset revision")?.to_string();
        if self.rules().revision() == revision {
            return Ok(false);
        }
        let served = self.store.served_versions().await.context("reading the approved versions")?;
        let engine = self.engine.clone();
        let known = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let rules = tokio::task::spawn_blocking(move || {
            let mut rules = Vec::with_capacity(served.len());
            for version in served {
                if let Some(rule) = known.get(&version.sha256) {
                    rules.push(rule.clone());
                    continue;
                }
                match engine.load(&version.module) {
                    Ok(rule) => rules.push(Arc::new(rule)),
                    // An approved module this engine no longer accepts (an
                    // engine upgrade tightened a limit): skip it, loudly,
                    // rather than stop serving every other rule.
                    Err(e) => tracing::error!(rule = %version.rule_id, version = %version.version, error = %e, "approved module does not load; not served"),
                }
            }
            rules
        })
        .await
        .context("loading modules")?;
        {
            let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
            loaded.clear();
            loaded.extend(rules.iter().map(|r| (r.sha256.clone(), r.clone())));
        }
        tracing::info!(revision = %revision, rules = rules.len(), "serving a new ruleset");
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(RuleSet::new(rules, revision));
        Ok(true)
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
                    tracing::warn!(error = format!("{e:#}"), "ruleset refresh failed; serving the last good set");
                }
            }
        })
    }
}

/// Stores the bundled rules as approved versions (idempotently: a version
/// already stored is left alone). Each goes through the publish pipeline
/// first, so a bundled rule meets the bar a contributed one does.
pub async fn seed_bundled(store: &Store, engine: &Engine) -> anyhow::Result<usize> {
    seed_modules(store, engine, pitfall_bundled_rules::MODULES.to_vec()).await
}

/// Seeds these modules (all bundled ones, or a subset in tests).
pub async fn seed_modules(store: &Store, engine: &Engine, modules: Vec<BundledModule>) -> anyhow::Result<usize> {
    let engine = engine.clone();
    let versions = tokio::task::spawn_blocking(move || {
        modules
            .into_iter()
            .map(|m| {
                let accepted = publish::assess_blocking(&engine, m.wasm)
                    .with_context(|| format!("bundled rule {} fails the publish pipeline", m.crate_name))?;
                Ok(new_version(&accepted, m.wasm))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await
    .context("seeding task")??;
    store.seed(versions).await.context("seeding the bundled rules")
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
