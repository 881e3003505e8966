//! Engine check latency at registry scale: the bundled rules plus a
//! synthetic corpus, loaded as a registry loads them at start-up
//! (metadata now, code on first candidacy), checked against a fleet of
//! distinct manifests. One untimed pass compiles every candidate the fleet
//! meets (its times are reported as the first check); then each manifest
//! is checked in rounds, and the index lookup and the manifest preparation
//! are timed on their own.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pitfall_contract::{Manifest, Prepared};
use pitfall_engine::{Engine, Rule, RuleSet};
use rayon::prelude::*;

use crate::corpus::RuleSpec;
use crate::stats::{Summary, median};

/// What one corpus size measured.
#[derive(Debug, Clone)]
pub struct ScalePoint {
    /// Synthetic rules (the bundled ones come on top).
    pub synthetic: usize,
    /// Rules in the set.
    pub rules_total: usize,
    /// Generating and loading (metadata only) the corpus.
    pub load: Duration,
    /// The first check of each manifest (compiles its new candidates).
    pub first_check: Summary,
    /// Checks after that.
    pub check: Summary,
    /// The same checks on one thread, in CPU time: what a check costs,
    /// apart from the time the scheduler keeps it waiting.
    pub check_cpu: Summary,
    /// The index lookup and selector filter alone (`RuleSet::candidates`).
    pub candidates: Summary,
    /// Normalise, enrich, flatten.
    pub prepare: Summary,
    /// Median candidates per manifest.
    pub candidates_median: f64,
    /// Largest candidates of any manifest.
    pub candidates_max: usize,
    /// Median findings per manifest.
    pub findings_median: f64,
    /// Rules compiled by the end (those the fleet made candidates).
    pub linked: usize,
    /// Checks as served, with the memo of evaluations, of machines the
    /// registry has not seen, after it checked the fleet once.
    pub memo_check: Summary,
    /// Those checks on one thread, in CPU time.
    pub memo_check_cpu: Summary,
    /// Of their candidates, the share the memo answered.
    pub memo_hit_rate: f64,
    /// Bytes the memo held at the end.
    pub memo_bytes: usize,
    /// Where such a check's time goes ([`CheckParts`]).
    pub parts: CheckParts,
}

/// Where a check of a machine the memo has not seen spends its CPU, part
/// by part, on one thread (the means over the machines, in microseconds):
/// what `RuleSet::check_on_this_thread`, the server's check, does, taken
/// apart. The replays are timed twice: first as the check meets them (each
/// rule's memo as cold in the caches as a server's is, among thousands of
/// rules), then the same replays again at once, their memory now in the
/// caches. The gap between the two is what waiting for memory costs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CheckParts {
    /// Machines measured.
    pub machines: usize,
    /// Normalise, enrich, flatten (`Prepared::new`).
    pub prepare_us: f64,
    /// The facts, the index and the selectors (`RuleSet::candidates`).
    pub candidates_us: f64,
    /// Every candidate's memo asked once.
    pub replays_us: f64,
    /// The same, asked again at once.
    pub replays_again_us: f64,
    /// The candidates the memo did not know, run in the sandbox and recorded.
    pub misses_us: f64,
    /// Candidates per machine.
    pub candidates: f64,
    /// Of those, run in the sandbox per machine.
    pub missed: f64,
}

impl CheckParts {
    /// Times the parts on `machines`, each checked part by part as the
    /// engine's check does it (the memo learns from them as it would).
    pub fn measure(engine: &Engine, set: &RuleSet, machines: &[Manifest]) -> CheckParts {
        let mut total = [Duration::ZERO; 5];
        let (mut candidates, mut missed) = (0usize, 0usize);
        for m in machines {
            let m = m.clone();
            let t0 = thread_cpu_time();
            let prepared = Prepared::new(m);
            let t1 = thread_cpu_time();
            let rules = set.candidates(&prepared);
            let t2 = thread_cpu_time();
            let replayed: Vec<bool> =
                rules.iter().map(|r| engine.replay(r, &prepared).is_some()).collect();
            let t3 = thread_cpu_time();
            for rule in &rules {
                black_box(engine.replay(rule, &prepared));
            }
            let t4 = thread_cpu_time();
            let mut evaluator = engine.evaluator();
            for (rule, _) in rules.iter().zip(&replayed).filter(|(_, hit)| !**hit) {
                black_box(evaluator.evaluate_recorded(rule, &prepared));
                missed += 1;
            }
            drop(evaluator);
            let t5 = thread_cpu_time();
            candidates += rules.len();
            for (slot, d) in total.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]) {
                *slot += d;
            }
        }
        let n = machines.len().max(1) as f64;
        let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
        CheckParts {
            machines: machines.len(),
            prepare_us: us(total[0]),
            candidates_us: us(total[1]),
            replays_us: us(total[2]),
            replays_again_us: us(total[3]),
            misses_us: us(total[4]),
            candidates: candidates as f64 / n,
            missed: missed as f64 / n,
        }
    }
}

