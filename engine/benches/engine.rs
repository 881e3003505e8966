//! How fast the engine evaluates rules, and how that compares with the
//! cheapest evaluation wasmtime can do under the same configuration.
//!
//! The issue's target is that evaluating a real rule costs at most 1.5× the
//! **floor**: an empty WAT module (one page of memory, `pitfall_evaluate`
//! returns 0 at once) run through the very same path (fresh store, fuel,
//! epoch deadline, `InstancePre::instantiate`, one call). Per-rule
//! evaluation is, as issue 7 defines it, "instantiate, read fields,
//! return": `Engine::run_sandboxed`. Whatever a rule costs above the floor
//! there is the rule's own: its module (imports, table, memory image), its
//! host calls and its code. Rendering a matched finding (placeholders,
//! remedies, evidence) is host work after the instance is gone; it is
//! measured too, as `Engine::evaluate` (sandboxed run plus render), and
//! reported next to it.
//!
//! Two parts, in one process so the ratios compare like with like on a
//! noisy 2-core machine:
//!
//! 1. a criterion group (`floor`, `rule/<id>`, `check/all-bundled/<fixture>`)
//!    for statistics and regression tracking across runs;
//! 2. a summary printed afterwards, from a plain manual timer: the median of
//!    N single evaluations, floor and rules interleaved round by round so
//!    that a burst of background load hits all of them alike. The summary is
//!    what BENCHMARKS.md reports, together with what explains the gaps:
//!    - each rule's memory pages, data bytes, host calls (counted by a
//!      probe outside the engine) and finding-render time;
//!    - synthetic floors that add one cost each: more memory pages, or a
//!      fixed number of host calls;
//!    - the same modules evaluated in turn instead of repeatedly (a check
//!      never runs one module twice in a row, so its caches are colder);
//!    - whole checks, in parallel as `RuleSet::check` runs them and on one
//!      thread, with the manifest preparation on its own.
//!
//! Run: `cargo bench -p pitfall-engine --bench engine`
//! (`PITFALL_BENCH_NO_SUMMARY=1` runs only the criterion group; like
//! criterion's measurements, the summary is skipped in test mode, e.g.
//! under `cargo test --benches`). A filter that matches no benchmark, as in
//! `cargo bench -p pitfall-engine --bench engine -- none`, runs the summary
//! alone.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use pitfall_contract::cases::Evaluation;
use pitfall_contract::report::render;
use pitfall_contract::session::{RawOutput, Session};
use pitfall_contract::{Manifest, Prepared, parse_manifest};
use pitfall_engine::{Engine, Limits, Rule, RuleSet};

/// The manifest of the issue's reference incident (a Graviton G5g with a
/// T4G running vLLM 0.27.1): several bundled rules match it, so the
/// per-rule figures include rendering findings, not only clear verdicts.
const G5G: &str = "g5g-gemma4-vllm0271.json";
/// A healthy 8×H100 host: a check where (almost) nothing matches.
const H100: &str = "h100x8-llama70b-healthy.json";

/// Single evaluations per module timed by the manual timer (the summary).
const N_EVAL: usize = 2000;
/// Whole checks per fixture timed by the manual timer.
const N_CHECK: usize = 500;
/// Rounds the manual iterations are split into (floor and rules
/// interleaved): twenty evaluations of each module per round, so that the
/// slow and fast phases of a shared machine's background load fall on
/// every module alike.
const ROUNDS: usize = 100;
/// The issue's target: per-rule evaluation at most this many floors.
#[path = "support/synthetic.rs"]
mod synthetic;
use synthetic::synthetic_module;

const TARGET_RATIO: f64 = 1.5;

