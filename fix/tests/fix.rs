//! `pitfall-fix` against the bundled rules as wasm: every rule's matched
//! cases, the shared fixtures, and a conflict between two real rules. Each
//! plan is checked again here, independently of the search's own checks.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use pitfall_contract::actions::Action;
use pitfall_contract::meta::{Expect, Severity};
use pitfall_contract::report::CheckResponse;
use pitfall_contract::{Manifest, manifest_from_value, parse_manifest};
use pitfall_engine::{Engine, Limits, RuleSet};
use pitfall_fix::{FixResponse, Status, Tier, fix};

fn rules() -> &'static (Engine, RuleSet) {
    static RULES: OnceLock<(Engine, RuleSet)> = OnceLock::new();
    RULES.get_or_init(|| {
        // Compiled code cached between runs, and modules loaded one after
        // another: on a shared machine, 108 compilations at once each miss
        // the default compile bound.
        let limits =
            Limits { compile_timeout: std::time::Duration::from_secs(120), ..Limits::default() };
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fix-compiled");
        let engine = Engine::with_cache_dir(limits, cache).expect("engine starts");
        let rules = pitfall_bundled_rules::MODULES
            .iter()
            .map(|m| Arc::new(engine.load(m.wasm).expect("bundled rule loads")))
            .collect();
        let set = RuleSet::new(rules, pitfall_bundled_rules::REVISION);
        (engine, set)
    })
}

fn check(manifest: &Manifest) -> CheckResponse {
    let (engine, set) = rules();
    set.check(engine, manifest.clone())
}

fn fixture(name: &str) -> Manifest {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests").join(name);
    parse_manifest(&std::fs::read(&path).expect("fixture reads")).expect("fixture parses")
}

fn errors(answer: &CheckResponse) -> Vec<String> {
    answer
        .findings
        .iter()
        .filter(|f| f.severity() == Severity::Error)
        .map(|f| f.rule_id().to_owned())
        .collect()
}

fn has_hardware_remedy(rule_id: &str) -> bool {
    let (_, set) = rules();
    set.rules().iter().filter(|r| r.id() == rule_id).any(|r| {
        r.meta().remedies.iter().flat_map(|m| &m.actions).any(|a| {
            matches!(a, Action::ChangeAccelerator { .. })
                || matches!(a, Action::SetHost { field, .. } if field == "arch" || field == "cpu_flags")
        })
    })
}

/// Matched cases `fix` does not answer with a plan, a conflict or a
/// hardware-only fix that the rule's metadata explains, and why. The test
/// fails when one of them starts passing, so the list stays true.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "container-toolkit-daemon-reload-loses-gpus",
        "docker run --gpus all with the systemd cgroup driver (driver 510.68.02, toolkit 1.10.0)",
        "its remedies upgrade the toolkit to 1.18.0, but the fix also needs the GPUs requested through CDI (or the cgroupfs driver), which no action expresses: applied alone, the rule still matches",
    ),
    (
        "nvml-driver-library-mismatch",
        "libraries older than the loaded module (libraries 570.124.04, module 570.124.06)",
        "its remedies are `upgrade_driver` to either side's version: the kernel module is already the newer one and an upgrade never lowers it, and no action moves `drivers.nvidia_userspace` (the fix is a reboot or reinstall)",
    ),
];

/// What `fix` made of one matched case; `None` when it holds.
fn judge(
    rule_id: &str,
    severity: Severity,
    manifest: &Manifest,
    answer: &FixResponse,
) -> Option<String> {
    match answer.status {
        Status::Clear | Status::Plan => {
            let plan = answer.plan.as_ref()?;
            let after = check(&plan.patched_manifest);
            let left = errors(&after);
            if !left.is_empty() {
                return Some(format!("the patched manifest still has errors {left:?}"));
            }
            let still = after.findings.iter().any(|f| f.rule_id() == rule_id);
            // A warning or info rule may be left when none of its remedies
            // clears it without an error (the plan says so in `leaves`).
            if still && severity == Severity::Error {
                return Some("the plan leaves the rule matched".into());
            }
            if still {
                let listed = plan
                    .leaves
                    .warnings
                    .iter()
                    .chain(&plan.leaves.info)
                    .any(|r| r.rule_id == rule_id);
                return (!listed).then(|| "left matched but not listed in `leaves`".into());
            }
            let _ = manifest;
            None
        }
        Status::Conflict => {
            let named =
                answer.conflicts.iter().any(|c| c.rule_id == rule_id || c.brings == rule_id)
                    || answer
                        .conflicts
                        .iter()
                        .any(|c| answer.errors_before.iter().any(|e| e.rule_id == c.rule_id));
            (!named)
                .then(|| format!("a conflict that does not name the rule: {:?}", answer.conflicts))
        }
        Status::HardwareOnly => {
            let explained = answer.errors_before.iter().any(|e| has_hardware_remedy(&e.rule_id));
            (!explained)
                .then(|| "hardware only, but no rule in play offers a hardware remedy".into())
        }
        Status::NoPlan => Some(format!(
            "no plan (unavailable: {:?}; bound hit: {})",
            answer.unavailable, answer.bound_hit
        )),
    }
}

