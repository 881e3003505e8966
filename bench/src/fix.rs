//! `pitfall fix` on one manifest: the solver's time per request and the
//! evaluations it used, against a rule set (the bundled corpus, or it and
//! a synthetic registry). The first request is timed apart: it compiles
//! the deferred candidates it meets and fills their memos; the rest are
//! the steady state of a served registry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pitfall_contract::Manifest;
use pitfall_engine::{Engine, Rule, RuleSet};

use crate::stats::Summary;

/// What one rule set's fixes measured.
#[derive(Debug, Clone)]
pub struct FixPoint {
    /// Rules in the set.
    pub rules_total: usize,
    /// The first fix's time.
    pub first: Duration,
    /// The following fixes' times.
    pub steady: Summary,
    /// Evaluations (distinct manifests checked) of one fix.
    pub evaluations: u32,
    /// Steps of the plan.
    pub steps: usize,
    /// The answer's status.
    pub status: String,
}

/// Fixes `manifest` `rounds + 1` times against `rules` (the first timed apart).
pub fn measure(
    engine: &Engine,
    rules: Vec<Arc<Rule>>,
    manifest: &Manifest,
    rounds: usize,
) -> FixPoint {
    let rules_total = rules.len();
    let set = RuleSet::tuned(rules, "bench", engine.tuning());
    let start = Instant::now();
    let first_answer = pitfall_fix::fix(engine, &set, manifest);
    let first = start.elapsed();
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let answer = pitfall_fix::fix(engine, &set, manifest);
        samples.push(start.elapsed());
        assert_eq!(answer.status, first_answer.status, "a fix answers the same each time");
    }
    FixPoint {
        rules_total,
        first,
        steady: Summary::of(&samples),
        evaluations: first_answer.evaluations,
        steps: first_answer.plan.as_ref().map_or(0, |p| p.steps.len()),
        status: serde_json::to_value(first_answer.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
    }
}
