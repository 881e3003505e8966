//! The corpus of real public bug reports (tests/reports/, one folder per
//! report: report.json, and the environment paste, serve command and error
//! as posted), run as a new user would: `pitfall scan --from-collect-env
//! env.txt [--from-vllm-args serve.txt]`, then `pitfall check` on the
//! manifest with the rules built into the binary.
//!
//! The scan reads the error excerpt too (`--from-log error.txt`), for
//! what the failing stack's own log states about the machine (vLLM's
//! engine start-up line, a GPU it names).
//!
//! Figures: **check recall**, the breakage reports whose expected rule is
//! bundled and fires (as error or warning) on the scanned manifest;
//! **named**, those whose expected rule `check` fires or `pitfall explain
//! error.txt --manifest` ranks first (what a user holding the report gets
//! from Pitfall); **false errors**, the reports whose cause is not a
//! compatibility breakage that get an error-severity finding anyway, and
//! **false causes**, those whose error `explain` attributes to a rule. The
//! test prints the table of every report and asserts the figures reached
//! (tests/reports/README.md records them): neither recall may fall below
//! its floor, and no false error or false cause is allowed.
//!
//! A report whose environment paste the collector does not read (no
//! paste, or one that states nothing it can take) is checked on what its
//! serve command and log say, through the same parser (`pitfall_collect`),
//! else on an empty manifest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The breakages whose expected rule `check` fires today: the test fails
/// if fewer do.
const CHECK_RECALL_FLOOR: usize = 14;

/// The breakages named by `check` or by `explain` (first cause) today.
const NAMED_FLOOR: usize = 384;

/// Error findings on reports that are not breakages which come from a
/// rule, not from what the collector read: each names the report, the
/// rule and why. The test fails on any other false error, and on an entry
/// here that no longer happens (then it goes).
const KNOWN_RULE_FALSE_ERRORS: &[(&str, &str, &str)] = &[];

/// Causes `explain` names for reports that are not breakages, accepted
/// because the text cannot tell them apart: each names the report, the
/// rule and why (`tests/reports/known-false-causes.json`, which the explain
/// evaluation `explain/tests/reports.rs` reads too). The test fails on any
/// other false cause, and on an entry there that no longer happens.
fn known_false_causes() -> Vec<(String, String, String)> {
    let path = corpus().join("known-false-causes.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let list: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    list.iter()
        .map(|k| {
            let field = |name: &str| {
                k[name].as_str().unwrap_or_else(|| panic!("{}: {name} missing", path.display()))
            };
            (field("report").to_owned(), field("rule").to_owned(), field("why").to_owned())
        })
        .collect()
}

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
    /// Bundled rules that name the same root cause from other facts (a
    /// build whose arch list the release table knows is judged by the
    /// arch-list rule, one it does not by the Blackwell rule).
    equivalent_rules: Vec<String>,
    rule_exists: bool,
}

impl Report {
    /// Whether `rule` names this report's root cause.
    fn names_cause(&self, rule: &str) -> bool {
        self.expected_rule.as_deref() == Some(rule)
            || self.equivalent_rules.iter().any(|r| r == rule)
    }
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
            equivalent_rules: json["equivalent_rules"]
                .as_array()
                .map(|rules| rules.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
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
    /// `pitfall scan --from-collect-env env.txt` with its serve command
    /// (and its log).
    PasteAndServe,
    /// `pitfall scan --from-collect-env env.txt` (no serve command, or one
    /// that is not a command line).
    Paste,
    /// The paste is not one the collector reads (or there is none): the
    /// serve command and the log.
    ServeOrLog,
    /// Nothing to read.
    Nothing,
}

impl Made {
    fn label(self) -> &'static str {
        match self {
            Made::PasteAndServe => "paste+serve",
            Made::Paste => "paste",
            Made::ServeOrLog => "serve/log",
            Made::Nothing => "nothing read",
        }
    }
}