fn fixture(name: &str) -> Manifest {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_manifest(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A module that does nothing: `pages` pages of memory, no imports, no
/// data, `pitfall_evaluate` returns 0 (clear). With `pages == 1` this is the
/// floor; more pages show what a rule's larger memory costs on its own.
fn empty_module(pages: u32) -> Vec<u8> {
    synthetic_module(
        &format!("bench-floor-{pages}p"),
        &format!(
            r#"(memory (export "memory") {pages})
               (func (export "pitfall_evaluate") (result i32) (i32.const 0))"#
        ),
    )
}

/// The floor plus `calls` host calls: a 1-page module that asks the host
/// for `accelerators.0.compute_capability` as text `calls` times in a loop,
/// then returns clear. Its cost above the floor, divided by `calls`, is the
/// price of one host call through the engine (fuel charge, pointer checks,
/// field lookup, copy), without the guest-side work real rules do around
/// their calls (building paths, parsing values).
fn host_call_module(calls: u32) -> Vec<u8> {
    const PATH: &str = "accelerators.0.compute_capability";
    let len = PATH.len();
    synthetic_module(
        &format!("bench-floor-{calls}calls"),
        &format!(
            r#"(import "pitfall" "field_str" (func $field_str (param i32 i32 i32 i32) (result i32)))
               (memory (export "memory") 1)
               (data (i32.const 0) "{PATH}")
               (func (export "pitfall_evaluate") (result i32) (local $i i32)
                 (loop $again
                   (drop (call $field_str (i32.const 0) (i32.const {len}) (i32.const 1024) (i32.const 64)))
                   (local.set $i (i32.add (local.get $i) (i32.const 1)))
                   (br_if $again (i32.lt_u (local.get $i) (i32.const {calls}))))
                 (i32.const 0))"#
        ),
    )
}

fn outcome(e: &Evaluation) -> &'static str {
    match e {
        Evaluation::Clear => "clear",
        Evaluation::Matched(_) => "matched",
        Evaluation::Undetermined(_) => "undetermined",
        Evaluation::Failed(_) => "FAILED",
    }
}

struct Fixture {
    engine: Engine,
    floor: Rule,
    rules: Vec<Arc<Rule>>,
    wasm: Vec<&'static [u8]>,
    set: RuleSet,
    g5g: Manifest,
    h100: Manifest,
    prepared: Prepared,
}

fn setup() -> Fixture {
    let engine = Engine::new(Limits::default()).expect("engine starts");
    let floor = engine.load(&empty_module(1)).expect("the floor module loads");
    assert!(!pitfall_bundled_rules::MODULES.is_empty(), "no bundled rules were built");
    let rules: Vec<Arc<Rule>> = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| Arc::new(engine.load(m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.crate_name))))
        .collect();
    let wasm = pitfall_bundled_rules::MODULES.iter().map(|m| m.wasm).collect();
    let set = RuleSet::new(rules.clone(), "bench");
    let g5g = fixture(G5G);
    let h100 = fixture(H100);
    let prepared = Prepared::new(g5g.clone());
    Fixture { engine, floor, rules, wasm, set, g5g, h100, prepared }
}

// --- part 1: the criterion group -----------------------------------------

