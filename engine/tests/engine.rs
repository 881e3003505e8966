//! The engine at its boundaries: every bundled rule as wasm, the hostile
//! module corpus (tests/hostile/*.wat), the WAT example of sdk/ABI.md, and
//! the fixtures of ../shared/fixtures/manifests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pitfall_engine::{Engine, Limits, Rule, RuleSet};
use pitfall_sdk::model::report::EvidenceSource;
use pitfall_sdk::model::{Manifest, parse_manifest};

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
        report.push_str(&pitfall_sdk::model::cases::failure_report(rule.id(), &results));
    }
    assert!(report.is_empty(), "embedded cases failed as wasm:\n{report}");
}

/// Data a bundled module may copy into its page when built without core's
/// panic formatting (Debian route): the rule's own strings and tables.
const MAX_IMMEDIATE_ABORT_DATA_BYTES: usize = 2048;

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
                    data += r.into_iter().map(|d| d.expect("a data segment").data.len()).sum::<usize>()
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
    let text = std::fs::read_to_string(repo_root().join("sdk/examples/wat-vllm-cc-floor.wat")).expect("example exists");
    let wasm = wat::parse_str(&text).expect("example parses");
    let rule = engine.load(&wasm).expect("example loads");
    let results = engine.run_tests(&rule);
    let report = pitfall_sdk::model::cases::failure_report(rule.id(), &results);
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
    let finding = answer.findings.iter().find(|f| f.rule_id == "vllm-bf16-needs-sm80").expect("bf16 finding");
    let cc = finding.evidence.iter().find(|e| e.path == "accelerators.0.compute_capability").expect("cc evidence");
    assert_eq!(cc.source, EvidenceSource::Enriched);
    assert_eq!(cc.value, serde_json::json!("7.5"));
    let dtype = finding.evidence.iter().find(|e| e.path == "workload.dtype").expect("dtype evidence");
    assert_eq!(dtype.source, EvidenceSource::Manifest);
}

// --- the hostile corpus -------------------------------------------------

#[derive(Debug)]
enum Expectation {
    /// Loads, and every evaluation fails with an error containing this.
    Error(String),
    /// Refused at load, at this step.
    Refused(String),
}

struct Hostile {
    name: String,
    wasm: Vec<u8>,
    expect: Expectation,
}

/// Minimal metadata so a hostile module gets as far as its payload.
fn hostile_meta(id: &str) -> String {
    let meta = serde_json::json!({
        "id": id, "version": "1.0.0", "title": format!("hostile module {id}"), "severity": "warning",
        "summary": "A module from the hostile corpus of the engine's tests.", "message": "hostile",
        "remedies": [{"summary": "none", "actions": [{"kind": "unset_env", "name": "X"}]}],
        "references": [{"title": "engine/tests/hostile"}], "author": "tests"
    });
    meta.to_string()
}

fn wat_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn hostile_corpus() -> Vec<Hostile> {
    let dir = repo_root().join("engine/tests/hostile");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir).expect("hostile dir").flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries.into_iter().filter(|p| p.extension().is_some_and(|e| e == "wat")) {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("utf-8 name").to_owned();
        let text = std::fs::read_to_string(&path).expect("readable");
        let expect_line = text
            .lines()
            .find_map(|l| l.strip_prefix(";; expect: "))
            .unwrap_or_else(|| panic!("{name}: no `;; expect:` line"));
        let expect = match expect_line.split_once(' ') {
            Some(("error", what)) => Expectation::Error(what.to_owned()),
            Some(("refused", step)) => Expectation::Refused(step.to_owned()),
            _ => panic!("{name}: bad expect line {expect_line:?}"),
        };
        let abi = text.lines().find_map(|l| l.strip_prefix(";; abi: ")).unwrap_or("1");
        let id = format!("hostile-{name}");
        let sections = format!(
            "(@custom \"pitfall.abi\" \"{abi}\") (@custom \"pitfall.meta\" \"{}\") (@custom \"pitfall.tests\" \"[]\")",
            wat_string(&hostile_meta(&id))
        );
        let end = text.rfind(')').expect("a module");
        let full = format!("{}{sections}{}", &text[..end], &text[end..]);
        let wasm = wat::parse_str(&full).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push(Hostile { name, wasm, expect });
    }
    out
}

