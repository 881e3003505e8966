//! `pitfall rule test [PATH]`: a Rust crate's cases natively (`cargo
//! test`, through the SDK's harness), then every rule's cases as wasm in
//! the real engine (`Engine::run_tests`, what the registry runs at
//! publish) when a toolchain can build it. A failed case prints its
//! manifest, the expected and the actual outcome.

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::Context;
use pitfall_contract::cases::failure_report;

use super::build::build_module;
use super::source::Source;

pub(crate) fn run(path: &Path) -> anyhow::Result<ExitCode> {
    let source = Source::of(path)?;
    if let Source::Crate(dir) = &source {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(&cargo)
            .arg("test")
            .arg("--manifest-path")
            .arg(dir.join("Cargo.toml"))
            .current_dir(dir)
            .status()
            .context("running cargo test")?;
        if !status.success() {
            eprintln!("native: the cases failed (cargo test: {status}); the report is above");
            return Ok(ExitCode::from(2));
        }
        outln!("native: every case passed");
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
