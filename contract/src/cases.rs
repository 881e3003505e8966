//! Running a rule's embedded test cases, whatever runs the rule: the native
//! harness (plain function calls) and the engine (wasm) share this logic, so
//! a case means the same in `cargo test` and at publish.

use std::fmt;

use serde_json::Value;

use super::meta::{Expect, TestCase};
use super::report::{LazyFinding, Undetermined};
use super::selector::Selector;
use super::{Manifest, Prepared, actions, manifest_from_value};

/// What one evaluation of a rule gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Evaluation {
    /// Nothing to report.
    Clear,
    /// The finding (as text when the memo replayed it).
    Matched(Box<LazyFinding>),
    /// The fields the rule needs.
    Undetermined(Vec<String>),
    /// The rule failed (trap, timeout, bad output).
    Failed(String),
}

impl fmt::Display for Evaluation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evaluation::Clear => f.write_str("clear"),
            Evaluation::Matched(finding) => write!(f, "matched: {}", finding.message),
            Evaluation::Undetermined(missing) => {
                write!(f, "undetermined, missing {}", missing.join(", "))
            }
            Evaluation::Failed(error) => write!(f, "failed: {error}"),
        }
    }
}

/// The result of one test case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What was expected, for people.
    pub expected: String,
    /// What happened, for people.
    pub actual: String,
    /// The manifest evaluated last (for `fixed`, the repaired one), for people.
    pub manifest: Value,
}

/// Runs every case of `cases` with `evaluate`, plus the coverage check:
/// a rule must have at least one `matched`, one `clear` and one `fixed` case.
///
/// A case whose manifest the rule's selectors exclude is what the registry
/// would never evaluate: its outcome is `clear`, and the rule is still run
/// to check that it keeps the selectors' promise (reports nothing there).
pub fn run_cases(
    selectors: &[Selector],
    cases: &[TestCase],
    evaluate: &mut dyn FnMut(&Prepared) -> Evaluation,
) -> Vec<CaseResult> {
    let mut results: Vec<CaseResult> =
        cases.iter().map(|case| run_case(selectors, cases, case, evaluate)).collect();
    for case in cases.iter().filter(|c| c.expect == Expect::Matched) {
        if let Some(manifest) = &case.manifest {
            results.extend(probe_selectors(selectors, case, manifest, evaluate));
        }
    }
    for (kind, label) in
        [(Expect::Matched, "matched"), (Expect::Clear, "clear"), (Expect::Fixed, "fixed")]
    {
        if !cases.iter().any(|c| c.expect == kind) {
            results.push(CaseResult {
                name: format!("coverage: a `{label}` case"),
                passed: false,
                expected: format!("at least one case expecting `{label}`"),
                actual: "none".into(),
                manifest: Value::Null,
            });
        }
    }
    results
}