#[test]
fn every_matched_case_gets_a_plan_or_an_explained_answer() {
    let (engine, set) = rules();
    let mut failures = Vec::new();
    let mut tally = std::collections::BTreeMap::<&str, usize>::new();
    for rule in set.rules() {
        for case in rule.tests().iter().filter(|c| c.expect == Expect::Matched) {
            let Some(value) = case.manifest.clone() else { continue };
            let manifest = manifest_from_value(value).expect("case manifest parses");
            let answer = fix(engine, set, &manifest);
            *tally.entry(status_name(answer.status)).or_default() += 1;
            if let Some(why) = judge(rule.id(), rule.meta().severity, &manifest, &answer) {
                failures.push((rule.id().to_owned(), case.name.clone(), why));
            }
        }
    }
    eprintln!("matched cases by answer: {tally:?}");
    for (rule, case, why) in &failures {
        eprintln!("{rule} / {case}: {why}");
    }
    let unexpected: Vec<_> = failures
        .iter()
        .filter(|(r, c, _)| !EXCEPTIONS.iter().any(|(er, ec, _)| er == r && ec == c))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} matched cases without an answer: {unexpected:#?}",
        unexpected.len()
    );
    for (rule, case, _) in EXCEPTIONS {
        assert!(
            failures.iter().any(|(r, c, _)| r == rule && c == case),
            "{rule} / {case} is listed as an exception but now passes: take it off the list"
        );
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Clear => "clear",
        Status::Plan => "plan",
        Status::Conflict => "conflict",
        Status::HardwareOnly => "hardware_only",
        Status::NoPlan => "no_plan",
    }
}

#[test]
fn g5g_plan_agrees_with_the_field_reports() {
    let (engine, set) = rules();
    let manifest = fixture("g5g-gemma4-vllm0271.json");
    let answer = fix(engine, set, &manifest);
    eprintln!("{}", serde_json::to_string_pretty(&answer).expect("serialises"));
    assert_eq!(answer.status, Status::Plan, "{:?}", answer.conflicts);
    let plan = answer.plan.as_ref().expect("a plan");
    assert!(errors(&check(&plan.patched_manifest)).is_empty(), "the patched manifest checks clear");
    assert!(plan.steps.iter().all(|s| s.tier != Tier::Hardware), "no hardware in the main plan");
    let patched = &plan.patched_manifest;
    let workload = patched.workload.as_ref().expect("workload");
    // A dtype the model accepts on the T4G (no bfloat16 below SM 8.0).
    let dtype = workload.dtype.as_deref().expect("a dtype");
    assert!(["half", "float16", "float32"].contains(&dtype), "dtype {dtype}");
    // Triton attention: set as a flag or in the environment, or left to
    // vLLM, which from 0.19.0 selects Triton itself for Gemma 4's mixed
    // head sizes (vllm-heterogeneous-head-dim's summary): then no rule of
    // the corpus asks for the flag, and the plan does not add it.
    let triton = workload.attention_backend.as_deref() == Some("TRITON_ATTN")
        || patched.env.get("VLLM_ATTENTION_BACKEND").map(String::as_str) == Some("TRITON_ATTN");
    let vllm_selects_triton = patched.packages.iter().any(|p| {
        p.name == "vllm"
            && p.version.as_deref().and_then(|v| pitfall_version::Version::parse(v).ok())
                >= pitfall_version::Version::parse("0.19.0").ok()
    });
    assert!(triton || vllm_selects_triton, "Triton attention");
    // vLLM built from source for sm_75 on aarch64.
    let build = patched.build.as_ref().expect("a build");
    assert!(build.from_source.iter().any(|p| p == "vllm"));
    assert_eq!(build.torch_cuda_arch_list, vec!["7.5".to_owned()]);
    // --ipc=host.
    assert_eq!(patched.container.as_ref().and_then(|c| c.ipc.as_deref()), Some("host"));
    // vLLM at or past 0.27.2rc0 (the table's nearest release), or
    // transformers pinned below 5.15.
    let version = |name: &str| {
        patched.packages.iter().find(|p| p.name == name).and_then(|p| p.version.clone())
    };
    let vllm = pitfall_version::Version::parse(&version("vllm").expect("vllm")).expect("parses");
    let floor = pitfall_version::Version::parse("0.27.2rc0").expect("parses");
    let transformers_pinned = version("transformers").is_some();
    assert!(vllm >= floor || transformers_pinned, "vLLM {vllm} and no transformers pin");
    if vllm >= floor {
        assert!(
            pitfall_facts::releases::release("vllm", vllm.as_str()).is_some() || vllm == floor,
            "vLLM {vllm} is a real version"
        );
    }
    let serve = plan.artefacts.vllm_serve.as_deref().expect("a vllm serve line");
    assert!(serve.contains("vllm serve google/gemma-4-E2B-it"), "{serve}");
    assert!(serve.contains(&format!("--dtype {dtype}")), "{serve}");
    eprintln!("{serve}");
}