#[test]
fn hostile_modules_are_refused_or_contained_and_others_unchanged() {
    let engine = engine();
    let rules = bundled(&engine);
    let reference = RuleSet::new(rules.clone(), "r");
    let corpus = hostile_corpus();
    assert!(corpus.len() >= 20, "the hostile corpus shrank to {}", corpus.len());

    let mut contained = Vec::new();
    for h in &corpus {
        match (&h.expect, engine.load(&h.wasm)) {
            (Expectation::Refused(step), Err(e)) => assert_eq!(e.step(), step, "{}: refused as {e}", h.name),
            (Expectation::Refused(step), Ok(_)) => panic!("{}: loaded, expected refusal at {step}", h.name),
            (Expectation::Error(_), Err(e)) => panic!("{}: refused ({e}), expected to load and fail alone", h.name),
            (Expectation::Error(what), Ok(rule)) => contained.push((h, what.clone(), Arc::new(rule))),
        }
    }
    let mut with_hostile = rules.clone();
    with_hostile.extend(contained.iter().map(|(_, _, r)| r.clone()));
    let set = RuleSet::new(with_hostile, "r");

    for name in ["g5g-gemma4-vllm0271.json", "h100x8-llama70b-healthy.json", "a6000-llama70b-single.json"] {
        let clean = reference.check(&engine, fixture(name));
        let hostile = set.check(&engine, fixture(name));
        assert_eq!(hostile.findings, clean.findings, "{name}: findings changed with hostile rules present");
        assert_eq!(hostile.undetermined, clean.undetermined, "{name}: undetermined changed");
        for (h, what, rule) in &contained {
            let err = hostile
                .rule_errors
                .iter()
                .find(|e| e.rule_id == rule.id())
                .unwrap_or_else(|| panic!("{name}: {} reported no error", h.name));
            assert!(
                what.split('|').any(|w| err.error.contains(w)),
                "{}: error {:?} lacks {what:?}",
                h.name,
                err.error
            );
        }
        assert_eq!(hostile.rule_errors.len(), clean.rule_errors.len() + contained.len());
    }
}

#[test]
fn state_does_not_carry_over_between_evaluations() {
    // A mutable global that counts calls: each evaluation starts afresh.
    let text = r#"(module
      (memory (export "memory") 1)
      (global $calls (mut i32) (i32.const 0))
      (func (export "pitfall_evaluate") (result i32)
        (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
        (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1)))
        ;; clear (0) on a fresh instance; anything else means state leaked
        (i32.sub (i32.add (global.get $calls) (i32.load (i32.const 0))) (i32.const 2)))
      (@custom "pitfall.abi" "1") (@custom "pitfall.meta" "META") (@custom "pitfall.tests" "[]"))"#
        .replace("META", &wat_string(&hostile_meta("hostile-stateful")));
    let engine = engine();
    let rule = Arc::new(engine.load(&wat::parse_str(&text).expect("parses")).expect("loads"));
    let set = RuleSet::new(vec![rule], "r");
    for _ in 0..3 {
        let answer = set.check(&engine, fixture("g5g-gemma4-vllm0271.json"));
        assert!(answer.findings.is_empty() && answer.rule_errors.is_empty(), "{answer:?}");
    }
}

#[test]
fn oversized_modules_are_refused_before_parsing() {
    let engine = engine();
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
        .map(|m| Arc::new(engine.load_deferred(m.wasm.into()).unwrap_or_else(|e| panic!("{}: {e}", m.crate_name))))
        .collect();
    assert!(deferred.iter().all(|r| !r.is_linked()));
    let lazy = RuleSet::new(deferred, "eager");
    let (a, b) = (eager.check(&engine, manifest.clone()), lazy.check(&engine, manifest.clone()));
    let json = |mut r: pitfall_sdk::model::report::CheckResponse| {
        r.stats.elapsed_us = 0;
        serde_json::to_value(r).expect("serialises")
    };
    assert_eq!(json(a), json(b));
    let candidates = lazy.candidates(&pitfall_sdk::model::Prepared::new(manifest));
    assert!(candidates.iter().all(|r| r.is_linked()), "the check linked its candidates");
    assert!(lazy.rules().iter().any(|r| !r.is_linked()), "and only them");
    for rule in lazy.rules() {
        engine.link(rule).expect("links");
        assert!(rule.is_linked());
    }
    // A deferred module is still checked at load.
    assert!(engine.load_deferred(b"\0asm\x01\0\0\0 not a module".to_vec().into()).is_err());
}
