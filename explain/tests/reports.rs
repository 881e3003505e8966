//! The evaluation set: real error excerpts from public issues
//! (`tests/reports/*/error.txt`), each with the rule that explains it, or
//! none. Every report of kind `breakage` whose expected rule is bundled
//! counts for top-1 and top-3 accuracy, unless its failure prints no
//! error at all (`"error_text": false`: a hang, wrong output); every
//! `unrelated` one (and every `other-bug`, a real bug no rule is about)
//! must get no cause above the threshold.

use std::path::{Path, PathBuf};

use pitfall_contract::meta::RuleMeta;
use pitfall_explain::Explainer;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Report {
    url: String,
    kind: String,
    expected_rule: Option<String>,
    /// Bundled rules that name the same cause (the corpus README says when).
    #[serde(default)]
    equivalent_rules: Vec<String>,
    #[serde(default)]
    rule_exists: bool,
    /// False when the failure prints no error at all (a hang, wrong
    /// output): nothing for `explain` to read, so not counted.
    #[serde(default = "yes")]
    error_text: bool,
    /// Why, when `error_text` is false.
    error_text_why: Option<String>,
    /// Whether the stored text holds a line the failing program printed
    /// about the failure (false: only a title or prose retelling it, a
    /// command, output cut before the error); judged by reading the text,
    /// not by what the matcher does with it.
    error_in_text: Option<bool>,
    /// The gathering a report came in (`2026-12-07`: a batch taken after
    /// the matcher was written, to measure it on texts it was not tuned
    /// on); none for the first reports.
    batch: Option<String>,
}

/// One batch's figures.
#[derive(Debug, Default)]
struct Tally {
    total: usize,
    top1: usize,
    top3: usize,
}