/// Scans a report into `out`; says how.
fn scan(report: &Report, out: &Path) -> Made {
    let env = report.dir.join("env.txt");
    let serve = std::fs::read_to_string(report.dir.join("serve.txt")).ok();
    let log = std::fs::read_to_string(report.dir.join("error.txt")).ok();
    let out_arg = out.display().to_string();
    let log_arg = report.dir.join("error.txt").display().to_string();
    if env.exists() {
        let env_arg = env.display().to_string();
        let mut base =
            vec!["scan", "--from-collect-env", &env_arg, "--format", "json", "-o", &out_arg];
        if log.is_some() {
            base.extend(["--from-log", log_arg.as_str()]);
        }
        if let Some(serve) = &serve {
            let mut args = base.clone();
            args.extend(["--from-vllm-args", serve.as_str()]);
            if pitfall(&args).status.success() {
                return Made::PasteAndServe;
            }
        }
        if pitfall(&base).status.success() {
            return Made::Paste;
        }
    }
    let nothing = pitfall_collect::from_texts("", None, None).expect("an empty scan").manifest;
    let read = |serve: Option<&str>| {
        pitfall_collect::from_texts("", serve, log.as_deref())
            .ok()
            .filter(|scan| scan.manifest != nothing)
    };
    match read(serve.as_deref()).or_else(|| read(None)) {
        Some(scan) => {
            let json = serde_json::to_string(&scan.manifest).expect("json");
            std::fs::write(out, json).expect("manifest written");
            Made::ServeOrLog
        }
        None => {
            std::fs::write(out, r#"{"manifest_version":1}"#).expect("manifest written");
            Made::Nothing
        }
    }
}

/// The first cause `pitfall explain error.txt --manifest M` gives, if any.
fn explained_first(report: &Report, manifest: &Path) -> Option<String> {
    let log = report.dir.join("error.txt");
    if !log.exists() {
        return None;
    }
    let (log, manifest) = (log.display().to_string(), manifest.display().to_string());
    let out = pitfall(&["explain", &log, "--manifest", &manifest, "--format", "json"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: explain failed: {}",
        report.id,
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("explain's JSON");
    answer["causes"][0]["rule_id"].as_str().map(str::to_owned)
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
        "report                              kind       manifest     expected rule                                 check      explain\n",
    );
    let (mut expected, mut by_check, mut named, mut false_errors) = (0, 0, 0, 0);
    let mut false_causes = Vec::new();
    let (mut unexplained, mut seen_known) = (Vec::new(), Vec::new());
    let mut misses: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (((report, made), result), file) in reports.iter().zip(&made).zip(results).zip(&files) {
        assert!(result.get("error").is_none(), "{}: {result}", report.id);
        let findings: Vec<(&str, &str)> = result["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| (f["rule_id"].as_str().unwrap_or(""), f["severity"].as_str().unwrap_or("")))
            .collect();
        let errors: Vec<&str> =
            findings.iter().filter(|(_, s)| *s == "error").map(|(id, _)| *id).collect();
        let first_cause = explained_first(report, Path::new(file));
        let explain_column = first_cause.clone().unwrap_or_else(|| "-".into());
        let check_column = if report.kind == "breakage" {
            let rule = report.expected_rule.as_deref().unwrap_or("");
            let fired = findings
                .iter()
                .any(|(id, s)| report.names_cause(id) && matches!(*s, "error" | "warning"));
            if !report.rule_exists || !rule_is_bundled(rule) {
                "rule not bundled".to_owned()
            } else {
                expected += 1;
                let explained = first_cause.as_deref().is_some_and(|r| report.names_cause(r));
                if fired || explained {
                    named += 1;
                } else {
                    misses.entry(made.label()).or_default().push(&report.id);
                }
                if fired {
                    by_check += 1;
                    "FIRES".to_owned()
                } else {
                    let undetermined = result["undetermined"]
                        .as_array()
                        .and_then(|u| u.iter().find(|u| u["rule_id"] == rule))
                        .map(|_| "undetermined");
                    undetermined.unwrap_or("clear").to_owned()
                }
            }
        } else {
            if let Some(rule) = &first_cause {
                false_causes.push((report.id.clone(), rule.clone()));
            }
            if errors.is_empty() {
                "no error (right)".to_owned()
            } else {
                false_errors += 1;
                let known: Vec<&str> = errors
                    .iter()
                    .copied()
                    .filter(|rule| {
                        KNOWN_RULE_FALSE_ERRORS
                            .iter()
                            .any(|(r, id, _)| *r == report.id && id == rule)
                    })
                    .collect();
                seen_known.extend(known.iter().map(|rule| (report.id.clone(), rule.to_string())));
                if known.len() < errors.len() {
                    unexplained.push(format!("{}: {}", report.id, errors.join(", ")));
                }
                format!("FALSE ERROR: {}", errors.join(", "))
            }
        };
        table.push_str(&format!(
            "{:<35} {:<10} {:<12} {:<45} {:<10} {}\n",
            report.id,
            report.kind,
            made.label(),
            report.expected_rule.as_deref().unwrap_or("-"),
            check_column,
            explain_column
        ));
    }
    let read = made.iter().filter(|m| matches!(m, Made::Paste | Made::PasteAndServe)).count();
    let percent = |n: usize| 100.0 * n as f64 / expected.max(1) as f64;
    table.push_str(&format!(
        "\nnamed: {named} of {expected} breakages with a bundled rule ({:.0}%), \
         by check alone {by_check} ({:.0}%); false errors: {false_errors}, false causes: {} \
         on {} reports that are not breakages; pastes read: {read} of {} reports ({} with env.txt)\n",
        percent(named),
        percent(by_check),
        false_causes.len(),
        reports.iter().filter(|r| r.kind != "breakage").count(),
        reports.len(),
        reports.iter().filter(|r| r.dir.join("env.txt").exists()).count(),
    ));
    for (how, ids) in &misses {
        table.push_str(&format!("not named, manifest from {how}: {}\n", ids.join(" ")));
    }
    for (id, rule, why) in KNOWN_RULE_FALSE_ERRORS {
        table.push_str(&format!("false error from a rule, {id} ({rule}): {why}\n"));
    }
    let known_false = known_false_causes();
    for (id, rule, why) in &known_false {
        table.push_str(&format!("accepted false cause, {id} ({rule}): {why}\n"));
    }
    println!("{table}");
    assert!(
        unexplained.is_empty(),
        "error findings on reports that are not breakages: {unexplained:?}\n{table}"
    );
    let (known_causes, false_causes): (Vec<_>, Vec<_>) = false_causes
        .into_iter()
        .partition(|(id, rule)| known_false.iter().any(|(i, r, _)| i == id && r == rule));
    assert!(false_causes.is_empty(), "explain names a cause of a non-breakage: {false_causes:?}");
    for (id, rule, _) in &known_false {
        assert!(
            known_causes.iter().any(|(i, r)| i == id && r == rule),
            "{id}: {rule} is no longer named; remove it from known-false-causes.json"
        );
    }
    for (id, rule, _) in KNOWN_RULE_FALSE_ERRORS {
        assert!(
            seen_known.iter().any(|(r, x)| r == id && x == rule),
            "{id}: {rule} no longer fires; remove it from KNOWN_RULE_FALSE_ERRORS"
        );
    }
    assert!(
        by_check >= CHECK_RECALL_FLOOR,
        "check recall fell below {CHECK_RECALL_FLOOR}:\n{table}"
    );
    assert!(named >= NAMED_FLOOR, "named fell below {NAMED_FLOOR}:\n{table}");
}

/// Whether `rules/<id>` is one of the bundled rules.
fn rule_is_bundled(id: &str) -> bool {
    !id.is_empty() && Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules").join(id).is_dir()
}