/// Loads the corpus as deferred rules, generating each module on the way
/// (no second copy of 100,000 modules in memory).
pub fn load(engine: &Engine, specs: &[RuleSpec]) -> Vec<Arc<Rule>> {
    specs
        .par_iter()
        .map(|spec| {
            let bytes: Arc<[u8]> = crate::corpus::module(spec).into();
            Arc::new(engine.load_deferred(bytes).unwrap_or_else(|e| panic!("{}: {e}", spec.id())))
        })
        .collect()
}

/// Measures one corpus size. `unseen` and `probe` are machines the
/// registry meets only after the fleet: the first timed as served, the
/// second taken apart ([`CheckParts`]).
pub fn measure(
    engine: &Engine,
    bundled: &[Arc<Rule>],
    specs: &[RuleSpec],
    fleet: &[Manifest],
    unseen: &[Manifest],
    probe: &[Manifest],
    rounds: usize,
) -> ScalePoint {
    let start = Instant::now();
    let mut rules = bundled.to_vec();
    rules.extend(load(engine, specs));
    let set = RuleSet::tuned(rules, format!("bench-{}", specs.len()), engine.tuning());
    let load = start.elapsed();
    // Every candidate in the sandbox (the targets), or as served (the memo).
    let check = |memo: bool, m: Manifest| {
        if memo { set.check(engine, m) } else { set.check_sandboxed(engine, m) }
    };
    // The copy of the manifest is made outside the timed part.
    let time = |memo: bool, m: &Manifest| {
        let m = m.clone();
        let start = Instant::now();
        let answer = black_box(check(memo, m));
        (start.elapsed(), answer)
    };
    // One worker: a check's parallel part runs on this pool's only thread,
    // so that thread's CPU time is the whole check.
    let one_thread =
        rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let cpu_time = |memo: bool, m: &Manifest| {
        let m = m.clone();
        one_thread.install(|| {
            let start = thread_cpu_time();
            black_box(check(memo, m));
            thread_cpu_time().saturating_sub(start)
        })
    };
    let mut first = Vec::with_capacity(fleet.len());
    let mut candidates = Vec::with_capacity(fleet.len());
    let mut findings = Vec::with_capacity(fleet.len());
    for m in fleet {
        let (t, answer) = time(false, m);
        first.push(t);
        candidates.push(answer.stats.rules_evaluated as usize);
        findings.push(answer.findings.len() as f64);
    }
    let mut cpu = Vec::with_capacity(fleet.len() * rounds);
    let mut checks = Vec::with_capacity(fleet.len() * rounds);
    let mut lookups = Vec::with_capacity(fleet.len() * rounds);
    let mut prepares = Vec::with_capacity(fleet.len() * rounds);
    for _ in 0..rounds {
        for m in fleet {
            checks.push(time(false, m).0);
            cpu.push(cpu_time(false, m));
            // The copy is made outside the timed part, as for the checks.
            let owned = m.clone();
            let start = Instant::now();
            let prepared = Prepared::new(owned);
            prepares.push(start.elapsed());
            let start = Instant::now();
            black_box(set.candidates(&prepared));
            lookups.push(start.elapsed());
        }
    }
    // As served: the memo learns from the fleet once, then machines it has
    // not seen are checked, each once (a second time would replay all).
    for m in fleet {
        black_box(check(true, m.clone()));
    }
    // Their new candidates compiled first, as the server's warm-up does;
    // a sandboxed check records nothing.
    for m in unseen.iter().chain(probe) {
        black_box(check(false, m.clone()));
    }
    let before = engine.memo_stats();
    let (half, rest) = unseen.split_at(unseen.len() / 2);
    let memo_checks: Vec<Duration> = half.iter().map(|m| time(true, m).0).collect();
    let memo_cpu: Vec<Duration> = rest.iter().map(|m| cpu_time(true, m)).collect();
    let after = engine.memo_stats();
    let (hits, misses) = (after.hits - before.hits, after.misses - before.misses);
    // On one thread, as the server's checks run.
    let parts = one_thread.install(|| CheckParts::measure(engine, &set, probe));
    ScalePoint {
        parts,
        memo_check: Summary::of(&memo_checks),
        memo_check_cpu: Summary::of(&memo_cpu),
        memo_hit_rate: hits as f64 / (hits + misses).max(1) as f64,
        memo_bytes: after.bytes,
        synthetic: specs.len(),
        rules_total: set.rules().len(),
        load,
        first_check: Summary::of(&first),
        check: Summary::of(&checks),
        check_cpu: Summary::of(&cpu),
        candidates: Summary::of(&lookups),
        prepare: Summary::of(&prepares),
        candidates_median: median(&candidates.iter().map(|&c| c as f64).collect::<Vec<_>>()),
        candidates_max: candidates.iter().copied().max().unwrap_or(0),
        findings_median: median(&findings),
        linked: set.rules().iter().filter(|r| r.is_linked()).count(),
    }
}

