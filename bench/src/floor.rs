//! The empty-module floor and the `ratio_to_floor` line, measured as the
//! engine benchmark (`engine/benches/engine.rs`) measures them: the floor
//! is a WAT module with one page of memory whose `pitfall_evaluate`
//! returns 0, loaded with the required custom sections and run through
//! the same `Engine::evaluate` path; each bundled rule is evaluated on the
//! prepared G5g manifest; both are the median of single evaluations, in
//! rounds that interleave the floor and every rule so background load hits
//! all alike; the ratio is the median over the rules of rule / floor.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pitfall_contract::Prepared;
use pitfall_engine::{Engine, Rule};

use crate::stats::median;

/// The engine benchmark's own text of the synthetic modules, so the floor
/// is the same module in both.
#[path = "../../engine/benches/support/synthetic.rs"]
mod synthetic;

/// A synthetic module: `body` (WAT module fields) plus the custom sections
/// `Engine::load` requires, with metadata that never matches anything.
pub fn synthetic_module(id: &str, body: &str) -> Vec<u8> {
    synthetic::synthetic_module(id, body)
}

/// The floor: one page, `pitfall_evaluate` returns 0 (clear).
pub fn floor_module() -> Vec<u8> {
    synthetic_module(
        "bench-floor-1p",
        r#"(memory (export "memory") 1)
               (func (export "pitfall_evaluate") (result i32) (i32.const 0))"#,
    )
}

/// The floor and the rules, each the median of single evaluations.
#[derive(Debug, Clone)]
pub struct FloorRatio {
    /// The floor's median, µs.
    pub floor_us: f64,
    /// Each rule's id and median, µs.
    pub rules: Vec<(String, f64)>,
    /// The median over the rules of rule / floor.
    pub ratio: f64,
}

/// Measures `evaluations` single evaluations of the floor and of each rule,
/// split into `rounds` interleaved rounds.
pub fn measure(
    engine: &Engine,
    floor: &Rule,
    rules: &[Arc<Rule>],
    prepared: &Prepared,
    evaluations: usize,
    rounds: usize,
) -> FloorRatio {
    let per_round = (evaluations / rounds.max(1)).max(1);
    let mut floor_samples = Vec::with_capacity(evaluations);
    let mut rule_samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(evaluations); rules.len()];
    let time = |out: &mut Vec<Duration>, rule: &Rule| {
        for _ in 0..per_round {
            let start = Instant::now();
            black_box(engine.evaluate(rule, black_box(prepared)));
            out.push(start.elapsed());
        }
    };
    for _ in 0..rounds.max(1) {
        time(&mut floor_samples, floor);
        for (rule, out) in rules.iter().zip(&mut rule_samples) {
            time(out, rule);
        }
    }
    let us = |s: &[Duration]| median(&s.iter().map(|d| d.as_secs_f64() * 1e6).collect::<Vec<_>>());
    let floor_us = us(&floor_samples);
    let rules: Vec<(String, f64)> =
        rules.iter().zip(&rule_samples).map(|(r, s)| (r.id().to_owned(), us(s))).collect();
    let ratio = median(&rules.iter().map(|(_, t)| t / floor_us).collect::<Vec<_>>());
    FloorRatio { floor_us, rules, ratio }
}
