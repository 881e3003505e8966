//! Package names as the host keys them, data-driven: each file of
//! `tests/package_names/` lists manifests' packages and what must hold of
//! them, by every path a rule, a selector or a remedy takes to a package:
//! the keys (`packages_with_keys`), the fields at `packages.NAME.*` (a
//! missing one as `null`), selectors, and remedy actions applied (the
//! packages `after` them, as name, version and ecosystem).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pitfall_contract::actions::{Action, apply_all};
use pitfall_contract::fields::FieldMap;
use pitfall_contract::manifest::Package;
use pitfall_contract::normalize::normalize;
use pitfall_contract::selector::Selector;
use pitfall_contract::{Manifest, manifest_from_value};
use serde_json::{Value, json};

fn read(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn manifest(packages: &Value) -> Manifest {
    let mut manifest = manifest_from_value(json!({"manifest_version": 1, "packages": packages}))
        .expect("a manifest of packages");
    normalize(&mut manifest);
    manifest
}

fn brief(packages: &[Package]) -> Value {
    packages
        .iter()
        .map(|p| json!({"name": p.name, "version": p.version, "ecosystem": p.ecosystem}))
        .collect()
}

/// What is wrong with one case, one line per problem.
fn check(case: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |what: String, got: Value, want: &Value| {
        if &got != want {
            problems.push(format!("{what}: got {got}, want {want}"));
        }
    };
    let m = manifest(&case["packages"]);
    let fields = FieldMap::new(Arc::new(m.clone()), &Default::default());
    if let Some(keys) = case.get("keys") {
        let got: Vec<&str> = fields.packages_with_keys().map(|(_, key)| key).collect();
        expect("keys".into(), json!(got), keys);
    }
    for (path, want) in case["fields"].as_object().into_iter().flatten() {
        let got = fields.get(path).and_then(|f| f.text.map(|t| t.into_owned()));
        expect(path.clone(), json!(got), want);
        let by_bytes =
            fields.get_bytes(path.as_bytes()).and_then(|f| f.text.map(|t| t.into_owned()));
        expect(format!("{path} (as bytes)"), json!(by_bytes), want);
    }
    for (text, want) in case["selectors"].as_object().into_iter().flatten() {
        let selector = Selector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        expect(text.clone(), json!(selector.holds(&m)), want);
    }
    if let Some(actions) = case.get("actions") {
        let actions: Vec<Action> = serde_json::from_value(actions.clone()).expect("actions");
        let mut after = m.clone();
        match apply_all(&mut after, &actions) {
            Ok(()) => expect("after the actions".into(), brief(&after.packages), &case["after"]),
            Err(e) => problems.push(format!("actions: {e}")),
        }
    }
    problems
}

#[test]
fn each_spelling_of_a_package_finds_it_by_every_path() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/package_names");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    let mut failures = Vec::new();
    for file in &files {
        let cases = read(file);
        let cases = cases["cases"].as_array().expect("cases");
        assert!(!cases.is_empty(), "{}: no cases", file.display());
        for case in cases {
            for problem in check(case) {
                failures.push(format!("{} ({}): {problem}", file.display(), case["about"]));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