fn yes() -> bool {
    true
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn bundled_rules() -> Vec<RuleMeta> {
    let mut rules = Vec::new();
    for entry in std::fs::read_dir(root().join("rules")).expect("rules/") {
        let path = entry.expect("entry").path().join("rule.json");
        if path.is_file() {
            let text = std::fs::read_to_string(&path).expect("rule.json");
            let meta: RuleMeta =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            rules.push(meta);
        }
    }
    rules.sort_by(|a, b| a.id.cmp(&b.id));
    rules
}

/// The accuracy this set reaches today, asserted so it cannot slip: top-1
/// 388 of 441 (88.0%), top-3 394 (89.3%); no unrelated text or other bug
/// above the threshold but those `known-false-causes.json` accepts.
/// By batch (`tests/reports/README.md`): the first 150, which the matcher
/// was tuned on, 97.3% and 97.3%; the held-out batches, each gathered
/// blind to the matcher and first measured with it frozen, then measured
/// again after the changes their misses led to: 2026-12-07 45.5% / 54.5%
/// first, 57.6% / 66.7% now; 2026-12-07b 78.9% / 84.2%, now 92.1% / 97.4%;
/// 2026-12-08 62.2% / 64.9%, now 81.1% / 81.1%; 2026-12-08b 90.9% /
/// 90.9%, now 100% / 100%; 2026-12-09 68.0% / 72.0%, now 84.0% / 88.0%;
/// 2026-12-10 82.6% / 82.6%, now 95.7% / 95.7%; 2026-12-11 72.0% /
/// 72.0%, now 88.0% / 88.0%; 2026-12-12 78.3% / 78.3%, now 83.3% / 83.3%;
/// 2026-12-13 87.5% / 87.5%, now the same; 2026-12-14 92.9% / 92.9%, now
/// the same; 2026-12-15 100% / 100%; 2026-12-16 57.1% / 57.1%, now the
/// same (two prose titles; a driver fault whose bare `DNN library
/// initialization failed` the JAX rule claimed until that signature was
/// dropped); 2026-12-17 0% / 0% (six of its seven hold no line of the
/// error), now 14.3% / 14.3%; 2026-12-18 50.0% / 50.0%, now 66.7% /
/// 66.7%. Issue 40 asks for 90% and 98%.
const TOP1_FLOOR: f64 = 0.879;
const TOP3_FLOOR: f64 = 0.893;

/// The same over the 398 excerpts whose stored text holds a line of the
/// error (`error_in_text`): 379 (95.2%) and 385 (96.7%).
const WITH_ERROR_TOP1_FLOOR: f64 = 0.952;
const WITH_ERROR_TOP3_FLOOR: f64 = 0.967;

/// Non-breakages a rule is named for above the threshold, accepted because
/// the text cannot tell the causes apart (`tests/reports/known-false-causes.json`:
/// the report, the rule and why; `cli/tests/reports.rs` reads the same
/// file). Any other false alarm fails the test, as does an entry there
/// that no longer happens.
#[derive(Deserialize)]
struct KnownFalseCause {
    report: String,
    rule: String,
    why: String,
}

fn known_false_causes() -> Vec<KnownFalseCause> {
    let path = root().join("tests/reports/known-false-causes.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_evaluation_set_is_explained() {
    let known_false = known_false_causes();
    let rules = bundled_rules();
    let explainer = Explainer::new(rules.iter());
    assert!(explainer.skipped.is_empty(), "{:?}", explainer.skipped);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/reports"))
        .expect("tests/reports")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("report.json").is_file())
        .collect();
    dirs.sort();
    let (mut total, mut top1, mut top3) = (0usize, 0usize, 0usize);
    let (mut unrelated, mut other_bugs, mut silent) = (0usize, 0usize, 0usize);
    let mut batches: std::collections::BTreeMap<String, Tally> = Default::default();
    let mut with_error = Tally::default();
    let mut misses = Vec::new();
    let mut false_alarms = Vec::new();
    let mut accepted: Vec<(String, String)> = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_owned();
        let report: Report = serde_json::from_str(
            &std::fs::read_to_string(dir.join("report.json")).expect("report.json"),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytes = std::fs::read(dir.join("error.txt")).expect("error.txt");
        let log = String::from_utf8_lossy(&bytes);
        let explanation = explainer.explain(&log);
        let ranked: Vec<&str> = explanation.causes.iter().map(|c| c.rule_id.as_str()).collect();
        match report.kind.as_str() {
            "breakage" => {
                let expected = report.expected_rule.as_deref().expect("a breakage names its rule");
                if !report.rule_exists || !rules.iter().any(|r| r.id == expected) {
                    continue;
                }
                if !report.error_text {
                    assert!(
                        report.error_text_why.as_deref().is_some_and(|w| !w.trim().is_empty()),
                        "{name}: error_text false needs error_text_why"
                    );
                    silent += 1;
                    continue;
                }
                total += 1;
                let position = ranked
                    .iter()
                    .position(|r| *r == expected || report.equivalent_rules.iter().any(|e| e == r));
                top1 += usize::from(position == Some(0));
                top3 += usize::from(position.is_some_and(|p| p < 3));
                let batch = report.batch.clone().unwrap_or_else(|| "first".to_owned());
                let tally = batches.entry(batch).or_default();
                tally.total += 1;
                tally.top1 += usize::from(position == Some(0));
                tally.top3 += usize::from(position.is_some_and(|p| p < 3));
                if report.error_in_text != Some(false) {
                    with_error.total += 1;
                    with_error.top1 += usize::from(position == Some(0));
                    with_error.top3 += usize::from(position.is_some_and(|p| p < 3));
                }
                if position != Some(0) {
                    let scores: Vec<String> = explanation
                        .causes
                        .iter()
                        .take(3)
                        .map(|c| format!("{} {:.2}", c.rule_id, c.score))
                        .collect();
                    misses.push(format!(
                        "{name}: expected {expected}, got {scores:?} ({})",
                        report.url
                    ));
                }
            }
            kind => {
                if kind == "unrelated" {
                    unrelated += 1;
                } else {
                    other_bugs += 1;
                }
                if let Some(c) = explanation.causes.first() {
                    let known = known_false.iter().any(|k| k.report == name && k.rule == c.rule_id);
                    let alarm = format!("{name} ({kind}): {} {:.2}", c.rule_id, c.score);
                    if known {
                        accepted.push((name.clone(), c.rule_id.clone()));
                        eprintln!("  accepted false alarm {alarm}");
                    } else {
                        false_alarms.push(alarm);
                    }
                }
            }
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / total.max(1) as f64;
    eprintln!(
        "evaluation: {total} breakage reports, top-1 {top1} ({:.1}%), top-3 {top3} ({:.1}%); \
         {unrelated} unrelated and {other_bugs} other bugs, {} above the threshold ({} accepted); \
         {silent} breakages without error text left out",
        pct(top1),
        pct(top3),
        false_alarms.len() + accepted.len(),
        accepted.len()
    );
    let batches = batches.iter().map(|(b, t)| (format!("batch {b}"), t));
    for (name, t) in batches.chain([("the error in the text".to_owned(), &with_error)]) {
        eprintln!(
            "  {name}: {} breakage reports, top-1 {} ({:.1}%), top-3 {} ({:.1}%)",
            t.total,
            t.top1,
            100.0 * t.top1 as f64 / t.total.max(1) as f64,
            t.top3,
            100.0 * t.top3 as f64 / t.total.max(1) as f64
        );
    }
    for m in &misses {
        eprintln!("  miss {m}");
    }
    for f in &false_alarms {
        eprintln!("  false alarm {f}");
    }
    assert!(total >= 60, "the issue asks for at least 60 real excerpts, found {total}");
    assert!(unrelated >= 15, "the issue asks for at least 15 unrelated texts, found {unrelated}");
    assert!(false_alarms.is_empty(), "unrelated texts above the threshold: {false_alarms:?}");
    for k in &known_false {
        assert!(
            accepted.iter().any(|(r, x)| *r == k.report && *x == k.rule),
            "{}: {} is no longer named ({}); remove it from known-false-causes.json",
            k.report,
            k.rule,
            k.why
        );
    }
    assert!(top1 as f64 >= TOP1_FLOOR * total as f64, "top-1 {top1}/{total}");
    assert!(top3 as f64 >= TOP3_FLOOR * total as f64, "top-3 {top3}/{total}");
    let Tally { total: with, top1: with1, top3: with3 } = with_error;
    assert!(
        with1 as f64 >= WITH_ERROR_TOP1_FLOOR * with as f64,
        "top-1 {with1}/{with} with the error"
    );
    assert!(
        with3 as f64 >= WITH_ERROR_TOP3_FLOOR * with as f64,
        "top-3 {with3}/{with} with the error"
    );
}
