//! The reviewer's lint, data-driven: each file of `tests/lint/` changes
//! the C example's metadata (`meta`: top-level fields replaced) or its
//! cases (`drop_expect`: remove the cases of one kind; `fixed_from`: point
//! the fixed case elsewhere) and lists the issues expected, in order, as
//! `[code, field, message]`.

use std::path::{Path, PathBuf};

use pitfall_contract::lint::lint;
use pitfall_contract::meta::{RuleMeta, TestCase};
use serde_json::Value;

fn read(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn each_lint_case_reports_exactly_its_issues() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let example = root.join("../sdk/examples/c-vllm-cc-floor");
    let base_meta = read(&example.join("rule.json"));
    let base_tests = read(&example.join("tests.json"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/lint"))
        .expect("tests/lint")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the lint cases are missing: {files:?}");
    let mut failures = Vec::new();
    for file in &files {
        let case = read(file);
        let mut meta = base_meta.clone();
        for (key, value) in case["meta"].as_object().expect("meta") {
            meta[key] = value.clone();
        }
        let mut tests: Vec<Value> = base_tests.as_array().expect("cases").clone();
        if let Some(kind) = case["drop_expect"].as_str() {
            tests.retain(|t| t["expect"] != kind);
        }
        if let Some(from) = case["fixed_from"].as_str() {
            for t in tests.iter_mut().filter(|t| t["expect"] == "fixed") {
                t["from"] = Value::from(from);
            }
        }
        let meta: RuleMeta = serde_json::from_value(meta).expect("metadata");
        let tests: Vec<TestCase> = serde_json::from_value(Value::Array(tests)).expect("cases");
        let actual: Vec<Value> = lint(&meta, &tests)
            .into_iter()
            .map(|i| serde_json::json!([i.code, i.field, i.message]))
            .collect();
        if Value::Array(actual.clone()) != case["issues"] {
            failures.push(format!(
                "{} ({}):\n  expected {}\n  actual   {}",
                file.display(),
                case["about"].as_str().unwrap_or(""),
                case["issues"],
                Value::Array(actual)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
