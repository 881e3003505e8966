//! The candidate index: from the rules' `applies_to` selectors to the few
//! rules a manifest can match, so a check costs in proportion to its
//! candidates, not to the size of the registry.
//!
//! Each rule is filed under one key (its most selective selector: a
//! package, else an engine, else an accelerator vendor, else an
//! architecture); rules without such a selector are always candidates. A
//! manifest's keys pick buckets; the rules found there must then satisfy
//! all of their selectors.

use std::collections::HashMap;

use pitfall_sdk::model::Manifest;
use pitfall_sdk::model::normalize::package_key;
use pitfall_sdk::model::selector::Selector;

/// Positions of rules (into the rule set) by key.
#[derive(Debug, Default, Clone)]
pub struct CandidateIndex {
    buckets: HashMap<Selector, Vec<u32>>,
    always: Vec<u32>,
}

/// The selector a rule is filed under, by selectivity.
fn key(selectors: &[Selector]) -> Option<&Selector> {
    let rank = |s: &Selector| match s {
        Selector::Package(_) => 0,
        Selector::Engine(_) => 1,
        Selector::Accelerator(_) => 2,
        Selector::Arch(_) => 3,
        Selector::Container => 4,
    };
    selectors.iter().filter(|s| !matches!(s, Selector::Container)).min_by_key(|s| rank(s))
}

impl CandidateIndex {
    /// Indexes rules given by their selectors, in rule-set order.
    pub fn new<'a>(rules: impl IntoIterator<Item = &'a [Selector]>) -> CandidateIndex {
        let mut index = CandidateIndex::default();
        for (i, selectors) in rules.into_iter().enumerate() {
            match key(selectors) {
                Some(k) => index.buckets.entry(k.clone()).or_default().push(i as u32),
                None => index.always.push(i as u32),
            }
        }
        index
    }

    /// Positions of the rules whose key the manifest has, in ascending
    /// order; the caller still checks all of each rule's selectors.
    pub fn candidates(&self, m: &Manifest) -> Vec<u32> {
        let mut out = self.always.clone();
        let mut take = |s: Selector| {
            if let Some(bucket) = self.buckets.get(&s) {
                out.extend_from_slice(bucket);
            }
        };
        for p in &m.packages {
            take(Selector::Package(package_key(&p.name)));
        }
        if let Some(engine) = m.workload.as_ref().and_then(|w| w.engine.clone()) {
            take(Selector::Engine(engine));
        }
        let mut vendors: Vec<&str> = m.accelerators.iter().filter_map(|a| a.vendor.as_deref()).collect();
        vendors.sort_unstable();
        vendors.dedup();
        for v in vendors {
            take(Selector::Accelerator(v.to_owned()));
        }
        if let Some(arch) = m.host.as_ref().and_then(|h| h.arch.clone()) {
            take(Selector::Arch(arch));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
