//! The engine at its boundaries: every bundled rule as wasm, the hostile
//! module corpus (tests/hostile/*.wat), the WAT example of sdk/ABI.md, and
//! the fixtures of ../shared/fixtures/manifests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pitfall_contract::report::EvidenceSource;
use pitfall_contract::{Manifest, parse_manifest};
use pitfall_engine::{Engine, Limits, PastDeadline, Rule, RuleSet};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("engine/ has a parent").to_path_buf()
}

fn fixture(name: &str) -> Manifest {
    let path = repo_root().join("../shared/fixtures/manifests").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_manifest(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn engine() -> Engine {
    Engine::new(Limits::default()).expect("engine starts")
}

fn bundled(engine: &Engine) -> Vec<Arc<Rule>> {
    pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| Arc::new(engine.load(m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.crate_name))))
        .collect()
}

/// Rule size target (sdk/ABI.md): small modules instantiate near the floor.
const MAX_RULE_MODULE_BYTES: usize = 64 * 1024;

#[test]
fn every_bundled_rule_loads_and_passes_its_cases_as_wasm() {
    let engine = engine();
    assert!(!pitfall_bundled_rules::MODULES.is_empty(), "no bundled rules were built");
    let mut report = String::new();
    for m in pitfall_bundled_rules::MODULES {
        let rule = engine.load(m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.crate_name));
        assert!(
            m.wasm.len() <= MAX_RULE_MODULE_BYTES,
            "{} is {} bytes, over the {MAX_RULE_MODULE_BYTES}-byte target",
            m.crate_name,
            m.wasm.len()
        );
        let results = engine.run_tests(&rule);
        report.push_str(&pitfall_contract::cases::failure_report(rule.id(), &results));
    }
    assert!(report.is_empty(), "embedded cases failed as wasm:\n{report}");
}