fn run_case(
    selectors: &[Selector],
    cases: &[TestCase],
    case: &TestCase,
    evaluate: &mut dyn FnMut(&Prepared) -> Evaluation,
) -> CaseResult {
    let fail = |expected: String, actual: String, manifest: &Value| CaseResult {
        name: case.name.clone(),
        passed: false,
        expected,
        actual,
        manifest: manifest.clone(),
    };
    let (manifest_value, expected) = match case.expect {
        Expect::Fixed => {
            let Some(from) = cases.iter().find(|c| Some(&c.name) == case.from.as_ref()) else {
                return fail(
                    "a `from` naming a matched case".into(),
                    format!("from = {:?}", case.from),
                    &Value::Null,
                );
            };
            let Some(original) = &from.manifest else {
                return fail("case `from` to have a manifest".into(), "none".into(), &Value::Null);
            };
            match repaired(original, case.remedy.unwrap_or(0), evaluate) {
                Ok(m) => (m, Expect::Clear),
                Err(reason) => {
                    return fail("a manifest repaired by the remedy".into(), reason, original);
                }
            }
        }
        other => match &case.manifest {
            Some(m) => (m.clone(), other),
            None => return fail("a manifest".into(), "the case has none".into(), &Value::Null),
        },
    };
    let prepared = match manifest_from_value(manifest_value.clone()) {
        Ok(m) => Prepared::new(m),
        Err(e) => return fail("a valid manifest".into(), e.message, &manifest_value),
    };
    let outcome = evaluate(&prepared);
    if !selectors.iter().all(|s| s.holds(&prepared.manifest)) && outcome != Evaluation::Clear {
        return fail(
            "clear: the rule's selectors exclude this manifest".into(),
            format!("{outcome} (a selector is a promise that the rule reports nothing here)"),
            &manifest_value,
        );
    }
    // An undetermined outcome as the check's answer gives it: each field
    // the rule named, missing or there but unreadable.
    let explained = match &outcome {
        Evaluation::Undetermined(named) => {
            Some(Undetermined::explain(String::new(), named.clone(), &prepared.fields))
        }
        _ => None,
    };
    let (passed, expected_text) = match (expected, &outcome) {
        (Expect::Clear, Evaluation::Clear) => (true, "clear".to_owned()),
        (Expect::Clear, _) => (false, "clear".to_owned()),
        (Expect::Matched, Evaluation::Matched(f)) => match &case.message_contains {
            Some(text) => {
                (f.message.contains(text.as_str()), format!("matched, message containing {text:?}"))
            }
            None => (true, "matched".to_owned()),
        },
        (Expect::Matched, _) => (false, "matched".to_owned()),
        (Expect::Undetermined, Evaluation::Undetermined(named)) => {
            let unreadable = explained.as_ref().map(|u| &u.unreadable);
            let reported_unreadable =
                |p: &String| unreadable.is_some_and(|u| u.iter().any(|u| &u.path == p));
            (
                case.missing.iter().all(|p| named.contains(p))
                    && case.unreadable.iter().all(reported_unreadable),
                expected_undetermined(case),
            )
        }
        (Expect::Undetermined, _) => (false, expected_undetermined(case)),
        (Expect::Fixed, _) => unreachable!("fixed cases are checked as clear"),
    };
    let expected_text = if case.expect == Expect::Fixed {
        format!(
            "clear after remedy {} of case {:?}",
            case.remedy.unwrap_or(0),
            case.from.as_deref().unwrap_or("")
        )
    } else {
        expected_text
    };
    let actual = match &explained {
        Some(u) => format!("undetermined, {u}"),
        None => outcome.to_string(),
    };
    CaseResult {
        name: case.name.clone(),
        passed,
        expected: expected_text,
        actual,
        manifest: manifest_value,
    }
}

/// What an `undetermined` case expects, for people.
fn expected_undetermined(case: &TestCase) -> String {
    let mut text = String::from("undetermined");
    if !case.missing.is_empty() {
        text.push_str(", missing ");
        text.push_str(&case.missing.join(", "));
    }
    if !case.unreadable.is_empty() {
        text.push_str(", unreadable ");
        text.push_str(&case.unreadable.join(", "));
    }
    text
}

/// The selector probe: a rule whose `applies_to` does not describe its
/// code is metadata that lies (the index files it under keys it ignores,
/// and search shows it where it cannot apply). For a `matched` case, each
/// selector in turn is made false by the smallest edit of the manifest
/// that does it ([`exclusions`]); the rule must not match any such variant.
/// Only failures are reported, one result each.
fn probe_selectors(
    selectors: &[Selector],
    case: &TestCase,
    manifest: &Value,
    evaluate: &mut dyn FnMut(&Prepared) -> Evaluation,
) -> Vec<CaseResult> {
    let mut failures = Vec::new();
    for selector in selectors {
        for (edit, variant) in exclusions(selector, manifest) {
            let Ok(parsed) = manifest_from_value(variant.clone()) else { continue };
            let prepared = Prepared::new(parsed);
            // Normalisation or enrichment may undo an edit: only a variant
            // the selector really excludes proves anything.
            if selector.holds(&prepared.manifest) {
                continue;
            }
            let outcome = evaluate(&prepared);
            if matches!(outcome, Evaluation::Matched(_)) {
                failures.push(CaseResult {
                    name: format!("selector probe: case {:?} with {edit}", case.name),
                    passed: false,
                    expected: format!("not matched: `{selector}` excludes this manifest"),
                    actual: format!("{outcome} (the rule ignores its own selector `{selector}`)"),
                    manifest: variant,
                });
            }
        }
    }
    failures
}