fn criterion_benches(c: &mut Criterion, f: &Fixture) {
    let mut group = c.benchmark_group("engine");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // The reference every rule is compared with: the same evaluate path
    // with no work in the module.
    group.bench_function("floor", |b| {
        b.iter(|| black_box(f.engine.run_sandboxed(&f.floor, black_box(&f.prepared))))
    });

    // Every bundled rule on the prepared G5g manifest: instantiate, read
    // fields through host calls, return (the target's definition); the
    // rendering of matched findings is in the summary and in the checks.
    for rule in &f.rules {
        group.bench_function(format!("rule/{}", rule.id()), |b| {
            b.iter(|| black_box(f.engine.run_sandboxed(rule, black_box(&f.prepared))))
        });
    }

    // A whole check, as the API runs it but with every candidate in the
    // sandbox (the same manifest again would otherwise be answered from the
    // memo of evaluations): normalise, enrich and flatten the manifest, pick
    // candidates from the index, evaluate them (in parallel from 8
    // candidates on), sort the answer. The clone of the manifest is setup,
    // outside the timing.
    for (name, manifest) in [("g5g", &f.g5g), ("h100", &f.h100)] {
        group.bench_function(format!("check/all-bundled/{name}"), |b| {
            b.iter_batched(
                || manifest.clone(),
                |m| black_box(f.set.check_sandboxed(&f.engine, m)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

// --- part 2: the summary ---------------------------------------------------

fn median_us(samples: &mut [Duration]) -> f64 {
    samples.sort_unstable();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

/// Times `run` once per call, `per_round` times, appending to `out`, after
/// one untimed call: the first evaluation after switching modules meets
/// cold caches and a slot last used by another module (what the "cycled"
/// figures measure), which would otherwise weigh on whichever batch comes
/// first in a round.
fn time_into<R>(out: &mut Vec<Duration>, per_round: usize, mut run: impl FnMut() -> R) {
    black_box(run());
    for _ in 0..per_round {
        let start = Instant::now();
        black_box(run());
        out.push(start.elapsed());
    }
}

/// What a module carries, read statically: the costs that show up at
/// instantiation (memory pages to map and reset, data to copy in).
#[derive(Default)]
struct ModuleStats {
    bytes: usize,
    min_pages: u64,
    data_bytes: usize,
    functions: u32,
    imports: u32,
    table_elements: u64,
}

fn module_stats(wasm: &[u8]) -> ModuleStats {
    let mut s = ModuleStats { bytes: wasm.len(), ..ModuleStats::default() };
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.expect("a loaded module parses") {
            wasmparser::Payload::MemorySection(r) => {
                for m in r {
                    s.min_pages += m.expect("memory type").initial;
                }
            }
            wasmparser::Payload::DataSection(r) => {
                for d in r {
                    s.data_bytes += d.expect("data segment").data.len();
                }
            }
            wasmparser::Payload::FunctionSection(r) => s.functions = r.count(),
            wasmparser::Payload::ImportSection(r) => s.imports = r.count(),
            wasmparser::Payload::TableSection(r) => {
                for t in r {
                    s.table_elements += t.expect("table type").ty.initial;
                }
            }
            _ => {}
        }
    }
    s
}

/// Runs a rule module once outside the engine, under a plain wasmtime
/// engine whose host functions do what the engine's do (through the same
/// `Session`) and also count themselves. This is diagnostics only: it gives
/// each rule's number of host calls and its raw output, so the render of a
/// matched finding can be timed on its own. The evaluations timed above all
/// go through `Engine::evaluate`.
mod probe {
    use pitfall_contract::session::{RawOutput, Session};
    use wasmtime::{Caller, Engine, Linker, Memory, Module, Store};

    pub(crate) struct Probe {
        pub(crate) host_calls: u32,
        pub(crate) code: i32,
        pub(crate) raw: RawOutput,
    }

    struct State {
        session: Session,
        memory: Option<Memory>,
        calls: u32,
    }

    fn bytes(mem: &[u8], ptr: i32, len: i32) -> wasmtime::Result<&[u8]> {
        let start = ptr as u32 as usize;
        start
            .checked_add(len as u32 as usize)
            .and_then(|end| mem.get(start..end))
            .ok_or_else(|| wasmtime::Error::msg("out of bounds"))
    }

    fn mem(c: &mut Caller<'_, State>) -> wasmtime::Result<Memory> {
        c.data_mut().calls += 1;
        c.data().memory.ok_or_else(|| wasmtime::Error::msg("no memory"))
    }

    fn linker(engine: &Engine) -> wasmtime::Result<Linker<State>> {
        let mut l = Linker::new(engine);
        let h = "pitfall";
        l.func_wrap(h, "field_kind", |mut c: Caller<'_, State>, p: i32, n: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            Ok(s.session.field_kind(bytes(d, p, n)?))
        })?;
        l.func_wrap(h, "field_len", |mut c: Caller<'_, State>, p: i32, n: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            Ok(s.session.field_len(bytes(d, p, n)?))
        })?;
        l.func_wrap(h, "field_num", |mut c: Caller<'_, State>, p: i32, n: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            Ok(s.session.field_num(bytes(d, p, n)?))
        })?;
        l.func_wrap(
            h,
            "field_str",
            |mut c: Caller<'_, State>, p: i32, n: i32, buf: i32, cap: i32| {
                let m = mem(&mut c)?;
                let (d, s) = m.data_and_store_mut(&mut c);
                let text = match s.session.field_str(bytes(d, p, n)?) {
                    Ok(t) => t.into_owned(),
                    Err(status) => return Ok(status),
                };
                if text.len() <= cap as u32 as usize {
                    let start = buf as u32 as usize;
                    d.get_mut(start..start + text.len())
                        .ok_or_else(|| wasmtime::Error::msg("out of bounds"))?
                        .copy_from_slice(text.as_bytes());
                }
                Ok(i32::try_from(text.len()).unwrap_or(i32::MAX))
            },
        )?;
        l.func_wrap(h, "evidence", |mut c: Caller<'_, State>, p: i32, n: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            s.session.evidence(bytes(d, p, n)?).map_err(wasmtime::Error::new)
        })?;
        l.func_wrap(h, "missing", |mut c: Caller<'_, State>, p: i32, n: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            s.session.missing(bytes(d, p, n)?).map_err(wasmtime::Error::new)
        })?;
        l.func_wrap(h, "param", |mut c: Caller<'_, State>, kp: i32, kn: i32, vp: i32, vn: i32| {
            let m = mem(&mut c)?;
            let (d, s) = m.data_and_store_mut(&mut c);
            let (k, v) = (bytes(d, kp, kn)?, bytes(d, vp, vn)?);
            s.session.param(k, v).map_err(wasmtime::Error::new)
        })?;
        l.func_wrap(h, "remedy", |mut c: Caller<'_, State>, i: i32| {
            c.data_mut().calls += 1;
            c.data_mut().session.remedy(i as u32).map_err(wasmtime::Error::new)
        })?;
        Ok(l)
    }

    pub(crate) fn run(wasm: &[u8], session: Session) -> wasmtime::Result<Probe> {
        let engine = Engine::default();
        let module = Module::new(&engine, wasm)?;
        let mut store = Store::new(&engine, State { session, memory: None, calls: 0 });
        let instance = linker(&engine)?.instantiate(&mut store, &module)?;
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| wasmtime::Error::msg("no memory"))?;
        store.data_mut().memory = Some(memory);
        let code = instance
            .get_typed_func::<(), i32>(&mut store, "pitfall_evaluate")?
            .call(&mut store, ())?;
        let raw = store.data_mut().session.take_output();
        Ok(Probe { host_calls: store.data().calls, code, raw })
    }
}

