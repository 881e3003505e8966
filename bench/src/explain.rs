//! `explain` of a 200-line log against a registry's error signatures (the
//! synthetic corpus's, one per rule, plus the bundled rules' templates),
//! next to one check of a fleet machine on the same rule set, in the same
//! run: the ratio says what a paste costs against what a check costs.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use pitfall_contract::Manifest;
use pitfall_contract::meta::RuleMeta;
use pitfall_engine::{Engine, Rule, RuleSet};
use pitfall_explain::Explainer;

use crate::corpus::RuleSpec;
use crate::stats::Summary;

/// The lines of the explained log.
pub const LOG_LINES: usize = 200;

/// A real vLLM failure (`tests/reports/vllm-14817`: the bfloat16 check on a
/// Tesla T4, as its ranks print it) padded to [`LOG_LINES`] with the
/// start-up lines a server prints, each with its own numbers, and one line
/// a synthetic rule's signature matches.
pub fn log(synthetic_signature: &str) -> String {
    let real = include_str!("../../tests/reports/vllm-14817/error.txt");
    let mut lines: Vec<String> = Vec::with_capacity(LOG_LINES);
    let mut i = 0;
    while lines.len() + real.lines().count() + 1 < LOG_LINES {
        lines.push(format!(
            "(VllmWorker rank={} pid={}) INFO 03-14 20:19:{:02} [loader.py:{}] Loading safetensors checkpoint shard {} of 48: {:.2} GiB in {:.3} s",
            i % 4,
            17397 + i % 4,
            i % 60,
            100 + i,
            i + 1,
            0.5 + (i as f64) * 0.01,
            1.0 + (i as f64) * 0.003
        ));
        i += 1;
    }
    lines.push(synthetic_signature.to_owned());
    lines.extend(real.lines().map(str::to_owned));
    lines.join("\n")
}

/// The figures of one explain measurement.
#[derive(Debug, Clone)]
pub struct ExplainPoint {
    /// Rules whose signatures the explainer holds.
    pub rules: usize,
    /// Signatures compiled.
    pub signatures: usize,
    /// Lines of the explained log.
    pub log_lines: usize,
    /// Causes found (above the threshold).
    pub causes: usize,
    /// The best cause's rule.
    pub top: String,
    /// Building the explainer once (per ruleset revision), ms.
    pub build_ms: f64,
    /// One explain of the log.
    pub explain: Summary,
    /// One check of a fleet machine on the same rule set, as served (memo on).
    pub check: Summary,
}

/// Measures explain against `rules`, and a check of each of `machines`
/// on the same set, interleaved, `rounds` times.
pub fn measure(
    engine: &Engine,
    rules: Vec<Arc<Rule>>,
    machines: &[Manifest],
    rounds: usize,
) -> ExplainPoint {
    let set = RuleSet::tuned(rules, "bench-explain", engine.tuning());
    let start = Instant::now();
    let explainer = Explainer::new(set.rules().iter().map(|r| r.meta()));
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    let synthetic = set
        .rules()
        .iter()
        .rev()
        .find_map(|r| r.meta().error_signatures.first().map(|s| s.template.clone()))
        .unwrap_or_default();
    let log = log(&synthetic);
    // Warm: the memo and the compiled code, as a served registry has them.
    for m in machines {
        black_box(set.check(engine, m.clone()));
    }
    let first = explainer.explain(&log);
    let mut explains = Vec::with_capacity(rounds * machines.len());
    let mut checks = Vec::with_capacity(rounds * machines.len());
    for _ in 0..rounds {
        for m in machines {
            let m = m.clone();
            let start = Instant::now();
            black_box(set.check(engine, m));
            checks.push(start.elapsed());
            let start = Instant::now();
            black_box(explainer.explain(black_box(&log)));
            explains.push(start.elapsed());
        }
    }
    ExplainPoint {
        rules: set.rules().len(),
        signatures: explainer.signatures(),
        log_lines: log.lines().count(),
        causes: first.causes.len(),
        top: first.causes.first().map(|c| c.rule_id.clone()).unwrap_or_default(),
        build_ms,
        explain: Summary::of(&explains),
        check: Summary::of(&checks),
    }
}

/// The explainer alone at one registry size: no rule loaded, only metadata.
#[derive(Debug, Clone)]
pub struct AlonePoint {
    /// Rules whose signatures the explainer holds.
    pub rules: usize,
    /// Signatures compiled.
    pub signatures: usize,
    /// Building the explainer, ms.
    pub build_ms: f64,
    /// One explain of the log.
    pub explain: Summary,
}

/// Times `explain` of [`log`] over the synthetic corpus `specs`'
/// signatures and `bundled`'s, built from their metadata alone (so the
/// 100,000-rule size costs no load), `rounds` times. The log's synthetic
/// line is the middle rule's signature.
pub fn alone(specs: &[RuleSpec], bundled: &[RuleMeta], rounds: usize) -> AlonePoint {
    let metas: Vec<RuleMeta> = specs
        .iter()
        .map(|s| {
            serde_json::from_value(crate::corpus::meta(s)).expect("a synthetic rule's metadata")
        })
        .chain(bundled.iter().cloned())
        .collect();
    let start = Instant::now();
    let explainer = Explainer::new(metas.iter());
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    let middle = metas
        .get(specs.len() / 2)
        .and_then(|m| m.error_signatures.first())
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let log = log(&middle);
    let times: Vec<_> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            black_box(explainer.explain(black_box(&log)));
            start.elapsed()
        })
        .collect();
    AlonePoint {
        rules: metas.len(),
        signatures: explainer.signatures(),
        build_ms,
        explain: Summary::of(&times),
    }
}
