//! `pitfall` as users run it: exit codes, output shapes, and the findings
//! for the shared fixture manifests (golden files in tests/golden; rerun
//! with `PITFALL_BLESS=1` to rewrite them after an intended change, then
//! review the diff).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn pitfall(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pitfall")).args(args).output().expect("pitfall runs")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests")
}

fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

fn check_json(path: &str) -> (i32, Value) {
    let out = pitfall(&["check", path, "--format", "json"]);
    let code = out.status.code().expect("exit code");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    (code, json)
}

fn ids(answer: &Value, severity: &str) -> Vec<String> {
    answer["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| f["rule_id"].as_str().expect("rule_id").to_owned())
        .collect()
}

/// The lines a golden file holds: exit code, then findings by severity.
fn summary(code: i32, answer: &Value) -> String {
    let mut out = format!("exit: {code}\n");
    for severity in ["error", "warning", "info"] {
        for id in ids(answer, severity) {
            out.push_str(&format!("{severity}: {id}\n"));
        }
    }
    for u in answer["undetermined"].as_array().expect("undetermined") {
        out.push_str(&format!("undetermined: {}\n", u["rule_id"].as_str().expect("id")));
    }
    out
}

#[test]
fn fixture_manifests_match_their_golden_findings() {
    let bless = std::env::var_os("PITFALL_BLESS").is_some();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut names: Vec<_> = std::fs::read_dir(fixtures())
        .expect("fixtures beside the repo")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 3);
    let mut mismatches = String::new();
    for name in names {
        let (code, answer) = check_json(&fixture(&name));
        assert!(answer["rule_errors"].as_array().expect("rule_errors").is_empty(), "{name}: {answer}");
        let actual = summary(code, &answer);
        let golden = golden_dir.join(name.replace(".json", ".txt"));
        if bless {
            std::fs::write(&golden, &actual).expect("golden written");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            mismatches.push_str(&format!("{name}:\n--- expected\n{expected}--- actual\n{actual}\n"));
        }
    }
    assert!(mismatches.is_empty(), "findings changed (PITFALL_BLESS=1 to accept):\n{mismatches}");
}

#[test]
fn g5g_field_report_setup_fails_with_the_three_known_errors() {
    let (code, answer) = check_json(&fixture("g5g-gemma4-vllm0271.json"));
    assert_eq!(code, 1);
    let errors = ids(&answer, "error");
    for id in ["aarch64-official-image-needs-sm80", "vllm-bf16-needs-sm80", "vllm-heterogeneous-head-dim"] {
        assert!(errors.contains(&id.to_owned()), "missing {id} in {errors:?}");
    }
    for f in answer["findings"].as_array().expect("findings").iter().filter(|f| f["severity"] == "error") {
        assert!(!f["remedies"].as_array().expect("remedies").is_empty(), "{}: no remedies", f["rule_id"]);
        assert!(!f["references"].as_array().expect("references").is_empty(), "{}: no references", f["rule_id"]);
        assert!(!f["error_signatures"].as_array().expect("sigs").is_empty(), "{}: no error text", f["rule_id"]);
    }
}

#[test]
fn healthy_h100_stack_exits_zero() {
    let (code, answer) = check_json(&fixture("h100x8-llama70b-healthy.json"));
    assert_eq!(code, 0, "{answer}");
    assert!(ids(&answer, "error").is_empty());
}

#[test]
fn a6000_weights_do_not_fit_and_the_registry_says_what_it_assumed() {
    let (code, answer) = check_json(&fixture("a6000-llama70b-single.json"));
    assert_eq!(code, 1);
    assert!(ids(&answer, "error").contains(&"weights-exceed-vram".to_owned()));
    let enriched = answer["enriched"].as_array().expect("enriched values listed");
    let cc = enriched.iter().find(|e| e["path"] == "accelerators.0.compute_capability").expect("cc enriched");
    assert_eq!(cc["value"], "8.6");
    assert_eq!(cc["source"], "enriched");
}

#[test]
fn text_output_groups_by_severity_with_remedies() {
    let out = pitfall(&["check", &fixture("g5g-gemma4-vllm0271.json")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let first_warning = text.find("\nWARNING").expect("warnings shown");
    let last_error = text.rfind("\nERROR").expect("errors shown");
    assert!(last_error < first_warning, "errors come before warnings");
    assert!(text.contains("Fix 1:") && text.contains("-> vllm: add --dtype half"), "{text}");
    assert!(text.contains("What you would see:"));
}

#[test]
fn invalid_manifests_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("wrong-type.json", r#"{"manifest_version":1,"accelerators":[{"count":"two"}]}"#, "accelerators[0].count"),
        ("version.json", r#"{"manifest_version":2}"#, "manifest_version"),
        ("no-version.json", r#"{"host":{}}"#, "manifest_version"),
        ("not-json.json", "{nope", "not valid JSON"),
        ("array.json", "[]", "JSON object"),
    ];
    for (name, body, mentions) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).expect("written");
        let out = pitfall(&["check", &path.display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(mentions), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout on failure");
    }
    let out = pitfall(&["check", "/no/such/manifest.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rules_from_a_file_or_a_folder_and_bad_modules_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bf16 = pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == "rule-vllm-bf16-needs-sm80")
        .expect("bf16 rule bundled");
    let file = dir.path().join("bf16.wasm");
    std::fs::write(&file, bf16.wasm).expect("written");
    let out = pitfall(&["check", &fixture("g5g-gemma4-vllm0271.json"), "--rules", &file.display().to_string(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(ids(&answer, "error"), vec!["vllm-bf16-needs-sm80".to_owned()]);
    assert_eq!(answer["stats"]["rules_total"], 1);

    let out = pitfall(&["check", &fixture("g5g-gemma4-vllm0271.json"), "--rules", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(1));

    std::fs::write(dir.path().join("broken.wasm"), b"\0asm\x01\0\0\0garbage").expect("written");
    let out = pitfall(&["check", &fixture("g5g-gemma4-vllm0271.json"), "--rules", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.wasm"));
}

#[test]
fn manifest_from_standard_input() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pitfall"))
        .args(["check", "-", "--format", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&std::fs::read(fixtures().join("h100x8-llama70b-healthy.json")).expect("fixture"))
        .expect("written");
    let out = child.wait_with_output().expect("finishes");
    assert_eq!(out.status.code(), Some(0));
}
