//! The native test harness: runs a rule's embedded cases as plain Rust,
//! through the same host-call semantics ([`pitfall_contract::session`]) and the
//! same case logic ([`pitfall_contract::cases`]) as the registry's engine.
//!
//! `export_rule!` generates a `#[test]` that calls [`assert_cases_pass`], so
//! `cargo test` on a rule crate runs its `tests.json`.

use std::cell::RefCell;

use pitfall_contract::Prepared;
use pitfall_contract::cases::{CaseResult, Evaluation, failure_report, run_cases};
use pitfall_contract::meta::{RuleMeta, TestCase};
use pitfall_contract::report::{RawOutcome, render};
use pitfall_contract::selector::Selector;
use pitfall_contract::session::Session;

/// The output budget natively: the engine's default, so a rule that is too
/// chatty fails its tests before it fails in the registry.
pub const NATIVE_OUTPUT_LIMIT: usize = 64 * 1024;

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
    /// The first ABI violation of the evaluation, as the engine words it.
    static OUTPUT_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The ABI calls, natively (what `crate::abi` uses off wasm).
pub mod native {
    use super::{OUTPUT_ERROR, SESSION};
    use pitfall_contract::session::Session;

    fn with<R>(f: impl FnOnce(&mut Session) -> R) -> R {
        SESSION.with(|s| {
            let mut s = s.borrow_mut();
            let session = s
                .as_mut()
                .expect("pitfall-sdk: a rule's evaluate ran outside the test harness (use pitfall_sdk::testing)");
            f(session)
        })
    }

    fn record<T: Default, E: std::fmt::Display>(call: &str, result: Result<T, E>) -> T {
        result.unwrap_or_else(|e| {
            OUTPUT_ERROR.with(|slot| {
                slot.borrow_mut().get_or_insert_with(|| format!("{call}: {e}"));
            });
            T::default()
        })
    }

    /// See [`crate::abi`].
    pub fn field_kind(path: &str) -> i32 {
        with(|s| s.field_kind(path.as_bytes()))
    }
    /// See [`crate::abi`].
    pub fn field_len(path: &str) -> Option<usize> {
        with(|s| usize::try_from(s.field_len(path.as_bytes())).ok())
    }
    /// See [`crate::abi`].
    pub fn field_num(path: &str) -> Option<f64> {
        with(|s| Some(s.field_num(path.as_bytes())).filter(|n| !n.is_nan()))
    }
    /// See [`crate::abi`].
    pub fn field_str(path: &str) -> Option<String> {
        with(|s| s.field_str(path.as_bytes()).ok().map(std::borrow::Cow::into_owned))
    }
    /// See [`crate::abi`].
    pub fn evidence(path: &str) {
        record("evidence", with(|s| s.evidence(path.as_bytes())));
    }
    /// See [`crate::abi`].
    pub fn missing(path: &str) {
        record("missing", with(|s| s.missing(path.as_bytes())));
    }
    /// See [`crate::abi`].
    pub fn param(key: &str, value: &str) {
        record("param", with(|s| s.param(key.as_bytes(), value.as_bytes())));
    }
    /// See [`crate::abi`].
    pub fn param_field(key: &str, path: &str) {
        record("param_field", with(|s| s.param_field(key.as_bytes(), path.as_bytes())));
    }
    /// See [`crate::abi`].
    pub fn version_in(path: &str, spec: &str) -> i32 {
        record("version_in", with(|s| s.version_in(path.as_bytes(), spec.as_bytes())))
    }
    /// See [`crate::abi`].
    pub fn text_contains(path: &str, needle: &str) -> i32 {
        with(|s| s.text_contains(path.as_bytes(), needle.as_bytes()))
    }
    /// See [`crate::abi`].
    pub fn remedy(index: u32) {
        record("remedy", with(|s| s.remedy(index)));
    }
}

/// Evaluates a rule natively on a prepared manifest. `evaluate` is the
/// rule's exported entry (what `pitfall_evaluate` runs on wasm).
pub fn evaluate_native(
    meta: &RuleMeta,
    prepared: &Prepared,
    evaluate: &dyn Fn() -> i32,
) -> Evaluation {
    SESSION.with(|s| {
        *s.borrow_mut() = Some(Session::new(prepared.fields.clone(), NATIVE_OUTPUT_LIMIT))
    });
    OUTPUT_ERROR.with(|e| *e.borrow_mut() = None);
    let code = evaluate();
    let mut session = SESSION.with(|s| s.borrow_mut().take()).expect("session set above");
    if let Some(e) = OUTPUT_ERROR.with(|e| e.borrow_mut().take()) {
        return Evaluation::Failed(format!("ABI violation: {e}"));
    }
    let raw = session.take_output();
    match RawOutcome::from_code(code) {
        Some(RawOutcome::Clear) => Evaluation::Clear,
        Some(RawOutcome::Undetermined) => Evaluation::Undetermined(raw.missing),
        Some(RawOutcome::Matched) => match render(meta, &raw, &prepared.fields) {
            Ok(f) => Evaluation::Matched(Box::new(f.into())),
            Err(e) => Evaluation::Failed(format!("malformed output: {e}")),
        },
        None => Evaluation::Failed(format!(
            "malformed output: pitfall_evaluate returned {code}, not 0, 1 or 2"
        )),
    }
}

/// Runs the embedded cases natively and returns each result. Selectors
/// that do not parse count as holding (the metadata lint reports them).
pub fn run_native(
    meta: &RuleMeta,
    cases: &[TestCase],
    evaluate: &dyn Fn() -> i32,
) -> Vec<CaseResult> {
    let selectors: Vec<Selector> =
        meta.applies_to.iter().filter_map(|s| Selector::parse(s).ok()).collect();
    run_cases(&selectors, cases, &mut |prepared| evaluate_native(meta, prepared, evaluate))
}

/// Runs the embedded cases natively and panics with a readable report if
/// any fails (this is the `#[test]` that `export_rule!` generates).
pub fn assert_cases_pass(meta_json: &[u8], tests_json: &[u8], evaluate: &dyn Fn() -> i32) {
    let (meta, cases) = pitfall_contract::meta::parse_embedded(meta_json, tests_json)
        .unwrap_or_else(|e| panic!("{e}"));
    // The same lint the engine applies at load: a rule that passes here
    // is not refused there for its metadata.
    let problems = meta.problems();
    assert!(problems.is_empty(), "rule.json would be refused:\n  {}", problems.join("\n  "));
    let results = run_native(&meta, &cases, evaluate);
    // Shown by `cargo test` when the test fails (or with --nocapture).
    print!("{}", pitfall_contract::cases::case_lines(&results));
    let report = failure_report(&meta.id, &results);
    assert!(report.is_empty(), "embedded test cases failed:\n{report}");
}
