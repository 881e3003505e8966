//! The publish pipeline: size bound → validation (wasm, ABI version,
//! imports, exports, metadata) → compile with a time bound, off the
//! request path → the reviewer's lint of the metadata and test cases (the
//! SDK's `model::lint`: the very checks and messages of `pitfall rule
//! lint`; a metadata issue found at load is answered with the whole lint
//! too) → the module's embedded test cases in the engine, all of which
//! must pass. Only then is a version stored (as pending, by the caller). Each
//! refusal names its step, so a contributor knows what to fix.

use std::sync::Arc;
use std::time::Instant;

use pitfall_contract::cases::CaseResult;
use pitfall_contract::lint;
use pitfall_engine::{Engine, LoadError, Rule};
use serde::Serialize;

/// A module refused by the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{step}: {message}")]
pub struct Refused {
    /// The step that refused it: `size`, `validation`, `abi`, `imports`,
    /// `exports`, `limits`, `complexity`, `metadata`, `compile`, `tests`.
    pub step: &'static str,
    /// Why, for the contributor.
    pub message: String,
}

impl From<LoadError> for Refused {
    fn from(e: LoadError) -> Refused {
        let step = e.step();
        // LoadError's text starts with its step already; keep the reason.
        let text = e.to_string();
        let message =
            text.strip_prefix(step).and_then(|t| t.strip_prefix(": ")).unwrap_or(&text).to_owned();
        Refused { step, message }
    }
}

/// What the pipeline measured, stored with the version for reviewers.
#[derive(Debug, Clone, Serialize)]
pub struct PublishReport {
    /// The module's size in bytes.
    pub module_bytes: usize,
    /// The module's sha256 (hex).
    pub sha256: String,
    /// The ABI version the module declares.
    pub abi_version: u32,
    /// Validation plus compilation, in microseconds (a cache hit is fast).
    pub load_us: u64,
    /// Running all embedded cases, in microseconds.
    pub tests_us: u64,
    /// Each embedded case and its result.
    pub tests: Vec<CaseReport>,
}

/// One embedded case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What was expected.
    pub expected: String,
    /// What happened.
    pub actual: String,
}

impl From<&CaseResult> for CaseReport {
    fn from(c: &CaseResult) -> CaseReport {
        CaseReport {
            name: c.name.clone(),
            passed: c.passed,
            expected: c.expected.clone(),
            actual: c.actual.clone(),
        }
    }
}

/// A module that passed every step.
#[derive(Debug)]
pub struct Accepted {
    /// The loaded rule (compiled, in this process's cache).
    pub rule: Arc<Rule>,
    /// What the pipeline measured.
    pub report: PublishReport,
}

/// Runs the pipeline on blocking threads (compilation and tests are CPU
/// work and must not hold an async worker).
pub async fn assess(engine: &Engine, bytes: Arc<[u8]>) -> Result<Accepted, Refused> {
    let limit = engine.limits().max_module_bytes;
    if bytes.len() > limit {
        return Err(LoadError::TooLarge { size: bytes.len(), limit }.into());
    }
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || assess_blocking(&engine, &bytes)).await.map_err(|e| {
        Refused { step: "compile", message: format!("the pipeline task failed: {e}") }
    })?
}

/// The pipeline on the calling thread.
pub fn assess_blocking(engine: &Engine, bytes: &[u8]) -> Result<Accepted, Refused> {
    let start = Instant::now();
    let rule = match engine.load(bytes) {
        Ok(rule) => Arc::new(rule),
        // The engine lints the metadata only; answer with the whole lint
        // (cases too), as `pitfall rule lint` prints it.
        Err(e @ LoadError::Metadata(_)) => {
            return Err(lint_refusal(bytes).unwrap_or_else(|| e.into()));
        }
        Err(e) => return Err(e.into()),
    };
    // The module's metadata and cases are already parsed, in the rule.
    if let Some(refused) = refusal(lint::lint(&rule.info.meta, &rule.info.tests)) {
        return Err(refused);
    }
    let load_us = micros(start);
    let start = Instant::now();
    let results = engine.run_tests(&rule);
    let tests_us = micros(start);
    let failed: Vec<String> = results
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} (expected {}, got {})", c.name, c.expected, c.actual))
        .collect();
    if !failed.is_empty() {
        return Err(Refused {
            step: "tests",
            message: format!(
                "{} of {} embedded cases failed: {}",
                failed.len(),
                results.len(),
                failed.join("; ")
            ),
        });
    }
    let report = PublishReport {
        module_bytes: rule.size,
        sha256: rule.sha256.clone(),
        abi_version: rule.info.abi_version,
        load_us,
        tests_us,
        tests: results.iter().map(CaseReport::from).collect(),
    };
    Ok(Accepted { rule, report })
}

/// The reviewer's lint of a module the engine refused for its metadata,
/// read from its sections; none when it passes or the sections cannot be
/// read (the engine's own error says why).
fn lint_refusal(bytes: &[u8]) -> Option<Refused> {
    let (meta, cases) = pitfall_engine::inspect::embedded(bytes).ok()?;
    refusal(lint::lint(&meta, &cases))
}

/// The reviewer's lint (the SDK's `model::lint`, what `pitfall rule lint`
/// runs) as a refusal of step `metadata`, when it found anything.
fn refusal(issues: Vec<lint::LintIssue>) -> Option<Refused> {
    (!issues.is_empty()).then(|| Refused { step: "metadata", message: lint::summary(&issues) })
}

fn micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}