/// The CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec for the call's duration,
    // and CLOCK_THREAD_CPUTIME_ID is supported on Linux, the only platform
    // the bench runs on; on failure `t` stays zero.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use pitfall_contract::manifest_from_value;
    use pitfall_contract::normalize::normalize;
    use pitfall_contract::selector::{ManifestFacts, Selector};
    use pitfall_engine::index::CandidateIndex;

    use crate::corpus::specs;
    use crate::fleet::fleet;
    use crate::stats::median;

    /// The median over a fleet of the synthetic rules whose selectors hold
    /// (what a check evaluates besides the bundled rules).
    fn median_candidates(rules: usize) -> f64 {
        let selectors: Vec<Vec<Selector>> = specs(rules, 7)
            .iter()
            .map(|s| {
                s.selectors()
                    .iter()
                    .map(|t| Selector::parse(t).unwrap_or_else(|e| panic!("{e}")))
                    .collect()
            })
            .collect();
        let index = CandidateIndex::new(selectors.iter().map(Vec::as_slice));
        let counts: Vec<f64> = fleet(30, rules, 8)
            .into_iter()
            .map(|m| {
                let mut m = manifest_from_value(m).expect("valid");
                normalize(&mut m);
                let facts = ManifestFacts::new(&m);
                index
                    .candidates(&facts)
                    .into_iter()
                    .filter(|&i| selectors[i as usize].iter().all(|s| s.holds_in(&facts)))
                    .count() as f64
            })
            .collect();
        median(&counts)
    }

    /// Taking a check apart counts its candidates once each, runs in the
    /// sandbox only those the memo did not know, and records them: the
    /// same machines a second time are answered by the memo alone.
    #[test]
    fn check_parts_take_a_check_apart_and_the_memo_learns_from_it() {
        use pitfall_engine::{Engine, Limits, RuleSet};

        use super::{CheckParts, load};

        let engine = Engine::new(Limits::default()).expect("engine");
        let set = RuleSet::new(load(&engine, &specs(1000, 3)), "parts");
        let machines: Vec<_> =
            fleet(4, 1000, 5).into_iter().map(|m| manifest_from_value(m).expect("valid")).collect();
        let first = CheckParts::measure(&engine, &set, &machines);
        assert_eq!(first.machines, 4);
        assert!(first.candidates >= 1.0, "{first:?}");
        assert!(first.missed > 0.0 && first.missed <= first.candidates, "{first:?}");
        let again = CheckParts::measure(&engine, &set, &machines);
        assert_eq!(again.candidates, first.candidates);
        assert_eq!(again.missed, 0.0, "{again:?}");
        for us in [again.prepare_us, again.candidates_us, again.replays_us, again.replays_again_us]
        {
            assert!(us.is_finite() && us > 0.0, "{again:?}");
        }
    }

    /// The promise the 100k-over-10k target rests on: a machine is a
    /// candidate for the rules of the packages it has, and a bigger
    /// registry adds rules about packages further down the tail, so a
    /// machine's candidates stay few and stop growing with the registry.
    #[test]
    fn a_machines_candidates_stay_few_and_do_not_grow_with_the_registry() {
        let (small, large) = (median_candidates(10_000), median_candidates(100_000));
        assert!((5.0..=80.0).contains(&small), "10k: {small} candidates");
        assert!(
            large <= 1.5 * small && large >= 0.5 * small,
            "10k: {small}, 100k: {large} candidates"
        );
    }
}