/// Host calls in the host-call floor (see [`host_call_module`]).
const SYNTHETIC_HOST_CALLS: u32 = 20;

fn mean_us(samples: &[Duration]) -> f64 {
    samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len() as f64 * 1e6
}

fn summary(f: &Fixture) {
    let limits = Limits::default();
    let per_round = N_EVAL / ROUNDS;

    // Synthetic modules that isolate one cost each, measured alongside:
    // floors with as many pages as rules that start with more than one page
    // have (none since the 1-page link arguments; kept for modules that do),
    // and the floor plus host calls.
    let stats: Vec<ModuleStats> = f.wasm.iter().map(|w| module_stats(w)).collect();
    let mut page_counts: Vec<u64> = stats.iter().map(|s| s.min_pages).filter(|&p| p > 1).collect();
    page_counts.sort_unstable();
    page_counts.dedup();
    let mut synthetic: Vec<(String, Rule)> = page_counts
        .iter()
        .map(|&p| {
            (
                format!("floor_{p}pages_us"),
                f.engine.load(&empty_module(p as u32)).expect("a paged floor loads"),
            )
        })
        .collect();
    let host_calls_key = format!("floor_{SYNTHETIC_HOST_CALLS}hostcalls_us");
    synthetic.push((
        host_calls_key.clone(),
        f.engine.load(&host_call_module(SYNTHETIC_HOST_CALLS)).expect("the host-call floor loads"),
    ));

    // 1. Each module repeated (the steady state of one rule, like the
    // floor): interleaved rounds of floor, synthetic modules, every rule.
    // Rules are timed twice: sandboxed (the target's figure) and with the
    // render of a matched finding (`Engine::evaluate`).
    let mut floor = Vec::with_capacity(N_EVAL);
    let mut synth: Vec<Vec<Duration>> = vec![Vec::with_capacity(N_EVAL); synthetic.len()];
    let mut repeated: Vec<Vec<Duration>> = vec![Vec::with_capacity(N_EVAL); f.rules.len()];
    let mut rendered: Vec<Vec<Duration>> = vec![Vec::with_capacity(N_EVAL); f.rules.len()];
    for _ in 0..ROUNDS {
        time_into(&mut floor, per_round, || {
            f.engine.run_sandboxed(&f.floor, black_box(&f.prepared))
        });
        for ((_, rule), out) in synthetic.iter().zip(&mut synth) {
            time_into(out, per_round, || f.engine.run_sandboxed(rule, black_box(&f.prepared)));
        }
        for ((rule, out), out_rendered) in f.rules.iter().zip(&mut repeated).zip(&mut rendered) {
            time_into(out, per_round, || f.engine.run_sandboxed(rule, black_box(&f.prepared)));
            time_into(out_rendered, per_round, || f.engine.evaluate(rule, black_box(&f.prepared)));
        }
    }

    // 2. Modules in turn, as in a check, which never runs the same module
    // twice in a row: all rules cycled on one thread, and as many distinct
    // empty modules cycled. Each cycle starts with one untimed pass, so
    // every module's code has been run once.
    let distinct_floors: Vec<Rule> = (0..f.rules.len())
        .map(|i| {
            let wasm = synthetic_module(
                &format!("bench-floor-copy-{i}"),
                r#"(memory (export "memory") 1) (func (export "pitfall_evaluate") (result i32) (i32.const 0))"#,
            );
            f.engine.load(&wasm).expect("a floor copy loads")
        })
        .collect();
    let passes = (N_EVAL / 4).max(10);
    let cycle = |modules: &[&Rule]| {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(passes); modules.len()];
        for pass in 0..=passes {
            for (rule, out) in modules.iter().zip(&mut samples) {
                let start = Instant::now();
                black_box(f.engine.evaluate(rule, black_box(&f.prepared)));
                if pass > 0 {
                    out.push(start.elapsed());
                }
            }
        }
        samples
    };
    let mut cycled_floors: Vec<Duration> =
        cycle(&distinct_floors.iter().collect::<Vec<_>>()).into_iter().flatten().collect();
    let mut cycled: Vec<Vec<Duration>> = cycle(&f.rules.iter().map(|r| &**r).collect::<Vec<_>>());

    let floor_mean = mean_us(&floor);
    let floor_us = median_us(&mut floor);
    println!();
    println!(
        "== summary (manual timer: median of single evaluations; {N_EVAL} per module in {ROUNDS} interleaved rounds) =="
    );
    println!("manifest={G5G}");
    println!("floor_us={floor_us:.2} mean_us={floor_mean:.2}");
    for ((key, _), samples) in synthetic.iter().zip(&mut synth) {
        let us = median_us(samples);
        let extra = if *key == host_calls_key {
            format!(" per_host_call_us={:.3}", (us - floor_us) / f64::from(SYNTHETIC_HOST_CALLS))
        } else {
            String::new()
        };
        println!("{key}={us:.2} ratio_to_floor={:.2}{extra}", us / floor_us);
    }

    let mut ratios = Vec::new();
    let mut rendered_ratios = Vec::new();
    let mut rendered_over = 0;
    let mut medians = Vec::new();
    let mut cycled_medians = Vec::new();
    let mut cycled_means = Vec::new();
    let mut over = 0;
    // (host calls, µs) of the rules that return clear: no render, so the
    // slope is what each host call costs a real rule, guest work included.
    let mut clear_points: Vec<(f64, f64)> = Vec::new();
    for (i, rule) in f.rules.iter().enumerate() {
        let us = median_us(&mut repeated[i]);
        let cycled_mean = mean_us(&cycled[i]);
        let cycled_us = median_us(&mut cycled[i]);
        medians.push(us);
        cycled_medians.push(cycled_us);
        cycled_means.push(cycled_mean);
        let ratio = us / floor_us;
        ratios.push(ratio);
        over += usize::from(ratio > TARGET_RATIO);
        let rendered_us = median_us(&mut rendered[i]);
        let rendered_ratio = rendered_us / floor_us;
        rendered_ratios.push(rendered_ratio);
        rendered_over += usize::from(rendered_ratio > TARGET_RATIO);
        let evaluation = f.engine.evaluate(rule, &f.prepared);
        let s = &stats[i];
        let (calls, render_us) = match probe::run(
            f.wasm[i],
            Session::new(f.prepared.fields.clone(), limits.max_output_bytes),
        ) {
            Ok(p) => {
                let same = matches!(
                    (p.code, &evaluation),
                    (0, Evaluation::Clear)
                        | (1, Evaluation::Matched(_))
                        | (2, Evaluation::Undetermined(_))
                );
                if !same {
                    println!(
                        "  (probe of {} returned {}, the engine {}: its figures are unreliable)",
                        rule.id(),
                        p.code,
                        outcome(&evaluation)
                    );
                }
                if p.code == 0 {
                    clear_points.push((f64::from(p.host_calls), us));
                }
                let render_us = (p.code == 1).then(|| render_time_us(rule, &p.raw, &f.prepared));
                (p.host_calls.to_string(), render_us)
            }
            Err(e) => {
                println!("  (probe of {} failed: {e:#})", rule.id());
                ("?".into(), None)
            }
        };
        println!(
            "rule {} us={us:.2} ratio_to_floor={ratio:.2} with_render_us={rendered_us:.2} with_render_ratio={rendered_ratio:.2} cycled_us={cycled_us:.2} cycled_mean_us={cycled_mean:.2} outcome={} module_bytes={} pages={} data_bytes={} table_elements={} imports={} functions={} host_calls={calls} render_us={}",
            rule.id(),
            outcome(&evaluation),
            s.bytes,
            s.min_pages,
            s.data_bytes,
            s.table_elements,
            s.imports,
            s.functions,
            render_us.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
        );
    }
    let median_of = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let (min_ratio, median_ratio, max_ratio) = median_of(&ratios);
    println!(
        "rules={} median_ratio_to_floor={median_ratio:.2} min_ratio={min_ratio:.2} max_ratio={max_ratio:.2} over_target={over} target_ratio={TARGET_RATIO} (sandboxed: instantiate, read fields, return)",
        ratios.len(),
    );
    let (min_r, median_r, max_r) = median_of(&rendered_ratios);
    println!(
        "rules={} with_render: median_ratio_to_floor={median_r:.2} min_ratio={min_r:.2} max_ratio={max_r:.2} over_target={rendered_over}",
        rendered_ratios.len(),
    );
    if clear_points.len() >= 3 {
        // Least squares: us = intercept + slope × host_calls.
        let n = clear_points.len() as f64;
        let (sx, sy) = clear_points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        let (mx, my) = (sx / n, sy / n);
        let sxy: f64 = clear_points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
        let sxx: f64 = clear_points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
        if sxx > 0.0 {
            let slope = sxy / sxx;
            println!(
                "fit_clear_rules n={} intercept_us={:.2} per_host_call_us={slope:.3} (us = intercept + slope * host_calls)",
                clear_points.len(),
                my - slope * mx
            );
        }
    }
    let cycled_floor_mean = mean_us(&cycled_floors);
    let cycled_floor_us = median_us(&mut cycled_floors);
    println!(
        "cycled_distinct_floors_us={cycled_floor_us:.2} mean_us={cycled_floor_mean:.2} ratio_to_floor={:.2} ({} distinct empty modules in turn)",
        cycled_floor_us / floor_us,
        distinct_floors.len()
    );
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    println!(
        "cycled_rules: median_of_medians_us={:.2} sum_of_medians_us={:.2} sum_of_means_us={:.2}; repeated_rules: median_of_medians_us={:.2} sum_of_medians_us={:.2}",
        median_of(&cycled_medians).1,
        sum(&cycled_medians),
        sum(&cycled_means),
        median_of(&medians).1,
        sum(&medians),
    );

    // 3. Whole checks, interleaved the same way; and the same work on one
    // thread (prepare, candidates, evaluate each in turn), to separate the
    // evaluations from the parallel dispatch.
    let check_per_round = (N_CHECK / ROUNDS).max(1);
    let fixtures =
        [(G5G, &f.g5g, "check_all_bundled_us"), (H100, &f.h100, "check_all_bundled_h100_us")];
    let mut checks: Vec<(Vec<Duration>, Vec<Duration>)> =
        vec![(Vec::new(), Vec::new()); fixtures.len()];
    for _ in 0..ROUNDS {
        for ((_, manifest, _), (parallel, sequential)) in fixtures.iter().zip(&mut checks) {
            for _ in 0..check_per_round {
                let m = (*manifest).clone();
                let start = Instant::now();
                black_box(f.set.check_sandboxed(&f.engine, m));
                parallel.push(start.elapsed());
                let m = (*manifest).clone();
                let start = Instant::now();
                let prepared = Prepared::new(m);
                for rule in f.set.candidates(&prepared) {
                    black_box(f.engine.evaluate(rule, &prepared));
                }
                sequential.push(start.elapsed());
            }
        }
    }
    for ((name, manifest, key), (parallel, sequential)) in fixtures.iter().zip(&mut checks) {
        let mean = mean_us(parallel);
        let us = median_us(parallel);
        let one_thread_us = median_us(sequential);
        let prepared = Prepared::new((*manifest).clone());
        let candidates = f.set.candidates(&prepared);
        let answer = f.set.check_sandboxed(&f.engine, (*manifest).clone());
        // Normalise, enrich, flatten: the part of a check before any rule.
        let mut prepare = Vec::with_capacity(N_CHECK);
        for _ in 0..N_CHECK {
            let m = (*manifest).clone();
            let start = Instant::now();
            black_box(Prepared::new(m));
            prepare.push(start.elapsed());
        }
        println!(
            "{key}={us:.2} mean_us={mean:.2} manifest={name} rules_total={} candidates={} findings={} undetermined={} rule_errors={} one_thread_us={one_thread_us:.2} prepare_us={:.2} ratio_to_floor={:.2}",
            f.rules.len(),
            candidates.len(),
            answer.findings.len(),
            answer.undetermined.len(),
            answer.rule_errors.len(),
            median_us(&mut prepare),
            us / floor_us,
        );
    }

    // 4. The empty modules and the rules cycled together: twice as many
    // distinct modules in turn, as a thread of a check meets in a large
    // registry (no pooling slot is kept for a module, so this measures how
    // the modules' code and metadata fare in the caches).
    let mixed: Vec<&Rule> = distinct_floors.iter().chain(f.rules.iter().map(|r| &**r)).collect();
    let mut mixed_samples = cycle(&mixed);
    let rules_part = mixed_samples.split_off(distinct_floors.len());
    let mut mixed_floors: Vec<Duration> = mixed_samples.into_iter().flatten().collect();
    let mixed_rule_medians: Vec<f64> =
        rules_part.into_iter().map(|mut v| median_us(&mut v)).collect();
    let mixed_floor_us = median_us(&mut mixed_floors);
    println!(
        "cycled_over_warm_slots: modules={} empty_modules_us={mixed_floor_us:.2} ratio_to_floor={:.2} rules_median_of_medians_us={:.2} (vs {:.2} cycled within the warm slots)",
        mixed.len(),
        mixed_floor_us / floor_us,
        median_of(&mixed_rule_medians).1,
        median_of(&cycled_medians).1,
    );
}

/// Median time of rendering one matched rule's finding from its raw output
/// (what `Engine::evaluate` does after the call returns 1).
fn render_time_us(rule: &Rule, raw: &RawOutput, prepared: &Prepared) -> f64 {
    let mut samples = Vec::with_capacity(N_EVAL);
    time_into(&mut samples, N_EVAL, || render(rule.meta(), black_box(raw), &prepared.fields));
    median_us(&mut samples)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
    let f = setup();
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c, &f);
    c.final_summary();
    // Criterion's own rule: without `--bench` (as under `cargo test
    // --benches`) or with `--test`, it only checks that each benchmark runs
    // once; the summary would take a minute for nothing there.
    let benchmarking = has("--bench") && !has("--test") && !has("--list") && !has("--profile-time");
    if benchmarking && std::env::var_os("PITFALL_BENCH_NO_SUMMARY").is_none() {
        summary(&f);
    }
}
