//! The corpus of real public bug reports (tests/reports/, one folder per
//! report: report.json, and the environment paste, serve command and error
//! as posted), run as a new user would: `pitfall scan --from-collect-env
//! env.txt [--from-vllm-args serve.txt]`, then `pitfall check` on the
//! manifest with the rules built into the binary.
//!
//! Two figures: **recall**, the breakage reports whose expected rule is
//! bundled and fires (as error or warning); **false errors**, the reports
//! whose cause is not a compatibility breakage that get an error-severity
//! finding anyway. The test prints the table of every report and asserts
//! the figures reached (tests/reports/README.md records them): recall may
//! not fall below [`RECALL_FLOOR`], and no false error is allowed.
//!
//! A report whose environment paste the collector does not read (prose,
//! pip lists, no paste at all) is checked on what its serve command says,
//! through the same parser (`pitfall_collect`), else on an empty manifest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The breakages this corpus names today: the test fails if fewer are named.
const RECALL_FLOOR: usize = 2;

/// Error findings on reports that are not breakages which come from a
/// rule, not from what the collector read: each names the report, the
/// rule and why. The test fails on any other false error, and on an entry
/// here that no longer happens (then it goes).
const KNOWN_RULE_FALSE_ERRORS: &[(&str, &str, &str)] = &[(
    "sglang-14327",
    "sglang-torch-pin-mismatch",
    "the paste is from SGLang's CUDA 13 image, where sglang 0.5.5.post3 runs on torch \
     2.9.1+cu130 with an sgl-kernel built for it; the rule knows only the PyPI pin \
     (torch==2.8.0) and calls any other torch minor an import failure",
)];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reports")
}

fn pitfall(args: &[&str]) -> Output {
    let nowhere = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-pitfall-setting");
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitfall"));
    command.env("PITFALL_CONFIG", &nowhere).env("PITFALL_BUNDLE", &nowhere);
    for var in ["PITFALL_SERVER", "PITFALL_BUNDLE_KEY", "PITFALL_TOKEN"] {
        command.env_remove(var);
    }
    command.args(args).output().expect("pitfall runs")
}

/// One report of the corpus.
#[derive(Debug)]
struct Report {
    id: String,
    dir: PathBuf,
    /// `breakage`, `other-bug` or `unrelated`.
    kind: String,
    expected_rule: Option<String>,
    rule_exists: bool,
}

fn reports() -> Vec<Report> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus()).expect("tests/reports").flatten() {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("report.json")) else { continue };
        let json: Value = serde_json::from_str(&text).expect("report.json");
        out.push(Report {
            id: entry.file_name().to_string_lossy().into_owned(),
            kind: json["kind"].as_str().expect("kind").to_owned(),
            expected_rule: json["expected_rule"].as_str().map(str::to_owned),
            rule_exists: json["rule_exists"].as_bool().unwrap_or(false),
            dir,
        });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// How a report's manifest was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    /// `pitfall scan --from-collect-env env.txt` with its serve command.
    PasteAndServe,
    /// `pitfall scan --from-collect-env env.txt` (no serve command, or one
    /// that is not a command line).
    Paste,
    /// The paste is not one the collector reads (or there is none): the
    /// serve command alone.
    ServeOnly,
    /// Nothing to read.
    Nothing,
}

impl Made {
    fn label(self) -> &'static str {
        match self {
            Made::PasteAndServe => "paste+serve",
            Made::Paste => "paste",
            Made::ServeOnly => "serve only",
            Made::Nothing => "nothing read",
        }
    }
}