#[test]
fn a6000_llama70b_gets_one_gpu_checkpoint_or_the_hardware_answer() {
    let (engine, set) = rules();
    let manifest = fixture("a6000-llama70b-single.json");
    let answer = fix(engine, set, &manifest);
    eprintln!("{}", serde_json::to_string_pretty(&answer).expect("serialises"));
    let model = manifest.workload.as_ref().and_then(|w| w.model.as_deref()).expect("a model");
    let known = pitfall_facts::models::lookup(model).expect("the table knows the model");
    let checkpoint_exists = pitfall_facts::models::table().iter().any(|m| {
        m.family == known.family && m.parameters_b == known.parameters_b && m.quantization.is_some()
    });
    if checkpoint_exists {
        let plan = answer.plan.as_ref().expect("a plan within one GPU");
        assert!(plan.steps.iter().all(|s| s.tier != Tier::Hardware));
        let new_model = plan.patched_manifest.workload.as_ref().and_then(|w| w.model.as_deref());
        let entry = new_model.and_then(pitfall_facts::models::lookup).expect("a table model");
        assert!(entry.quantization.is_some());
    } else {
        assert!(
            matches!(answer.status, Status::HardwareOnly | Status::Conflict),
            "{:?}",
            answer.status
        );
        assert!(answer.plan.is_none());
        let other = answer.on_other_hardware.as_ref().expect("the hardware answer");
        assert!(other.steps.iter().any(|s| s.tier == Tier::Hardware));
        assert!(errors(&check(&other.patched_manifest)).is_empty());
        assert!(
            answer.unavailable.iter().any(|u| u.reason.contains("no quantized checkpoint")),
            "says why no checkpoint: {:?}",
            answer.unavailable
        );
    }
}

/// Gemma 3 4B on a T4: its bfloat16 weights (8.6 GB) fit, but the T4 has
/// no bfloat16 (vllm-bf16-needs-sm80); float16 is refused for Gemma 3
/// (vllm-fp16-refused-model-types), and float32 weights (17 GB) do not
/// fit (weights-exceed-vram), with no quantized Gemma 3 4B in the model
/// table: each dtype remedy brings another rule into range.
#[test]
fn colliding_dtype_remedies_are_reported_as_a_conflict() {
    let (engine, set) = rules();
    let manifest = parse_manifest(
        br#"{"manifest_version":1,"host":{"arch":"x86_64"},
            "accelerators":[{"vendor":"nvidia","model":"T4","count":1}],
            "packages":[{"name":"vllm","version":"0.27.1"}],
            "workload":{"engine":"vllm","model":"google/gemma-3-4b-it","dtype":"bfloat16"}}"#,
    )
    .expect("parses");
    let answer = fix(engine, set, &manifest);
    eprintln!("{}", serde_json::to_string_pretty(&answer).expect("serialises"));
    assert_eq!(answer.status, Status::Conflict);
    assert!(answer.plan.is_none());
    let collides = |from: &str, to: &str| {
        answer.conflicts.iter().any(|c| c.rule_id == from && c.brings == to && !c.why.is_empty())
    };
    assert!(
        collides("vllm-bf16-needs-sm80", "weights-exceed-vram")
            || collides("vllm-bf16-needs-sm80", "vllm-fp16-refused-model-types"),
        "{:#?}",
        answer.conflicts
    );
}

#[test]
fn a_manifest_without_errors_is_clear_and_unchanged() {
    let (engine, set) = rules();
    let manifest = fixture("h100x8-llama70b-healthy.json");
    let answer = fix(engine, set, &manifest);
    assert_eq!(answer.status, Status::Clear);
    assert!(answer.errors_before.is_empty());
    let plan = answer.plan.expect("the clear plan");
    assert!(errors(&check(&plan.patched_manifest)).is_empty());
}

#[test]
fn the_bound_is_kept_and_said() {
    let (_, set) = rules();
    let manifest = fixture("g5g-gemma4-vllm0271.json");
    let (engine, _) = rules();
    let mut check = |m: Manifest| -> Result<CheckResponse, pitfall_engine::PastDeadline> {
        Ok(set.check(engine, m))
    };
    let answer = pitfall_fix::solve_within(&manifest, set, 3, &mut check).expect("no deadline");
    assert!(answer.evaluations <= 3);
    assert!(answer.bound_hit);
    assert!(answer.may_not_be_minimal);
}
