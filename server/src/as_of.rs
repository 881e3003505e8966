//! Rule sets of past revisions, for checks asked `?revision=N`: built on
//! demand from the store's history (`store/history.rs`) and the module
//! bytes kept by sha256, and kept for the few revisions asked last.
//!
//! Each past set has its own result cache: the shared one holds the served
//! revision's answers only, and an answer of one revision must never
//! answer for another.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use pitfall_engine::{Engine, Rule, RuleSet};

use crate::result_cache::ResultCache;
use crate::store::Store;

/// Past revisions kept built. A few: an audit asks about one revision,
/// then its neighbours; each set's modules are mostly the served set's,
/// shared by sha256, so what a kept set costs is its index and answers.
pub const PAST_SETS: usize = 4;
/// Answers kept per past revision, and their bytes.
const PAST_ANSWERS: usize = 1024;
const PAST_ANSWER_BYTES: usize = 4 << 20;

/// A past revision's rules and the answers computed with them.
#[derive(Debug)]
pub struct PastSet {
    /// The rules the revision served, labelled with it.
    pub rules: Arc<RuleSet>,
    /// Answers computed under this revision only.
    pub answers: ResultCache,
}

/// Why a past revision cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum PastError {
    /// Not a recorded revision: newer than the last, or older than the
    /// history (which starts where the database was first migrated to
    /// keep it).
    #[error(
        "revision {asked} is not recorded: this registry's history runs from {first} to {last}"
    )]
    NotRecorded {
        /// The revision asked.
        asked: i64,
        /// The first recorded.
        first: i64,
        /// The last recorded.
        last: i64,
    },
    /// The store or the module load failed.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// The kept past sets, most recently asked first.
#[derive(Debug)]
pub struct PastSets {
    sets: Mutex<VecDeque<Arc<PastSet>>>,
    /// One build at a time: concurrent asks for one revision wait for the
    /// first to build it instead of each loading the set.
    building: tokio::sync::Mutex<()>,
}

impl Default for PastSets {
    fn default() -> PastSets {
        PastSets { sets: Mutex::new(VecDeque::new()), building: tokio::sync::Mutex::new(()) }
    }
}

impl PastSets {
    /// The set of `revision`, kept or built. `live` are the modules the
    /// served set has loaded, by sha256, reused as they are.
    pub async fn get(
        &self,
        revision: i64,
        store: &Store,
        engine: &Engine,
        live: impl FnOnce() -> HashMap<String, Arc<Rule>>,
    ) -> Result<Arc<PastSet>, PastError> {
        if let Some(set) = self.kept(revision) {
            return Ok(set);
        }
        let _one_at_a_time = self.building.lock().await;
        if let Some(set) = self.kept(revision) {
            return Ok(set);
        }
        let (first, last) =
            store.recorded_revisions().await.context("reading the recorded revisions")?;
        if !(first..=last).contains(&revision) {
            return Err(PastError::NotRecorded { asked: revision, first, last });
        }
        let served = store.served_at(revision).await.context("reading a past revision's rules")?;
        let mut known = live();
        for set in self.sets.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            for rule in set.rules.rules() {
                known.entry(rule.sha256.clone()).or_insert_with(|| rule.clone());
            }
        }
        let rules = crate::modules::load_rules(engine, known, served).await?;
        tracing::info!(revision, rules = rules.len(), "built a past revision's rules");
        let set = Arc::new(PastSet {
            rules: Arc::new(RuleSet::new(rules, revision.to_string())),
            answers: ResultCache::new(PAST_ANSWERS, PAST_ANSWER_BYTES),
        });
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.push_front(set.clone());
        sets.truncate(PAST_SETS);
        Ok(set)
    }

    /// A kept set, moved to the front.
    fn kept(&self, revision: i64) -> Option<Arc<PastSet>> {
        let label = revision.to_string();
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        let at = sets.iter().position(|s| s.rules.revision() == label)?;
        let set = sets.remove(at)?;
        sets.push_front(set.clone());
        Some(set)
    }

    /// The revisions kept, most recently asked first.
    pub fn kept_revisions(&self) -> Vec<String> {
        let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.iter().map(|s| s.rules.revision().to_owned()).collect()
    }
}