/// Scans a report into `out`; says how.
fn scan(report: &Report, out: &Path) -> Made {
    let env = report.dir.join("env.txt");
    let serve = std::fs::read_to_string(report.dir.join("serve.txt")).ok();
    let out_arg = out.display().to_string();
    if env.exists() {
        let env_arg = env.display().to_string();
        let base = ["scan", "--from-collect-env", &env_arg, "--format", "json", "-o", &out_arg];
        if let Some(serve) = &serve {
            let mut args = base.to_vec();
            args.extend(["--from-vllm-args", serve.as_str()]);
            if pitfall(&args).status.success() {
                return Made::PasteAndServe;
            }
        }
        if pitfall(&base).status.success() {
            return Made::Paste;
        }
    }
    let from_serve = serve
        .as_deref()
        .and_then(|s| pitfall_collect::from_text("", Some(s)).ok())
        .filter(|scan| scan.manifest.workload.is_some());
    match from_serve {
        Some(scan) => {
            let json = serde_json::to_string(&scan.manifest).expect("json");
            std::fs::write(out, json).expect("manifest written");
            Made::ServeOnly
        }
        None => {
            std::fs::write(out, r#"{"manifest_version":1}"#).expect("manifest written");
            Made::Nothing
        }
    }
}

#[test]
fn the_corpus_of_real_reports() {
    let reports = reports();
    assert!(reports.len() >= 40, "the corpus holds {} reports", reports.len());
    let work = tempfile::tempdir().expect("tempdir");
    let mut made = Vec::new();
    let mut files = Vec::new();
    for report in &reports {
        let file = work.path().join(format!("{}.json", report.id));
        made.push(scan(report, &file));
        files.push(file.display().to_string());
    }
    let mut args = vec!["check", "--format", "json", "--batch"];
    args.extend(files.iter().map(String::as_str));
    let out = pitfall(&args);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("check's answer is not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr))
    });
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), reports.len());

    let mut table = String::from(
        "report                              kind       manifest     expected rule                                 outcome\n",
    );
    let (mut expected, mut named, mut false_errors) = (0, 0, 0);
    let (mut unexplained, mut seen_known) = (Vec::new(), Vec::new());
    let mut misses: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for ((report, made), result) in reports.iter().zip(&made).zip(results) {
        assert!(result.get("error").is_none(), "{}: {result}", report.id);
        let findings: Vec<(&str, &str)> = result["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| (f["rule_id"].as_str().unwrap_or(""), f["severity"].as_str().unwrap_or("")))
            .collect();
        let errors: Vec<&str> =
            findings.iter().filter(|(_, s)| *s == "error").map(|(id, _)| *id).collect();
        let outcome = if report.kind == "breakage" {
            let rule = report.expected_rule.as_deref().unwrap_or("");
            let fired =
                findings.iter().any(|(id, s)| *id == rule && matches!(*s, "error" | "warning"));
            if !report.rule_exists || !rule_is_bundled(rule) {
                "rule not bundled".to_owned()
            } else {
                expected += 1;
                if fired {
                    named += 1;
                    "NAMED".to_owned()
                } else {
                    misses.entry(made.label()).or_default().push(&report.id);
                    let undetermined = result["undetermined"]
                        .as_array()
                        .and_then(|u| u.iter().find(|u| u["rule_id"] == rule))
                        .map(|u| format!("undetermined, needs {}", u["missing"]));
                    format!("missed ({})", undetermined.unwrap_or_else(|| "clear".into()))
                }
            }
        } else if errors.is_empty() {
            "no error (right)".to_owned()
        } else {
            false_errors += 1;
            let known: Vec<&str> = errors
                .iter()
                .copied()
                .filter(|rule| {
                    KNOWN_RULE_FALSE_ERRORS.iter().any(|(r, id, _)| *r == report.id && id == rule)
                })
                .collect();
            seen_known.extend(known.iter().map(|rule| (report.id.clone(), rule.to_string())));
            if known.len() < errors.len() {
                unexplained.push(format!("{}: {}", report.id, errors.join(", ")));
            }
            format!("FALSE ERROR: {}", errors.join(", "))
        };
        table.push_str(&format!(
            "{:<35} {:<10} {:<12} {:<45} {}\n",
            report.id,
            report.kind,
            made.label(),
            report.expected_rule.as_deref().unwrap_or("-"),
            outcome
        ));
    }
    let read = made.iter().filter(|m| matches!(m, Made::Paste | Made::PasteAndServe)).count();
    table.push_str(&format!(
        "\nrecall: {named} of {expected} breakages with a bundled rule named ({:.0}%); \
         false errors: {false_errors} on {} reports that are not breakages; \
         pastes read: {read} of {} reports ({} with env.txt)\n",
        100.0 * named as f64 / expected.max(1) as f64,
        reports.iter().filter(|r| r.kind != "breakage").count(),
        reports.len(),
        reports.iter().filter(|r| r.dir.join("env.txt").exists()).count(),
    ));
    for (how, ids) in &misses {
        table.push_str(&format!("missed, manifest from {how}: {}\n", ids.join(" ")));
    }
    for (id, rule, why) in KNOWN_RULE_FALSE_ERRORS {
        table.push_str(&format!("false error from a rule, {id} ({rule}): {why}\n"));
    }
    println!("{table}");
    assert!(
        unexplained.is_empty(),
        "error findings on reports that are not breakages: {unexplained:?}\n{table}"
    );
    for (id, rule, _) in KNOWN_RULE_FALSE_ERRORS {
        assert!(
            seen_known.iter().any(|(r, x)| r == id && x == rule),
            "{id}: {rule} no longer fires; remove it from KNOWN_RULE_FALSE_ERRORS"
        );
    }
    assert!(named >= RECALL_FLOOR, "recall fell below {RECALL_FLOOR}:\n{table}");
}

/// Whether `rules/<id>` is one of the bundled rules.
fn rule_is_bundled(id: &str) -> bool {
    !id.is_empty() && Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules").join(id).is_dir()
}
