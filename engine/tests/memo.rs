//! The memo of evaluations (src/memo.rs) against the sandbox: every answer
//! a check gives with the memo is the answer it gives with the memo off,
//! on the fixtures and on every bundled rule's embedded case manifests,
//! checked in an order where each manifest meets trees grown on others.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "hostile/corpus.rs"]
mod corpus;

use pitfall_contract::report::{CheckResponse, EvidenceSource};
use pitfall_contract::{Manifest, manifest_from_value, parse_manifest};
use pitfall_engine::{Engine, Limits, Rule, RuleSet, Tuning};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("engine/ has a parent").to_path_buf()
}

fn engine(memo_bytes: usize) -> Engine {
    Engine::new(Limits { memo_bytes, ..Limits::default() }).expect("engine starts")
}

/// The bundled rules and the WAT example of sdk/ABI.md (which branches:
/// what it reads next depends on what it saw), loaded into `engine`.
fn rules(engine: &Engine) -> Vec<Arc<Rule>> {
    let example = std::fs::read_to_string(repo_root().join("sdk/examples/wat-vllm-cc-floor.wat"))
        .expect("example");
    let example = wat::parse_str(&example).expect("example parses");
    pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| m.wasm.to_vec())
        .chain([example])
        .map(|wasm| Arc::new(engine.load(&wasm).expect("loads")))
        .collect()
}