/// Every bundled rule shows all four outcomes in its cases (the lint asks
/// published rules for three: some rules can always decide), cites the
/// case it built from a real report, and links at least one public source.
#[test]
fn every_bundled_rule_has_all_four_outcomes_and_a_real_report() {
    use pitfall_contract::meta::Expect;
    let engine = engine();
    let mut missing = Vec::new();
    for rule in bundled(&engine) {
        for (kind, label) in [
            (Expect::Matched, "matched"),
            (Expect::Clear, "clear"),
            (Expect::Fixed, "fixed"),
            (Expect::Undetermined, "undetermined"),
        ] {
            if !rule.tests().iter().any(|c| c.expect == kind) {
                missing.push(format!("{}: no {label} case", rule.id()));
            }
        }
        if !rule.tests().iter().any(|c| c.source.is_some()) {
            missing.push(format!("{}: no case names the report it was built from", rule.id()));
        }
        if !rule.meta().references.iter().any(|r| r.url.is_some()) {
            missing.push(format!("{}: no reference a reader can open", rule.id()));
        }
        if rule.meta().component.is_none() || rule.meta().checked.is_none() {
            missing.push(format!("{}: component or checked date missing", rule.id()));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The bundle agrees with itself: a rule's fix does not walk into another
/// rule's error. For every bundled rule's `fixed` case (its matched case
/// with its remedy applied), no other bundled rule about the same
/// component reports an error on the repaired manifest; a remedy that
/// upgrades vLLM past one rule's range must not land in another's.
#[test]
fn every_rules_fix_leaves_no_other_bundled_error_on_its_component() {
    let engine = engine();
    let rules = bundled(&engine);
    let set = RuleSet::new(rules.clone(), "bundle");
    let mut conflicts = Vec::new();
    let mut fixes = 0;
    for rule in &rules {
        let component = rule.meta().component.clone();
        for case in
            rule.tests().iter().filter(|c| c.expect == pitfall_contract::meta::Expect::Fixed)
        {
            let mut evaluate = |p: &pitfall_contract::Prepared| engine.evaluate(rule, p);
            let fixed = pitfall_contract::cases::fixed_manifest(rule.tests(), case, &mut evaluate)
                .unwrap_or_else(|e| panic!("{} / {:?}: {e}", rule.id(), case.name));
            let manifest =
                pitfall_contract::manifest_from_value(fixed).expect("a repaired manifest");
            fixes += 1;
            let answer = set.check(&engine, manifest);
            for f in answer
                .findings
                .iter()
                .filter(|f| f.severity() == pitfall_contract::meta::Severity::Error)
            {
                let other = rules.iter().find(|r| r.id() == f.rule_id()).expect("a bundled rule");
                if other.id() != rule.id() && other.meta().component == component {
                    conflicts.push(format!(
                        "{} / {:?} (component {component:?}): its fix still meets {}'s error",
                        rule.id(),
                        case.name,
                        other.id()
                    ));
                }
            }
        }
    }
    assert!(fixes >= rules.len(), "every rule has a fixed case ({fixes} for {})", rules.len());
    assert!(conflicts.is_empty(), "{} conflicts:\n{}", conflicts.len(), conflicts.join("\n"));
}

/// Data a bundled module may copy into its page when built without core's
/// panic formatting (Debian route): the rule's own strings and tables (the
/// largest, a list of every published vLLM release, is about 2.4 KB).
const MAX_IMMEDIATE_ABORT_DATA_BYTES: usize = 4096;

/// Texts of core's panic messages: present in a module's data only when
/// panic formatting was linked.
const PANIC_TEXTS: [&[u8]; 4] = [
    b"panicked at",
    b"called `Option::unwrap()`",
    b"index out of bounds",
    b"called `Result::unwrap()`",
];

/// What each evaluation pays for besides the rule's code (BENCHMARKS.md,
/// "What limits it"): a table only where the rule makes indirect calls
/// (wasm-build drops an unused one), and on the Debian route, where core is
/// built with `-Cpanic=immediate-abort`, no panic-formatting data.
#[test]
fn bundled_modules_carry_no_unused_table_or_panic_data() {
    for m in pitfall_bundled_rules::MODULES {
        let (mut tables, mut elements, mut data) = (0u64, 0u32, 0usize);
        for payload in wasmparser::Parser::new(0).parse_all(m.wasm) {
            match payload.expect("a bundled module parses") {
                wasmparser::Payload::TableSection(r) => tables += u64::from(r.count()),
                wasmparser::Payload::ElementSection(r) => elements += r.count(),
                wasmparser::Payload::DataSection(r) => {
                    for segment in r {
                        let bytes = segment.expect("a data segment").data;
                        data += bytes.len();
                        if pitfall_bundled_rules::TOOLCHAIN == "debian" {
                            for text in PANIC_TEXTS {
                                assert!(
                                    !bytes.windows(text.len()).any(|w| w == text),
                                    "{} links panic formatting ({:?} in its data)",
                                    m.crate_name,
                                    String::from_utf8_lossy(text)
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        assert!(tables == 0 || elements > 0, "{} keeps a table that nothing fills", m.crate_name);
        if pitfall_bundled_rules::TOOLCHAIN == "debian" {
            assert!(
                data <= MAX_IMMEDIATE_ABORT_DATA_BYTES,
                "{} has {data} bytes of data (over {MAX_IMMEDIATE_ABORT_DATA_BYTES}): panic formatting linked?",
                m.crate_name
            );
        }
    }
}

#[test]
fn bundled_rule_ids_are_unique_and_match_their_crates() {
    let engine = engine();
    let mut seen = BTreeMap::new();
    for (m, rule) in pitfall_bundled_rules::MODULES.iter().zip(bundled(&engine)) {
        assert_eq!(m.crate_name, format!("rule-{}", rule.id()), "crate name and rule id differ");
        assert!(seen.insert(rule.id().to_owned(), ()).is_none(), "duplicate id {}", rule.id());
    }
}

#[test]
fn example_wat_rule_of_abi_md_passes_its_cases() {
    let engine = engine();
    let text = std::fs::read_to_string(repo_root().join("sdk/examples/wat-vllm-cc-floor.wat"))
        .expect("example exists");
    let wasm = wat::parse_str(&text).expect("example parses");
    let rule = engine.load(&wasm).expect("example loads");
    let results = engine.run_tests(&rule);
    let report = pitfall_contract::cases::failure_report(rule.id(), &results);
    assert!(report.is_empty(), "{report}");
    assert_eq!(results.len(), 4);
}

#[test]
fn enriched_values_are_marked_in_evidence() {
    let engine = engine();
    let set = RuleSet::new(bundled(&engine), "test");
    // A T4G named as nvidia-smi prints it, with no compute capability: the
    // hardware table supplies 7.5, and the bf16 finding says so.
    let manifest = parse_manifest(
        br#"{"manifest_version":1,"accelerators":[{"vendor":"nvidia","model":"NVIDIA T4G"}],
             "packages":[{"name":"vllm","version":"0.27.1"}],"workload":{"dtype":"bfloat16"}}"#,
    )
    .expect("valid");
    let answer = set.check(&engine, manifest);
    let finding =
        answer.findings.iter().find(|f| f.rule_id == "vllm-bf16-needs-sm80").expect("bf16 finding");
    let cc = finding
        .evidence
        .iter()
        .find(|e| e.path == "accelerators.0.compute_capability")
        .expect("cc evidence");
    assert_eq!(cc.source, EvidenceSource::Enriched);
    assert_eq!(cc.value, serde_json::json!("7.5"));
    let dtype =
        finding.evidence.iter().find(|e| e.path == "workload.dtype").expect("dtype evidence");
    assert_eq!(dtype.source, EvidenceSource::Manifest);
}

#[test]
fn a_check_fans_out_only_while_the_pool_has_threads_to_spare() {
    let engine = engine();
    let threads = rayon::current_num_threads();
    // Two pool threads per running check: with fewer, every check that
    // fans out hands work to a thread another check keeps busy.
    let spare = threads.div_ceil(2);
    let mut running = Vec::new();
    for i in 0..spare {
        let (guard, fan_out) = engine.check_started();
        assert!(fan_out, "check {i} of {threads} threads may use the pool");
        running.push(guard);
    }
    let (extra, fan_out) = engine.check_started();
    assert!(
        !fan_out,
        "with half the pool's threads' worth of checks running, a check runs on its own thread"
    );
    drop(extra);
    drop(running.pop());
    assert!(engine.check_started().1, "a finished check gives its share back");
    // Either way a check gives the same answer.
    let set = RuleSet::new(bundled(&engine), "test");
    let alone = set.check(&engine, fixture("g5g-gemma4-vllm0271.json"));
    let busy = {
        let _others: Vec<_> = (0..threads).map(|_| engine.check_started().0).collect();
        set.check(&engine, fixture("g5g-gemma4-vllm0271.json"))
    };
    let here = set
        .check_on_this_thread(&engine, fixture("g5g-gemma4-vllm0271.json"), far_off())
        .expect("within a deadline ten minutes off");
    assert_eq!((&alone.findings, &alone.undetermined), (&busy.findings, &busy.undetermined));
    assert_eq!(
        (alone.findings, alone.undetermined),
        (here.findings, here.undetermined),
        "on the calling thread, as the server checks"
    );
}

/// A deadline no test reaches.
fn far_off() -> Instant {
    Instant::now() + Duration::from_secs(600)
}

/// A check given a deadline ends at it, between evaluations: one already
/// past evaluates nothing; one that passes while a rule spins stops the
/// check before the next rule, however many are left. (The deadline is what
/// lets the server run a check on the thread that serves its request.)
#[test]
fn a_check_with_a_deadline_stops_at_it() {
    // Fuel for hours: each spinning rule runs until its own wall-clock
    // bound (250 ms), well past the check's (50 ms), which in turn leaves a
    // debug build on a loaded machine ample time to prepare the check and
    // start the first rule. (A 2 ms check deadline once passed during
    // preparation in CI, before any rule ran.)
    let limits =
        Limits { fuel: u64::MAX / 4, deadline: Duration::from_millis(250), ..Limits::default() };
    let engine = Engine::new(limits).expect("engine");
    let spin = corpus::load_module(&corpus::corpus_dir().join("loop-forever.wat"));
    let spin = Arc::new(engine.load(&spin.wasm).expect("loads"));
    let spinners = 4;
    let set = RuleSet::new(vec![spin; spinners], "spin");
    let late =
        set.check_on_this_thread(&engine, fixture("g5g-gemma4-vllm0271.json"), Instant::now());
    assert_eq!(late, Err(PastDeadline { evaluated: 0, candidates: spinners }));
    let started = Instant::now();
    let stopped = set.check_on_this_thread(
        &engine,
        fixture("g5g-gemma4-vllm0271.json"),
        started + Duration::from_millis(50),
    );
    assert_eq!(
        stopped,
        Err(PastDeadline { evaluated: 1, candidates: spinners }),
        "after {:?}",
        started.elapsed()
    );
    // With time enough, every spinner ends alone, at its own bound.
    let answer = set
        .check_on_this_thread(&engine, fixture("g5g-gemma4-vllm0271.json"), far_off())
        .expect("in time");
    assert_eq!(answer.rule_errors.len(), spinners, "{:?}", answer.rule_errors);
}

// --- the hostile corpus (tests/hostile/, see its README.md) -------------

#[path = "hostile/corpus.rs"]
mod corpus;

use corpus::{Fate, HostileModule};

/// Every category of issue 8 item 1 has a module; the corpus only grows.
const MIN_HOSTILE_MODULES: usize = 60;

/// The fixtures the contained modules are checked against.
const HOSTILE_FIXTURES: [&str; 3] =
    ["g5g-gemma4-vllm0271.json", "h100x8-llama70b-healthy.json", "a6000-llama70b-single.json"];

fn hostile_corpus() -> Vec<HostileModule> {
    corpus::load_corpus(&corpus::corpus_dir())
}

/// What publishing does with a module, as text when it refuses: load
/// (every static check and the bounded compile), then the embedded cases
/// (selector probe included). `(step, message)`.
fn publish_verdict(engine: &Engine, wasm: &[u8]) -> Result<Rule, (String, String)> {
    let rule = engine.load(wasm).map_err(|e| (e.step().to_owned(), e.to_string()))?;
    let failed: Vec<String> = engine
        .run_tests(&rule)
        .into_iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} (expected {}, got {})", c.name, c.expected, c.actual))
        .collect();
    if failed.is_empty() { Ok(rule) } else { Err(("tests".to_owned(), failed.join("; "))) }
}

#[test]
fn hostile_corpus_is_complete_and_documented() {
    let corpus = hostile_corpus();
    assert!(corpus.len() >= MIN_HOSTILE_MODULES, "the hostile corpus shrank to {}", corpus.len());
    let readme =
        std::fs::read_to_string(corpus::corpus_dir().join("README.md")).expect("README.md");
    for m in &corpus {
        assert!(
            readme.contains(&format!("| `{}` |", m.name)),
            "README.md has no row for {}",
            m.name
        );
    }
    let table = readme.split_once("## The modules").expect("a section `The modules`").1;
    let rows = table.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(rows, corpus.len(), "README.md rows and .wat files differ");
    let mut ids: Vec<&str> = corpus.iter().map(|m| m.id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), corpus.len());
}

#[test]
fn hostile_modules_refused_at_publish_name_the_step_and_reason() {
    let engine = engine();
    for m in hostile_corpus() {
        let verdict = publish_verdict(&engine, &m.wasm);
        match (&m.fate, verdict) {
            (Fate::Refused { step, reason }, Err((s, message))) => {
                assert_eq!(&s, step, "{}: refused at {s}: {message}", m.name);
                assert!(
                    message.contains(reason.as_str()),
                    "{}: {message:?} lacks {reason:?}",
                    m.name
                );
            }
            (Fate::Refused { step, .. }, Ok(_)) => {
                panic!("{}: accepted, expected refusal at {step}", m.name)
            }
            // Contained and clean modules carry no cases: publishing stops
            // at the coverage check, and nowhere earlier.
            (_, Err((s, message))) => {
                assert!(
                    s == "tests" && message.contains("coverage"),
                    "{}: refused at {s}: {message}",
                    m.name
                )
            }
            (_, Ok(_)) => panic!("{}: passed publish without cases", m.name),
        }
    }
}

#[test]
fn hostile_modules_contained_leave_every_other_answer_unchanged() {
    let engine = engine();
    let rules = bundled(&engine);
    let reference = RuleSet::new(rules.clone(), "r");
    let present: Vec<(HostileModule, Arc<Rule>)> = hostile_corpus()
        .into_iter()
        .filter(|m| !matches!(m.fate, Fate::Refused { .. }))
        .map(|m| {
            let rule = engine
                .load(&m.wasm)
                .unwrap_or_else(|e| panic!("{}: refused ({e}), expected to load", m.name));
            (m, Arc::new(rule))
        })
        .collect();
    assert!(present.len() >= 25, "only {} contained modules", present.len());
    let mut with_hostile = rules.clone();
    with_hostile.extend(present.iter().map(|(_, r)| r.clone()));
    let set = RuleSet::new(with_hostile, "r");

    let mut findings_compared = 0;
    for name in HOSTILE_FIXTURES {
        let clean = reference.check(&engine, fixture(name));
        findings_compared += clean.findings.len();
        // Twice: a module that carried state would answer differently.
        for round in 0..2 {
            let hostile = set.check(&engine, fixture(name));
            assert_eq!(
                hostile.findings, clean.findings,
                "{name}: findings changed with hostile rules present"
            );
            assert_eq!(hostile.undetermined, clean.undetermined, "{name}: undetermined changed");
            let mut expected_errors = clean.rule_errors.len();
            for (m, rule) in &present {
                let error = hostile.rule_errors.iter().find(|e| e.rule_id == rule.id());
                match (&m.fate, error) {
                    (Fate::Contained { errors }, Some(e)) => {
                        expected_errors += 1;
                        assert!(
                            errors.iter().any(|w| e.error.contains(w.as_str())),
                            "{} ({name}, round {round}): error {:?} lacks {errors:?}",
                            m.name,
                            e.error
                        );
                    }
                    (Fate::Contained { .. }, None) => {
                        panic!("{} ({name}): reported no error", m.name)
                    }
                    (_, Some(e)) => panic!("{} ({name}, round {round}): {}", m.name, e.error),
                    (_, None) => {}
                }
            }
            assert_eq!(
                hostile.rule_errors.len(),
                expected_errors,
                "{name}: other rules' errors changed"
            );
        }
    }
    // The healthy H100 has none; the G5g and the A6000 have several.
    assert!(findings_compared >= 3, "the comparison needs findings to compare");
}

/// Every evaluation from a fresh state: each stateful module stays clear
/// however often one engine runs it, also outside a check.
#[test]
fn hostile_state_never_carries_over_between_evaluations() {
    let engine = engine();
    let prepared = pitfall_contract::Prepared::new(fixture("g5g-gemma4-vllm0271.json"));
    for m in clean_modules() {
        let rule = engine.load(&m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        for i in 0..20 {
            let e = engine.evaluate(&rule, &prepared);
            assert_eq!(
                e,
                pitfall_contract::cases::Evaluation::Clear,
                "{}, evaluation {i}: state carried over",
                m.name
            );
        }
    }
}

/// The clean modules of the hostile corpus: each tries to carry state from
/// one evaluation to the next, and answers clear only from a fresh state.
fn clean_modules() -> Vec<corpus::HostileModule> {
    let clean: Vec<_> = corpus::load_corpus(&corpus::corpus_dir())
        .into_iter()
        .filter(|m| m.fate == corpus::Fate::Clean)
        .collect();
    assert!(clean.len() >= 8, "the corpus has its state-carrying modules");
    clean
}

/// The clean modules whose instance an evaluator reuses, reset between
/// evaluations (`reset.rs`); the others can change what a reset cannot put
/// back (a table, a dropped segment, memory's size) or take the name of a
/// global's export, and get a fresh instance every time.
const REUSED: &[&str] = &[
    "mutable-global-state",
    "state-in-data-segment",
    "state-in-last-byte",
    "state-in-wide-globals",
    "thousands-of-functions-that-compile",
];

/// A check's evaluations share a store (`Evaluator`), and an evaluator
/// evaluates a rule again in its earlier instance, reset: every clean
/// module stays clear through one evaluator, evaluated in turn with
/// another (so several instances are kept at once), also when the pool has
/// fewer slots than the evaluator would keep (the store then gives its
/// slots back and instantiates again), so nothing relies on a store's
/// instances being few. Each resettable module is reused (the reset is
/// what is tested), no other is.
#[test]
fn hostile_state_never_carries_over_within_one_evaluator() {
    let clean = clean_modules();
    let prepared = pitfall_contract::Prepared::new(fixture("g5g-gemma4-vllm0271.json"));
    for max_instances in [Limits::default().max_instances, 2] {
        let engine = Engine::new(Limits { max_instances, ..Limits::default() }).expect("engine");
        let rules: Vec<Rule> = clean
            .iter()
            .map(|m| engine.load(&m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.name)))
            .collect();
        const {
            assert!(
                pitfall_engine::Evaluator::INSTANCES_PER_STORE > 2,
                "the small pool must be smaller than a store"
            )
        };
        for (i, m) in clean.iter().enumerate() {
            let partner = (i + 1) % clean.len();
            let mut alone = engine.evaluator();
            let mut paired = engine.evaluator();
            for n in 0..20 {
                for (in_pair, rule) in [(false, i), (true, i), (true, partner)] {
                    let evaluator = if in_pair { &mut paired } else { &mut alone };
                    let e = evaluator.evaluate(&rules[rule], &prepared);
                    assert_eq!(
                        e,
                        pitfall_contract::cases::Evaluation::Clear,
                        "pool of {max_instances}, {} (beside {}), evaluation {n}: state carried over",
                        clean[rule].name,
                        m.name
                    );
                }
            }
            let reused = REUSED.contains(&m.name.as_str());
            assert_eq!(
                alone.instances_reused() > 0,
                reused,
                "pool of {max_instances}, {}: reused {} times",
                m.name,
                alone.instances_reused()
            );
            if reused && max_instances > 2 {
                assert_eq!(alone.instances_reused(), 19, "{}: one instance for all twenty", m.name);
            }
        }
    }
}

#[test]
fn oversized_modules_are_refused_before_parsing() {
    let engine = engine();
    // Bytes that are not even wasm: the size is checked first.
    let big = vec![0u8; Limits::default().max_module_bytes + 1];
    assert_eq!(engine.load(&big).expect_err("refused").step(), "size");
    assert_eq!(engine.load(b"\0asm garbage").expect_err("refused").step(), "validation");
}

/// A deferred rule is checked and indexed at load, compiled on its first
/// evaluation (or `link`), and answers exactly as an eagerly loaded one.
#[test]
fn deferred_rules_compile_on_first_use_and_answer_the_same() {
    let engine = engine();
    let manifest = fixture("g5g-gemma4-vllm0271.json");
    let eager = RuleSet::new(bundled(&engine), "eager");
    let deferred: Vec<Arc<Rule>> = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| {
            Arc::new(
                engine
                    .load_deferred(m.wasm.into())
                    .unwrap_or_else(|e| panic!("{}: {e}", m.crate_name)),
            )
        })
        .collect();
    assert!(deferred.iter().all(|r| !r.is_linked()));
    let lazy = RuleSet::new(deferred, "eager");
    let (a, b) = (eager.check(&engine, manifest.clone()), lazy.check(&engine, manifest.clone()));
    let json = |mut r: pitfall_contract::report::CheckResponse| {
        r.stats.elapsed_us = 0;
        serde_json::to_value(r).expect("serialises")
    };
    assert_eq!(json(a), json(b));
    let candidates = lazy.candidates(&pitfall_contract::Prepared::new(manifest));
    assert!(candidates.iter().all(|r| r.is_linked()), "the check linked its candidates");
    assert!(lazy.rules().iter().any(|r| !r.is_linked()), "and only them");
    for rule in lazy.rules() {
        engine.link(rule).expect("links");
        assert!(rule.is_linked());
    }
    // A deferred module is still checked at load.
    assert!(engine.load_deferred(b"\0asm\x01\0\0\0 not a module".to_vec().into()).is_err());
}

// --- the fuzz regression corpus (fuzz/corpus/, see fuzz/README.md) -------

#[path = "../../fuzz/targets.rs"]
mod fuzz_targets;

/// Every committed input of every fuzz target, run through the target's
/// body on stable: what the fuzzer found once (and the coverage it
/// reached) is exercised by every `cargo test`.
#[test]
fn fuzz_regressions_replay() {
    type Target = (&'static str, fn(&[u8]));
    let targets: [Target; 3] = [
        ("manifest", fuzz_targets::manifest),
        ("abi_output", fuzz_targets::abi_output),
        ("metadata", fuzz_targets::metadata),
    ];
    for (name, run) in targets {
        let dir = repo_root().join("fuzz/corpus").join(name);
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{}: no committed inputs", dir.display());
        for input in inputs {
            let bytes = std::fs::read(&input).expect("readable");
            if std::panic::catch_unwind(|| run(&bytes)).is_err() {
                panic!("fuzz target {name} fails on {}", input.display());
            }
        }
    }
}
