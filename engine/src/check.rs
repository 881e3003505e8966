//! A check: one manifest against a rule set. The manifest is normalised,
//! enriched and flattened once; the candidate index picks the rules whose
//! selectors can hold; each candidate's memo (`crate::memo`) answers for
//! it when the rule would read what it read before, and the others run in
//! parallel across cores (unless the cores are already busy with other
//! checks), each in its own instance; each rule's result lands in exactly
//! one list of the answer. A caller may give the check a deadline, looked
//! at before each evaluation in the sandbox: the check then ends there with
//! [`PastDeadline`] rather than an answer.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use pitfall_contract::cases::Evaluation;
use pitfall_contract::report::{CheckResponse, CheckStats, Enriched, RuleError, Undetermined};
use pitfall_contract::selector::ManifestFacts;
use pitfall_contract::{Manifest, Prepared};
use rayon::prelude::*;

use crate::engine::{Engine, Evaluator};
use crate::error::PastDeadline;
use crate::gate::Gates;
use crate::index::CandidateIndex;
use crate::rule::Rule;
use crate::tuning::Tuning;

/// Below this many candidates a check runs on the calling thread: handing
/// work to the pool costs more than a few evaluations.
const PARALLEL_THRESHOLD: usize = 8;

/// An immutable set of loaded rules with its candidate index.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Arc<Rule>>,
    index: CandidateIndex,
    /// Each rule's selectors as numbers, by position (`crate::gate`).
    gates: Gates,
    revision: String,
    tuning: Tuning,
}

impl RuleSet {
    /// Indexes `rules`; `revision` names this set in answers.
    pub fn new(rules: Vec<Arc<Rule>>, revision: impl Into<String>) -> RuleSet {
        RuleSet::tuned(rules, revision, Tuning::default())
    }

    /// [`RuleSet::new`] with `tuning`'s index and gates (the
    /// bench prices each; its engine's tuning should be the same).
    pub fn tuned(rules: Vec<Arc<Rule>>, revision: impl Into<String>, tuning: Tuning) -> RuleSet {
        let selectors = || rules.iter().map(|r| r.selectors.as_slice());
        let index = CandidateIndex::tuned(selectors(), &tuning);
        let gates = if tuning.gates { Gates::new(selectors()) } else { Gates::default() };
        RuleSet { index, gates, revision: revision.into(), tuning, rules }
    }

    /// The rules, in set order.
    pub fn rules(&self) -> &[Arc<Rule>] {
        &self.rules
    }

    /// The revision given at construction.
    pub fn revision(&self) -> &str {
        &self.revision
    }

    /// The rules that a manifest's selectors admit. The manifest's facts
    /// are derived once, for the index and every candidate's selectors,
    /// from the packages some selector names; a candidate's gate decides
    /// for its selectors when it can (`crate::gate`), without reading them.
    pub fn candidates(&self, prepared: &Prepared) -> Vec<&Arc<Rule>> {
        // Only the packages a selector names (the rest of a machine's
        // hundreds change nothing here), with the keys the field map
        // derived for them.
        let packages = prepared.fields.packages_with_keys().map(|(p, key)| (p, Cow::Borrowed(key)));
        let facts = ManifestFacts::of_keyed_packages(&prepared.manifest, packages, |key| {
            self.index.names_package(key)
        });
        let positions = self.index.candidates(&facts);
        let selectors_hold =
            |i: u32| self.rules[i as usize].selectors.iter().all(|s| s.holds_in(&facts));
        if !self.tuning.gates {
            return positions
                .into_iter()
                .filter(|&i| selectors_hold(i))
                .map(|i| &self.rules[i as usize])
                .collect();
        }
        let gate_facts = self.gates.facts(&facts);
        positions
            .into_iter()
            .filter(|&i| self.gates.admits(i, &gate_facts).unwrap_or_else(|| selectors_hold(i)))
            .map(|i| &self.rules[i as usize])
            .collect()
    }

    /// Checks a manifest (as the client sent it).
    pub fn check(&self, engine: &Engine, manifest: Manifest) -> CheckResponse {
        let Ok(answer) = self.check_with(engine, manifest, true, &Unbounded);
        answer
    }

    /// [`RuleSet::check`] with every candidate evaluated on the calling
    /// thread, stopped at `deadline`: for a caller whose parallelism is
    /// across checks (the server runs one check per core on its own
    /// workers). There, handing a check's candidates to the pool only takes
    /// cores from the other checks, and costs wake-ups; and a check that
    /// runs where its request is served has to end when the request's time
    /// is up, since nothing can take the thread back from it.
    pub fn check_on_this_thread(
        &self,
        engine: &Engine,
        manifest: Manifest,
        deadline: Instant,
    ) -> Result<CheckResponse, PastDeadline> {
        self.check_with(engine, manifest, true, &deadline)
    }

    /// [`RuleSet::check`] with every candidate run in the sandbox, whatever
    /// its memo knows (and recording nothing): the answer the memo must
    /// equal, and what a check costs without it.
    pub fn check_sandboxed(&self, engine: &Engine, manifest: Manifest) -> CheckResponse {
        let Ok(answer) = self.check_with(engine, manifest, false, &Unbounded);
        answer
    }