/// The fixtures, every embedded case manifest, and the T4G pair whose
/// compute capability the rules read alike but whose evidence differs in
/// source (sent by the client, or filled in from the hardware table).
fn manifests(rules: &[Arc<Rule>]) -> Vec<(String, Manifest)> {
    let fixtures = repo_root().join("../shared/fixtures/manifests");
    let mut out: Vec<(String, Manifest)> =
        ["g5g-gemma4-vllm0271.json", "a6000-llama70b-single.json", "h100x8-llama70b-healthy.json"]
            .iter()
            .map(|name| {
                let bytes = std::fs::read(fixtures.join(name)).expect("fixture");
                (name.to_string(), parse_manifest(&bytes).expect("fixture parses"))
            })
            .collect();
    for rule in rules {
        for case in &rule.info.tests {
            if let Some(manifest) = &case.manifest {
                let m = manifest_from_value(manifest.clone()).expect("case manifest parses");
                out.push((format!("{} / {}", rule.id(), case.name), m));
            }
        }
    }
    for (name, gpu) in [
        (
            "T4G, capability sent",
            r#"{"vendor":"nvidia","model":"NVIDIA T4G","compute_capability":"7.5"}"#,
        ),
        ("T4G, capability enriched", r#"{"vendor":"nvidia","model":"NVIDIA T4G"}"#),
    ] {
        let text = format!(
            r#"{{"manifest_version":1,"accelerators":[{gpu}],"packages":[{{"name":"vllm","version":"0.27.1"}}],"workload":{{"dtype":"bfloat16"}}}}"#
        );
        out.push((name.to_owned(), parse_manifest(text.as_bytes()).expect("valid")));
    }
    out
}

/// A rule set of the one module `wasm`, loaded into `engine`.
fn one_rule(engine: &Engine, wasm: &[u8]) -> RuleSet {
    RuleSet::new(vec![Arc::new(engine.load(wasm).expect("loads"))], "r")
}

/// One rule, loaded into an engine with the memo and one without.
struct Beside {
    wasm: Vec<u8>,
    memo: Engine,
    sandbox: Engine,
    memo_set: RuleSet,
    sandbox_set: RuleSet,
}

fn beside_the_sandbox(wat: &str) -> Beside {
    let (memo, sandbox) = (engine(Limits::default().memo_bytes), engine(0));
    let wasm = assemble(wat);
    let (memo_set, sandbox_set) = (one_rule(&memo, &wasm), one_rule(&sandbox, &wasm));
    Beside { wasm, memo, sandbox, memo_set, sandbox_set }
}

/// An answer without its timing.
fn timeless(mut answer: CheckResponse) -> CheckResponse {
    answer.stats.elapsed_us = 0;
    answer
}

#[test]
fn memoized_checks_answer_as_the_sandbox_does() {
    let (memo, sandbox) = (engine(Limits::default().memo_bytes), engine(0));
    let (memo_rules, sandbox_rules) = (rules(&memo), rules(&sandbox));
    let memo_set = RuleSet::new(memo_rules.clone(), "r");
    let sandbox_set = RuleSet::new(sandbox_rules, "r");
    let cases = manifests(&memo_rules);
    assert!(cases.len() > 60, "only {} manifests", cases.len());
    let expected: Vec<CheckResponse> =
        cases.iter().map(|(_, m)| timeless(sandbox_set.check(&sandbox, m.clone()))).collect();
    // `check_sandboxed` on the memo's own engine answers alike and records nothing.
    for ((name, m), want) in cases.iter().zip(&expected) {
        assert_eq!(
            &timeless(memo_set.check_sandboxed(&memo, m.clone())),
            want,
            "{name} (sandboxed)"
        );
    }
    assert_eq!(memo.memo_stats(), Default::default());
    assert!(
        expected.iter().map(|a| a.findings.len()).sum::<usize>() > 20,
        "the comparison needs findings"
    );

    // Forward: each manifest replays the trees the earlier ones grew.
    for ((name, m), want) in cases.iter().zip(&expected) {
        assert_eq!(&timeless(memo_set.check(&memo, m.clone())), want, "{name} (first pass)");
    }
    let after_first = memo.memo_stats();
    assert!(after_first.hits > 0, "no manifest shared a trace with another: {after_first:?}");
    // Backward: every trace is known now, so nothing runs in the sandbox
    // (checked on the calling thread, as the server does).
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut evaluated = 0u64;
    for ((name, m), want) in cases.iter().zip(&expected).rev() {
        let answer = memo_set.check_on_this_thread(&memo, m.clone(), deadline).expect("in time");
        evaluated += u64::from(answer.stats.rules_evaluated);
        assert_eq!(&timeless(answer), want, "{name} (second pass)");
    }
    let after_second = memo.memo_stats();
    assert_eq!(after_second.misses, after_first.misses, "the second pass ran rules in the sandbox");
    assert_eq!(
        after_second.hits - after_first.hits,
        evaluated,
        "every candidate of the second pass counted as one hit"
    );
    assert_eq!(
        sandbox.memo_stats(),
        Default::default(),
        "memo_bytes 0 keeps nothing and counts nothing"
    );

    // The T4G pair: the same trace, evidence of a different source.
    let source = |name: &str| {
        let (_, m) = cases.iter().find(|(n, _)| n == name).expect("case");
        let answer = memo_set.check(&memo, m.clone());
        let finding = answer
            .findings
            .into_iter()
            .find(|f| f.rule_id == "vllm-bf16-needs-sm80")
            .expect("bf16 finding");
        finding
            .evidence
            .iter()
            .find(|e| e.path == "accelerators.0.compute_capability")
            .expect("cc")
            .source
    };
    assert_eq!(source("T4G, capability sent"), EvidenceSource::Manifest);
    assert_eq!(source("T4G, capability enriched"), EvidenceSource::Enriched);
}

/// A rule that asked only whether a field is there (`field_kind`: the
/// SDK's `package()` and `has()`) is answered from the memo whatever else
/// the field holds: once every manifest was checked, the same manifests
/// with another member in each package entry, in the workload and in the
/// host are answered as the sandbox answers them, nearly all from the
/// memo (none of 3,999 candidates ran again; with each kind asked
/// observed whole, 367 did).
/// Each speed-up of `Tuning` off, one at a time (and instance reuse, a
/// limit, and the contract's specifier cache): every manifest checked twice (the memo learns, then replays)
/// answers as the default engine's sandbox does.
#[test]
fn an_engine_with_any_speed_up_off_answers_alike() {
    let sandbox = engine(0);
    let sandbox_set = RuleSet::new(rules(&sandbox), "r");
    let cases = manifests(sandbox_set.rules());
    let expected: Vec<CheckResponse> =
        cases.iter().map(|(_, m)| timeless(sandbox_set.check(&sandbox, m.clone()))).collect();
    let on = Tuning::default();
    let offs = [
        ("memo_fingerprints", Tuning { memo_fingerprints: false, ..on }),
        ("memo_compaction", Tuning { memo_compaction: false, ..on }),
        ("gates", Tuning { gates: false, ..on }),
        ("interval_tree", Tuning { interval_tree: false, ..on }),
        ("packed_tree", Tuning { packed_tree: false, ..on }),
    ];
    let no_reuse = Limits { reuse_instances: false, ..Limits::default() };
    for (off, limits, tuning) in offs
        .into_iter()
        .map(|(off, t)| (off, Limits::default(), t))
        .chain([("reuse_instances", no_reuse, on)])
    {
        let engine = Engine::tuned(limits, tuning).expect("engine starts");
        assert_eq!(engine.tuning(), tuning);
        let set = RuleSet::tuned(rules(&engine), "r", tuning);
        for pass in ["first", "second"] {
            for ((name, m), want) in cases.iter().zip(&expected) {
                let answer = timeless(set.check(&engine, m.clone()));
                assert_eq!(&answer, want, "{name}, {off} off ({pass} pass)");
            }
        }
        assert!(engine.memo_stats().hits > 0, "{off} off: the memo answered nothing");
    }
    // The contract's specifier cache, process-wide: off, every question
    // parses its specifier (other tests running meanwhile answer alike).
    pitfall_contract::session::set_specifier_cache(false);
    let engine = engine(Limits::default().memo_bytes);
    let set = RuleSet::new(rules(&engine), "r");
    let answers: Vec<CheckResponse> =
        cases.iter().map(|(_, m)| timeless(set.check(&engine, m.clone()))).collect();
    pitfall_contract::session::set_specifier_cache(true);
    assert_eq!(answers, expected, "specifier cache off");
}

#[test]
fn a_field_asked_only_its_kind_is_replayed_whatever_else_it_holds() {
    let (memo, sandbox) = (engine(Limits::default().memo_bytes), engine(0));
    let (memo_rules, sandbox_rules) = (rules(&memo), rules(&sandbox));
    let (memo_set, sandbox_set) =
        (RuleSet::new(memo_rules.clone(), "r"), RuleSet::new(sandbox_rules, "r"));
    let cases = manifests(&memo_rules);
    for (_, m) in &cases {
        memo_set.check(&memo, m.clone());
    }
    let with_other_members = |m: &Manifest| {
        let mut value = serde_json::to_value(m).expect("serialises");
        for package in
            value.get_mut("packages").and_then(|p| p.as_array_mut()).into_iter().flatten()
        {
            package["installer"] = serde_json::json!("pip");
        }
        for object in ["workload", "host"] {
            if let Some(fields) = value.get_mut(object).and_then(|o| o.as_object_mut()) {
                fields.insert("rack".into(), serde_json::json!("r7"));
            }
        }
        manifest_from_value(value).expect("still a manifest")
    };
    let before = memo.memo_stats();
    let mut candidates = 0u64;
    for (name, m) in &cases {
        let variant = with_other_members(m);
        let want = timeless(sandbox_set.check(&sandbox, variant.clone()));
        let got = timeless(memo_set.check(&memo, variant));
        candidates += u64::from(got.stats.rules_evaluated);
        assert_eq!(got, want, "{name} with other members");
    }
    let ran = memo.memo_stats().misses - before.misses;
    assert!(candidates > 300, "{candidates} candidates");
    assert!(ran * 20 <= candidates, "{ran} of {candidates} candidates ran again in the sandbox");
}

#[test]
fn failures_are_never_replayed() {
    let engine = engine(Limits::default().memo_bytes);
    let wasm = corpus::load_module(&corpus::corpus_dir().join("trap-unreachable.wat")).wasm;
    let set = one_rule(&engine, &wasm);
    let (_, manifest) = manifests(&[]).into_iter().next().expect("a fixture");
    for _ in 0..3 {
        let answer = set.check(&engine, manifest.clone());
        assert_eq!(answer.rule_errors.len(), 1, "{answer:?}");
    }
    let stats = engine.memo_stats();
    assert_eq!((stats.hits, stats.misses, stats.bytes), (0, 3, 0));
}

/// A rule that reads `env.MACHINE` (a different value on every machine)
/// and concludes clear: its every evaluation is a new trace. In the hostile
/// corpus's format, whose loader adds valid metadata.
const READS_THE_MACHINE: &str = r#";; expect: clean
;; threat: none; a rule whose every evaluation is a new trace
(module
  (import "pitfall" "field_str" (func $field_str (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "env.MACHINE")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $field_str (i32.const 16) (i32.const 11) (i32.const 64) (i32.const 64)))
    (i32.const 0)))
