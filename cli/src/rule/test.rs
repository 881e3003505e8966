//! `pitfall rule test [PATH]`: a Rust crate's cases natively (`cargo
//! test`, through the SDK's harness), then every rule's cases as wasm in
//! the real engine (`Engine::run_tests`, what the registry runs at
//! publish) when a toolchain can build it. A failed case prints its
//! manifest, the expected and the actual outcome.

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::Context;
use pitfall_contract::cases::{case_lines, failure_report};

use super::build::build_module;
use super::source::Source;

pub(crate) fn run(path: &Path) -> anyhow::Result<ExitCode> {
    let source = Source::of(path)?;
    if let Source::Crate(dir) = &source {
        let (_, cases) = source.embedded()?;
        eprintln!("{}", native_plan(dir));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        // cargo's own lines go to stderr as they come; the test binary's
        // report is passed on to stderr too, read to see that the cases
        // really ran (without the SDK's `testing` feature there is no
        // test to run, and cargo test passes with nothing done).
        let output = Command::new(&cargo)
            .arg("test")
            .arg("--manifest-path")
            .arg(dir.join("Cargo.toml"))
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running cargo test")?;
        let report = String::from_utf8_lossy(&output.stdout);
        eprint!("{report}");
        if !output.status.success() {
            eprintln!(
                "native: the cases failed (cargo test: {}); the report is above",
                output.status
            );
            return Ok(ExitCode::from(2));
        }
        if report.contains("embedded_cases_pass_natively ... ok") {
            outln!("native: {} cases passed (cargo test)", cases.len());
        } else {
            outln!(
                "native: no case ran (cargo test has no embedded_cases_pass_natively: give pitfall-sdk its `testing` feature under [dev-dependencies])"
            );
        }
        if pitfall_wasm_build::detect().is_none() {
            outln!(
                "wasm: skipped, no wasm32 toolchain (rustup's wasm32-unknown-unknown target, or `apt-get install -y {}`)",
                pitfall_wasm_build::DEBIAN_PACKAGES.join(" ")
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    let module = build_module(&source, None)?;
    let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
    let engine = crate::rules::engine()?;
    let rule = engine
        .load(&bytes)
        .with_context(|| format!("{}: refused by the engine", module.display()))?;
    let results = engine.run_tests(&rule);
    outln!("wasm: the cases of {} {} in the engine:", rule.id(), rule.meta().version);
    out!("{}", case_lines(&results));
    let report = failure_report(rule.id(), &results);
    if !report.is_empty() {
        eprint!("{report}");
        let failed = results.iter().filter(|r| !r.passed).count();
        eprintln!("wasm: {failed} of {} cases failed in the engine", results.len());
        return Ok(ExitCode::from(2));
    }
    outln!(
        "wasm: {} of {} cases passed in the engine ({})",
        results.len(),
        results.len(),
        module.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What `cargo test` is about to compile, when it is the crate's first
/// run: the test harness is most of the time of a first `rule test`.
fn native_plan(dir: &Path) -> String {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| dir.join("target"), std::path::PathBuf::from);
    if target.join("debug").is_dir() {
        return "native: cargo test (the harness is built)".into();
    }
    format!(
        "native: cargo test, the first run in {}:\n  compiling the SDK's native test harness (pitfall-sdk with the registry's contract\n  code, fact tables and serde) and the rule; later runs reuse all but the rule",
        target.display()
    )
}
