//! The same rule logic three ways, per call: in our engine (the rule
//! called again through one evaluator, its instance reused and reset to
//! its fresh state before each call; a fresh instance per evaluation, as a
//! check runs its different candidates through one evaluator; and alone in
//! a fresh store), compiled into the host (`native`), and, with the
//! `extism` feature, hosted by Extism twice: one plug-in instance reused
//! across calls (Extism's default, which keeps what each call left) and a
//! fresh plug-in per call (the isolation our engine gives each
//! evaluation). One rule of each template, each
//! on its own `affected` (matched) and `unaffected` (clear) case manifests;
//! the three are interleaved round by round and each figure is the median
//! of single calls, so the ratios compare like with like.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pitfall_contract::cases::Evaluation;
use pitfall_contract::{Prepared, manifest_from_value};
use pitfall_engine::{Engine, Evaluator, Limits};

use crate::corpus::{RuleSpec, Template};
use crate::native::NativeRule;
use crate::stats::median;

/// Something that evaluates the template rule `spec` (the Extism host).
pub trait Host {
    /// Evaluates rule `i` of the comparison on a prepared manifest.
    fn evaluate(&mut self, i: usize, prepared: &Prepared) -> Evaluation;
}

/// One rule on one manifest.
#[derive(Debug, Clone)]
pub struct Row {
    /// The rule.
    pub rule: String,
    /// `matched` or `clear`.
    pub outcome: &'static str,
    /// Our engine calling the rule again and again through one evaluator,
    /// as Extism's reused plug-in is called: one instance, reset to its
    /// fresh state before each call (`Limits::reuse_instances`), µs.
    pub engine_reused_us: f64,
    /// Our engine as a check runs its candidates (different rules): calls
    /// through one evaluator, each in a fresh instance, one store per
    /// [`Evaluator::INSTANCES_PER_STORE`] calls (its creation and drop
    /// included: the median over batches of a batch's time per call), µs.
    pub engine_us: f64,
    /// Our engine, one call alone: a fresh instance in a fresh store, µs.
    pub engine_one_shot_us: f64,
    /// Compiled into the host, µs.
    pub native_us: f64,
    /// Extism, one instance reused across calls, µs (with the feature).
    pub extism_us: Option<f64>,
    /// Extism, a fresh plug-in per call, µs (with the feature).
    pub extism_fresh_us: Option<f64>,
}

/// The Extism hosts of a comparison (none without the feature).
#[derive(Default)]
pub struct Peers<'a> {
    /// One plug-in instance per rule, reused across calls.
    pub reused: Option<&'a mut dyn Host>,
    /// A fresh plug-in per call.
    pub fresh: Option<&'a mut dyn Host>,
}

impl std::fmt::Debug for Peers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers")
            .field("reused", &self.reused.is_some())
            .field("fresh", &self.fresh.is_some())
            .finish()
    }
}

/// A fresh Extism plug-in costs tens of times a reused one's call: it runs
/// this fraction of the calls, enough for a stable median.
const FRESH_CALL_SHARE: usize = 8;

/// The first rule of each template in `specs`.
pub fn pick(specs: &[RuleSpec]) -> Vec<RuleSpec> {
    [Template::VersionRange, Template::VersionAndCapability, Template::GpuFamily]
        .iter()
        .filter_map(|t| specs.iter().find(|s| s.template == *t).cloned())
        .collect()
}

fn case_manifest(spec: &RuleSpec, name: &str) -> Prepared {
    let cases = crate::corpus::cases(spec);
    let case = cases
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .expect("the case exists");
    Prepared::new(
        manifest_from_value(case["manifest"].clone()).expect("the case's manifest is valid"),
    )
}

fn outcome(e: &Evaluation) -> &'static str {
    match e {
        Evaluation::Clear => "clear",
        Evaluation::Matched(_) => "matched",
        Evaluation::Undetermined(_) => "undetermined",
        Evaluation::Failed(_) => "failed",
    }
}