/// Edits of `manifest` meant to make `selector` false, each with a
/// description for people. Version and capability ranges try a value below
/// and above any plausible range; the caller keeps the edits that work.
fn exclusions(selector: &Selector, manifest: &Value) -> Vec<(String, Value)> {
    let edit = |what: String, change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut variant = manifest.clone();
        if let Some(root) = variant.as_object_mut() {
            change(root);
        }
        (what, variant)
    };
    let each = |root: &mut serde_json::Map<String, Value>,
                list: &str,
                f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        if let Some(Value::Array(items)) = root.get_mut(list) {
            items.iter_mut().filter_map(Value::as_object_mut).for_each(f);
        }
    };
    let is_named = |p: &serde_json::Map<String, Value>, name: &str| {
        p.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| super::normalize::package_key(n) == name)
    };
    match selector {
        Selector::Package { name, versions } => {
            let mut out = vec![edit(format!("package {name} removed"), &|root| {
                if let Some(Value::Array(packages)) = root.get_mut("packages") {
                    packages.retain(|p| !p.as_object().is_some_and(|p| is_named(p, name)));
                }
            })];
            if versions.is_some() {
                for version in ["0.0.1", "99999.0"] {
                    out.push(edit(format!("package {name} at version {version}"), &|root| {
                        each(root, "packages", &|p| {
                            if is_named(p, name) {
                                p.insert("version".into(), version.into());
                            }
                        })
                    }));
                }
            }
            out
        }
        Selector::Accelerator(vendor) => vec![edit(format!("no {vendor} accelerator"), &|root| {
            each(root, "accelerators", &|a| {
                a.insert("vendor".into(), "probe-vendor".into());
            })
        })],
        Selector::Capability(_) => ["1.0", "99.0"]
            .into_iter()
            .map(|cc| {
                edit(format!("every compute capability {cc}"), &|root| {
                    each(root, "accelerators", &|a| {
                        a.insert("compute_capability".into(), cc.into());
                    })
                })
            })
            .collect(),
        Selector::Arch(_) => vec![edit("host.arch riscv64".into(), &|root| {
            let host = root.entry("host").or_insert_with(|| Value::Object(Default::default()));
            if let Some(host) = host.as_object_mut() {
                host.insert("arch".into(), "riscv64".into());
            }
        })],
        Selector::Engine(_) => vec![edit("workload.engine probe-engine".into(), &|root| {
            let workload =
                root.entry("workload").or_insert_with(|| Value::Object(Default::default()));
            if let Some(workload) = workload.as_object_mut() {
                workload.insert("engine".into(), "probe-engine".into());
            }
        })],
        Selector::Container => vec![edit("no container image".into(), &|root| {
            if let Some(Value::Object(container)) = root.get_mut("container") {
                container.remove("image");
            }
        })],
    }
}

/// The manifest of a matched case with remedy `index` of its finding applied.
/// The manifest a `fixed` case checks: its `from` case's manifest with the
/// remedy applied that the rule's own finding there offers.
pub fn fixed_manifest(
    cases: &[TestCase],
    case: &TestCase,
    evaluate: &mut dyn FnMut(&Prepared) -> Evaluation,
) -> Result<Value, String> {
    let from = cases
        .iter()
        .find(|c| Some(&c.name) == case.from.as_ref())
        .ok_or_else(|| format!("from = {:?} names no case", case.from))?;
    let original = from.manifest.as_ref().ok_or("case `from` has no manifest")?;
    repaired(original, case.remedy.unwrap_or(0), evaluate)
}

fn repaired(
    original: &Value,
    index: usize,
    evaluate: &mut dyn FnMut(&Prepared) -> Evaluation,
) -> Result<Value, String> {
    let manifest: Manifest = manifest_from_value(original.clone()).map_err(|e| e.message)?;
    let finding = match evaluate(&Prepared::new(manifest.clone())) {
        Evaluation::Matched(f) => f,
        other => return Err(format!("case `from` did not match: {other}")),
    };
    let remedy = finding.remedies.get(index).ok_or_else(|| {
        format!("remedy {index} does not exist ({} offered)", finding.remedies.len())
    })?;
    if remedy.actions.is_empty() {
        return Err(format!("remedy {index} ({:?}) has no actions to apply", remedy.summary));
    }
    let mut fixed = manifest;
    actions::apply_all(&mut fixed, &remedy.actions)
        .map_err(|e| format!("applying remedy {index}: {e}"))?;
    serde_json::to_value(&fixed).map_err(|e| e.to_string())
}

/// One line per result, in order: `✓ NAME` for a case that passed,
/// `✗ NAME` for one that failed (its report is [`failure_report`]).
pub fn case_lines(results: &[CaseResult]) -> String {
    let mut out = String::new();
    for r in results {
        out.push_str(if r.passed { "  ✓ " } else { "  ✗ " });
        out.push_str(&r.name);
        out.push('\n');
    }
    out
}

/// A readable report of the failed cases, empty when all passed.
pub fn failure_report(rule_id: &str, results: &[CaseResult]) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| !r.passed) {
        let manifest = serde_json::to_string_pretty(&r.manifest).unwrap_or_default();
        out.push_str(&format!(
            "rule {rule_id}, case {:?}\n  expected: {}\n  actual:   {}\n  manifest: {}\n",
            r.name,
            r.expected,
            r.actual,
            manifest.replace('\n', "\n  ")
        ));
    }
    out
}