"#;

fn reads_the_machine() -> Vec<u8> {
    assemble(READS_THE_MACHINE)
}

/// A module in the hostile corpus's format, assembled by its loader.
fn assemble(text: &str) -> Vec<u8> {
    // A file of its own per call: tests run side by side in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("pitfall-memo-module-{}-{call}.wat", std::process::id()));
    std::fs::write(&path, text).expect("writes");
    let wasm = corpus::load_module(&path).wasm;
    let _ = std::fs::remove_file(&path);
    wasm
}

fn machine(i: usize) -> Manifest {
    parse_manifest(
        format!(r#"{{"manifest_version":1,"env":{{"MACHINE":"machine-{i:04}"}}}}"#).as_bytes(),
    )
    .expect("valid")
}

#[test]
fn a_rules_tree_is_regrown_when_full_and_the_budget_holds_and_is_given_back() {
    let wasm = reads_the_machine();
    let engine = engine(Limits::default().memo_bytes);
    let set = one_rule(&engine, &wasm);
    let mut peak = 0;
    for i in 0..pitfall_engine::memo::MAX_LEAVES_PER_RULE {
        set.check(&engine, machine(i));
        peak = engine.memo_stats().bytes;
    }
    assert!(peak > 0);
    set.check(&engine, machine(10_000));
    let regrown = engine.memo_stats().bytes;
    assert!(regrown < peak / 8, "a full tree was kept: {regrown} bytes after {peak}");
    set.check(&engine, machine(10_000));
    assert_eq!(engine.memo_stats().hits, 1, "the regrown tree answers");
    drop(set);
    assert_eq!(engine.memo_stats().bytes, 0, "a dropped rule gives its bytes back");

    // A budget of a few traces: it is never exceeded.
    let small = self::engine(2048);
    let set = one_rule(&small, &wasm);
    for i in 0..40 {
        set.check(&small, machine(i));
        assert!(small.memo_stats().bytes <= 2048, "{:?}", small.memo_stats());
    }
    assert!(small.memo_stats().bytes > 0);
}

/// A tree that met hundreds of values at one node is compacted as it grows
/// (each node's branches into one block): every trace recorded before and
/// after a compaction still answers, and the budget counts what it holds.
#[test]
fn a_compacted_tree_answers_every_trace_it_recorded() {
    let wasm = reads_the_machine();
    let engine = engine(Limits::default().memo_bytes);
    let set = one_rule(&engine, &wasm);
    let machines = 300;
    for i in 0..machines {
        set.check(&engine, machine(i));
    }
    let recorded = engine.memo_stats();
    assert_eq!((recorded.hits, recorded.misses), (0, machines as u64));
    for i in (0..machines).rev() {
        set.check(&engine, machine(i));
    }
    let replayed = engine.memo_stats();
    assert_eq!(replayed.hits, machines as u64, "every machine answered from the memo");
    assert_eq!(replayed.bytes, recorded.bytes, "replays hold nothing more");
    drop(set);
    assert_eq!(engine.memo_stats().bytes, 0, "compaction kept the budget's count exact");
}

/// A rule that asks the host whether vLLM's version is in a range
/// (`version_in`) and quotes it through a parameter bound to the field
/// (`param_field`): it reads the answer, never the version.
const ASKS_THE_VERSION: &str = r#";; expect: clean
;; threat: none; a rule that asks about a version and quotes it without reading it
;; meta-patch: {"message": "vllm {v} is affected"}
(module
  (import "pitfall" "version_in" (func $version_in (param i32 i32 i32 i32) (result i32)))
  (import "pitfall" "param_field" (func $param_field (param i32 i32 i32 i32)))
  (import "pitfall" "evidence" (func $evidence (param i32 i32)))
  (import "pitfall" "missing" (func $missing (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "packages.vllm.version")
  (data (i32.const 32) ">=0.20,<0.27.2rc0")
  (data (i32.const 64) "v")
  (func (export "pitfall_evaluate") (result i32) (local $a i32)
    (local.set $a (call $version_in (i32.const 0) (i32.const 21) (i32.const 32) (i32.const 17)))
    (if (i32.eq (local.get $a) (i32.const -1))
      (then (call $missing (i32.const 0) (i32.const 21)) (return (i32.const 2))))
    (if (i32.ne (local.get $a) (i32.const 1)) (then (return (i32.const 0))))
    (call $evidence (i32.const 0) (i32.const 21))
    (call $param_field (i32.const 64) (i32.const 1) (i32.const 0) (i32.const 21))
    (i32.const 1)))
"#;

/// The same question, after looking up a raw path spelled as the memo
/// records that question (`session::predicate_read`): a rule trying to
/// make its trace say something other than what it was asked.
const SPELLS_THE_QUESTION: &str = r#";; expect: clean
;; threat: a raw read spelled like the memo's record of a version question
(module
  (import "pitfall" "field_kind" (func $field_kind (param i32 i32) (result i32)))
  (import "pitfall" "version_in" (func $version_in (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "packages.vllm.version")
  (data (i32.const 32) ">=0.20,<0.27.2rc0")
  (data (i32.const 64) "\ff\00\11\00\00\00>=0.20,<0.27.2rc0packages.vllm.version")
  (func (export "pitfall_evaluate") (result i32)
    (drop (call $field_kind (i32.const 64) (i32.const 44)))
    (i32.eq (call $version_in (i32.const 0) (i32.const 21) (i32.const 32) (i32.const 17)) (i32.const 1))))
"#;

/// Machines that differ only in vLLM: releases in and out of the range,
/// its pre-release, a version that is not PEP 440, none, no vLLM.
fn vllm_machines() -> Vec<(String, Manifest)> {
    let mut versions: Vec<Option<String>> = (15..28)
        .flat_map(|minor| (0..3).map(move |patch| Some(format!("0.{minor}.{patch}"))))
        .collect();
    versions.extend(
        ["0.27.2rc0", "0.27.2", "0.28.0", "1.0.0", "not-a-version"].map(|v| Some(v.to_owned())),
    );
    versions.push(None);
    let mut out: Vec<(String, Manifest)> = versions
        .into_iter()
        .map(|v| {
            let package = match &v {
                Some(v) => format!(r#"{{"name":"vllm","version":"{v}"}}"#),
                None => r#"{"name":"vllm"}"#.to_owned(),
            };
            let text = format!(r#"{{"manifest_version":1,"packages":[{package}]}}"#);
            (
                v.unwrap_or_else(|| "no version".into()),
                parse_manifest(text.as_bytes()).expect("valid"),
            )
        })
        .collect();
    out.push(("no vllm".into(), parse_manifest(br#"{"manifest_version":1}"#).expect("valid")));
    out
}

/// A rule that asks `version_in` runs once per answer, not once per
/// version, and its replayed findings quote each machine's own version:
/// every answer equals the sandbox's.
#[test]
fn a_version_question_is_replayed_for_every_version_with_the_same_answer() {
    let Beside { memo, sandbox, memo_set, sandbox_set, .. } = beside_the_sandbox(ASKS_THE_VERSION);
    let machines = vllm_machines();
    let mut matched = 0;
    for (name, m) in &machines {
        let want = timeless(sandbox_set.check(&sandbox, m.clone()));
        let got = timeless(memo_set.check(&memo, m.clone()));
        assert_eq!(got, want, "{name}");
        if let Some(finding) = got.findings.first() {
            assert_eq!(finding.message, format!("vllm {name} is affected"));
            matched += 1;
        }
    }
    assert_eq!(matched, 8 * 3 - 1, "0.20.0 to 0.27.1 (0.27.2rc0 is not below itself)");
    let stats = memo.memo_stats();
    // One trace for each answer: in, out, missing (no version, or no
    // vLLM at all), not a version.
    assert_eq!(stats.misses, 4, "{stats:?}");
    assert_eq!(stats.hits, machines.len() as u64 - 4, "{stats:?}");
}

/// The bundled rule that asks whether the model id names Gemma 4
/// (`text_contains`, through the SDK's `Workload::model_mentions`) runs
/// once per answer, not once per model id: twenty machines serving
/// twenty other models share one trace, and each spelling of Gemma 4 has
/// its own; a replayed finding shows its own machine's model. Every answer
/// equals the sandbox's.
#[test]
fn a_text_question_is_replayed_for_every_model_id_with_the_same_answers() {
    let module = pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == "rule-gemma4-transformers-5-15-breaks-vllm")
        .expect("bundled");
    let (memo, sandbox) = (engine(Limits::default().memo_bytes), engine(0));
    let (memo_set, sandbox_set) = (one_rule(&memo, module.wasm), one_rule(&sandbox, module.wasm));
    let machine = |model: Option<&str>| {
        let workload = model.map_or(String::new(), |m| format!(r#","workload":{{"model":"{m}"}}"#));
        let text = format!(
            r#"{{"manifest_version":1,"packages":[{{"name":"vllm","version":"0.27.1"}},{{"name":"transformers","version":"5.15.0"}}]{workload}}}"#
        );
        parse_manifest(text.as_bytes()).expect("valid")
    };
    let mut models: Vec<Option<String>> = (0..20).map(|i| Some(format!("org/model-{i}"))).collect();
    for gemma in [
        "google/gemma-4-31b-it",
        "google/Gemma-4-E2B-it",
        "x/gemma4-e4b",
        "y/GEMMA4-mini",
        "z/gemma_4-e2b",
        "w/Gemma_4",
    ] {
        models.push(Some(gemma.to_owned()));
    }
    models.push(None);
    let mut matched = 0;
    for model in &models {
        let m = machine(model.as_deref());
        let want = timeless(sandbox_set.check(&sandbox, m.clone()));
        let got = timeless(memo_set.check(&memo, m));
        assert_eq!(got, want, "{model:?}");
        if let Some(finding) = got.findings.first() {
            let shown = finding
                .evidence
                .iter()
                .find(|e| e.path == "workload.model")
                .map(|e| e.value.clone());
            assert_eq!(
                shown.as_ref().and_then(|v| v.as_str()),
                model.as_deref(),
                "the finding shows its own model"
            );
            matched += 1;
        }
    }
    assert_eq!(matched, 6, "every spelling of Gemma 4, and nothing else");
    let stats = memo.memo_stats();
    // One trace per answer path: another model, no model, and each of
    // the three spellings (each asked only once the ones before said no).
    assert_eq!(stats.misses, 5, "{stats:?}");
    assert_eq!(stats.hits, models.len() as u64 - 5, "{stats:?}");
}

/// A rule whose raw read is spelled like a recorded question is not
/// memoised at all: its trace could not tell the two apart.
#[test]
fn a_raw_read_spelled_like_a_question_is_never_replayed() {
    let Beside { memo, sandbox, memo_set, sandbox_set, .. } =
        beside_the_sandbox(SPELLS_THE_QUESTION);
    let machines = vllm_machines();
    for _ in 0..2 {
        for (name, m) in &machines {
            let want = timeless(sandbox_set.check(&sandbox, m.clone()));
            assert_eq!(timeless(memo_set.check(&memo, m.clone())), want, "{name}");
        }
    }
    let stats = memo.memo_stats();
    assert_eq!((stats.hits, stats.bytes), (0, 0), "{stats:?}");
    assert_eq!(stats.misses, 2 * machines.len() as u64);
}

/// A finding's leaf serves every version in its range, and keeps the texts
/// it rendered on versions other than its first (`Renderings`): a version
/// seen again is answered with the text rendered for it before (the same
/// shared text, not a fresh rendering), every answer is the sandbox's,
/// and the budget gets every kept byte back when the rule goes.
#[test]
fn a_leaf_keeps_the_findings_it_rendered_on_other_versions() {
    let Beside { wasm, memo, sandbox, memo_set, sandbox_set } =
        beside_the_sandbox(ASKS_THE_VERSION);
    let affected: Vec<(String, Manifest)> = vllm_machines()
        .into_iter()
        .filter(|(v, _)| v.starts_with("0.2") && !v.starts_with("0.27.2"))
        .collect();
    let (ring, more) = (pitfall_engine::memo::RENDERINGS_PER_LEAF, 5);
    assert!(affected.len() > ring + more, "more affected versions than a leaf keeps");
    let text = |m: &Manifest| {
        let answer = memo_set.check(&memo, m.clone());
        assert_eq!(timeless(answer.clone()), timeless(sandbox_set.check(&sandbox, m.clone())));
        Arc::clone(answer.findings.first().expect("affected").json())
    };
    // The first version is the leaf's own text; the next `ring` are kept.
    let first = text(&affected[0].1);
    let kept: Vec<Arc<str>> = affected[1..=ring].iter().map(|(_, m)| text(m)).collect();
    let held = memo.memo_stats().bytes;
    for ((name, m), before) in affected[1..=ring].iter().zip(&kept).rev() {
        assert!(Arc::ptr_eq(&text(m), before), "{name} was rendered again");
    }
    assert!(Arc::ptr_eq(&text(&affected[0].1), &first));
    assert_eq!(memo.memo_stats().bytes, held, "a replay of a kept text keeps nothing more");
    // Past the ring the oldest go: the newest stay, and it holds no more.
    for (_, m) in &affected[ring + 1..ring + 1 + more] {
        text(m);
    }
    let (name, m) = &affected[ring + more];
    let again = text(m);
    assert!(Arc::ptr_eq(&again, &text(m)), "{name}, the newest, was rendered again");
    assert!(!Arc::ptr_eq(&text(&affected[1].1), &kept[0]), "the oldest was not replaced");
    // Every version here has as many characters, so each replaced text
    // gives back what its successor takes.
    assert_eq!(memo.memo_stats().bytes, held, "the ring grew");
    let stats = memo.memo_stats();
    assert_eq!(stats.misses, 1, "one evaluation in the sandbox: {stats:?}");
    drop(memo_set);
    assert_eq!(memo.memo_stats().bytes, 0, "kept texts give their bytes back");

    // A budget with no room for texts beside the tree: still the
    // sandbox's answers, rendered afresh, and the budget holds.
    let small = engine(1024);
    let small_set = one_rule(&small, &wasm);
    for _ in 0..2 {
        for (name, m) in &affected {
            let want = timeless(sandbox_set.check(&sandbox, m.clone()));
            assert_eq!(timeless(small_set.check(&small, m.clone())), want, "{name}");
            assert!(small.memo_stats().bytes <= 1024, "{:?}", small.memo_stats());
        }
    }
}