/// Measures `calls` single calls of each (rule, manifest) per host, in
/// `rounds` interleaved rounds. Every host must give the same outcome.
pub fn measure(
    engine: &Engine,
    rules: &[RuleSpec],
    mut peers: Peers<'_>,
    calls: usize,
    rounds: usize,
) -> anyhow::Result<Vec<Row>> {
    let limit = Limits::default().max_output_bytes;
    let per_round = (calls / rounds.max(1)).max(1);
    // The same limits without reuse: every evaluation instantiates, as for
    // a check's candidates, which are different rules.
    let fresh = Engine::new(Limits { reuse_instances: false, ..engine.limits().clone() })?;
    let mut rows = Vec::new();
    for (i, spec) in rules.iter().enumerate() {
        let module = crate::corpus::module(spec);
        let loaded = engine.load(&module)?;
        let fresh_loaded = fresh.load(&module)?;
        let native = NativeRule::new(spec);
        for case in ["affected", "unaffected"] {
            let prepared = case_manifest(spec, case);
            let expected = outcome(&engine.evaluate(&loaded, &prepared));
            anyhow::ensure!(
                outcome(&native.evaluate(&prepared, limit)) == expected,
                "native differs on {}",
                spec.id()
            );
            for host in
                [peers.reused.as_deref_mut(), peers.fresh.as_deref_mut()].into_iter().flatten()
            {
                let got = host.evaluate(i, &prepared);
                anyhow::ensure!(
                    outcome(&got) == expected,
                    "extism differs on {}: {got:?}",
                    spec.id()
                );
            }
            let (mut r, mut e, mut o, mut n, mut x, mut f) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let batch = Evaluator::INSTANCES_PER_STORE as usize;
            let mut kept = engine.evaluator();
            for _ in 0..rounds.max(1) {
                time(&mut r, per_round, || kept.evaluate(&loaded, black_box(&prepared)));
                for _ in 0..(per_round / batch).max(1) {
                    let start = Instant::now();
                    let mut evaluator = fresh.evaluator();
                    for _ in 0..batch {
                        black_box(evaluator.evaluate(&fresh_loaded, black_box(&prepared)));
                    }
                    drop(evaluator);
                    e.push(start.elapsed() / batch as u32);
                }
                time(&mut o, per_round, || engine.evaluate(&loaded, black_box(&prepared)));
                time(&mut n, per_round, || native.evaluate(black_box(&prepared), limit));
                if let Some(host) = peers.reused.as_deref_mut() {
                    time(&mut x, per_round, || host.evaluate(i, black_box(&prepared)));
                }
                if let Some(host) = peers.fresh.as_deref_mut() {
                    let n = (per_round / FRESH_CALL_SHARE).max(1);
                    time(&mut f, n, || host.evaluate(i, black_box(&prepared)));
                }
            }
            // Every call but the first must have reused the instance (unless
            // the engine's reuse is off, as `--ablate` prices it), or the
            // column measures something else.
            anyhow::ensure!(
                !engine.limits().reuse_instances || kept.instances_reused() as usize + 1 == r.len(),
                "{}: the evaluator reused its instance {} times in {} calls",
                spec.id(),
                kept.instances_reused(),
                r.len()
            );
            rows.push(Row {
                rule: spec.id(),
                outcome: expected,
                engine_reused_us: us(&r),
                engine_us: us(&e),
                engine_one_shot_us: us(&o),
                native_us: us(&n),
                extism_us: (!x.is_empty()).then(|| us(&x)),
                extism_fresh_us: (!f.is_empty()).then(|| us(&f)),
            });
        }
    }
    Ok(rows)
}

fn time<R>(out: &mut Vec<Duration>, n: usize, mut f: impl FnMut() -> R) {
    for _ in 0..n {
        let start = Instant::now();
        black_box(f());
        out.push(start.elapsed());
    }
}

fn us(samples: &[Duration]) -> f64 {
    median(&samples.iter().map(|d| d.as_secs_f64() * 1e6).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Native and engine agree on every case of a spread of rules.
    #[test]
    fn native_rules_agree_with_their_modules() {
        let engine = Engine::new(Limits::default()).expect("engine");
        let specs = crate::corpus::specs(60, 11);
        let rules = pick(&specs);
        assert_eq!(rules.len(), 3);
        let rows = measure(&engine, &rules, Peers::default(), 4, 2).expect("agree");
        assert_eq!(rows.len(), 6);
        assert!(
            rows.iter().any(|r| r.outcome == "matched")
                && rows.iter().any(|r| r.outcome == "clear")
        );
    }

    /// Every generated module passes its own embedded cases in the engine,
    /// which is what publishing it requires.
    #[test]
    fn synthetic_modules_pass_their_cases_in_the_engine() {
        let engine = Engine::new(Limits::default()).expect("engine");
        for spec in crate::corpus::specs(24, 3) {
            let rule = engine
                .load(&crate::corpus::module(&spec))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.id()));
            for case in engine.run_tests(&rule) {
                assert!(
                    case.passed,
                    "{}: {} expected {}, got {}",
                    spec.id(),
                    case.name,
                    case.expected,
                    case.actual
                );
            }
        }
    }
}