    fn check_with<B: Bound>(
        &self,
        engine: &Engine,
        manifest: Manifest,
        memo: bool,
        bound: &B,
    ) -> Result<CheckResponse, B::Passed> {
        let start = Instant::now();
        let (_running, pool_has_room) = engine.check_started();
        let fan_out = B::MAY_FAN_OUT && pool_has_room;
        let prepared = Prepared::new(manifest);
        let candidates = self.candidates(&prepared);
        // Replays first, on this thread: a rule whose memo knows what it
        // read costs a few lookups, less than handing it to another core.
        // Only the rest run in the sandbox, fanned out when worth it.
        let mut results: Vec<(&Arc<Rule>, Option<Evaluation>)> = candidates
            .iter()
            .map(|rule| (*rule, memo.then(|| engine.replay_uncounted(rule, &prepared)).flatten()))
            .collect();
        let mut misses: Vec<&mut (&Arc<Rule>, Option<Evaluation>)> =
            results.iter_mut().filter(|(_, evaluation)| evaluation.is_none()).collect();
        let replayed = candidates.len() - misses.len();
        if memo {
            engine.count_replays(replayed, misses.len());
        }
        // The bound is looked at before each evaluation in the sandbox (the
        // part of a check whose time a rule decides), and once here, so a
        // check that is already late stops even if its memo knew everything.
        bound.passed(replayed, candidates.len())?;
        // One evaluator per thread's share of the misses: each candidate in
        // a fresh instance, the store's upkeep shared (`Evaluator`).
        let run = |evaluator: &mut Evaluator<'_>,
                   slot: &mut &mut (&Arc<Rule>, Option<Evaluation>)| {
            slot.1 = Some(if memo {
                evaluator.evaluate_recorded(slot.0, &prepared)
            } else {
                evaluator.evaluate(slot.0, &prepared)
            });
        };
        if misses.len() < PARALLEL_THRESHOLD || !fan_out {
            let mut evaluator = engine.evaluator();
            for (n, slot) in misses.iter_mut().enumerate() {
                if n > 0 {
                    bound.passed(replayed + n, candidates.len())?;
                }
                run(&mut evaluator, slot);
            }
        } else {
            // Only an unbounded check gets here (`Bound::MAY_FAN_OUT`).
            misses.par_iter_mut().for_each_init(|| engine.evaluator(), run);
        }
        let mut answer = CheckResponse {
            findings: Vec::new(),
            undetermined: Vec::new(),
            rule_errors: Vec::new(),
            ruleset_revision: self.revision.clone(),
            stats: CheckStats {
                rules_total: self.rules.len() as u32,
                rules_evaluated: candidates.len() as u32,
                elapsed_us: 0,
            },
            enriched: Enriched::all(&prepared.fields, &prepared.enrichment),
            unresolved: prepared.enrichment.unresolved.clone(),
            as_of: false,
        };
        for (rule, evaluation) in results {
            let rule_id = || rule.id().to_owned();
            // Every slot was filled above; an empty one would be this
            // function's bug, reported rather than dropped.
            match evaluation.unwrap_or_else(|| {
                Evaluation::Failed("internal: the rule was not evaluated".into())
            }) {
                Evaluation::Clear => {}
                Evaluation::Matched(finding) => answer.findings.push(*finding),
                Evaluation::Undetermined(named) => answer.undetermined.push(Undetermined::explain(
                    rule_id(),
                    named,
                    &prepared.fields,
                )),
                Evaluation::Failed(error) => {
                    answer.rule_errors.push(RuleError { rule_id: rule_id(), error })
                }
            }
        }
        // Worst first, then by id: a stable order clients can diff.
        // By what each finding keeps apart: a replayed one is its text.
        answer.findings.sort_by(|a, b| {
            b.severity().cmp(&a.severity()).then_with(|| a.rule_id().cmp(b.rule_id()))
        });
        answer.undetermined.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
        answer.rule_errors.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
        answer.stats.elapsed_us = start.elapsed().as_micros() as u64;
        Ok(answer)
    }
}

/// When a check has to stop: never, or at an instant.
trait Bound {
    /// What a check that stopped answers instead.
    type Passed;
    /// Whether the check may hand its candidates to the pool. A bounded
    /// check never does: its callers check on their own threads, and the
    /// bound is looked at between evaluations on this one.
    const MAY_FAN_OUT: bool;
    /// `Err` once the check has to stop, with `evaluated` of `candidates`
    /// answered so far.
    fn passed(&self, evaluated: usize, candidates: usize) -> Result<(), Self::Passed>;
}

/// No bound: the library's own callers (the CLI, the bench, tests), whose
/// checks end when their candidates do.
struct Unbounded;

impl Bound for Unbounded {
    type Passed = Infallible;
    const MAY_FAN_OUT: bool = true;

    fn passed(&self, _: usize, _: usize) -> Result<(), Infallible> {
        Ok(())
    }
}

impl Bound for Instant {
    type Passed = PastDeadline;
    const MAY_FAN_OUT: bool = false;

    fn passed(&self, evaluated: usize, candidates: usize) -> Result<(), PastDeadline> {
        if Instant::now() >= *self { Err(PastDeadline { evaluated, candidates }) } else { Ok(()) }
    }
}
