//! `pitfall rule new|lint|test|build|publish|approve`: the contributor's
//! flow, from an empty folder to a published rule. One module per
//! subcommand; `source.rs` says what a rule path is (a Rust crate, a C or
//! WAT source, a built module) and how to read its metadata and cases.
//! The checks themselves are the SDK's lint and the engine's loader, the
//! same the registry runs at publish.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

mod build;
mod lint;
mod new;
mod publish;
mod source;
mod test;

pub(crate) use publish::Registry;

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RuleCommand {
    /// Scaffold a rule crate in a new folder: Cargo.toml (the SDK as a
    /// dependency), a documented example rule, rule.json, and matched,
    /// clear, fixed and undetermined cases in tests.json; `--from-report`
    /// and `--error` fill in the reference and a first error signature.
    New(new::NewArgs),
    /// Check a rule's metadata and cases as a reviewer would (the same
    /// checks and messages as `build` and the registry's publish).
    Lint(PathArg),
    /// Run a rule's cases: natively with `cargo test` (Rust crates), then
    /// as wasm in the real engine when a wasm toolchain is present.
    Test(PathArg),
    /// Build the rule's `.wasm` (Rust crate, `.c` or `.wat`), lint it and
    /// check its size and ABI; the module's path is the last line printed.
    Build(build::BuildArgs),
    /// Build (unless given a `.wasm`) and upload the rule, then show the
    /// publish pipeline's result and the rule's URL.
    Publish(publish::PublishArgs),
    /// Approve a pending version (a maintainer's token): checks serve it.
    Approve(publish::ApproveArgs),
}

/// A rule: a crate folder (default: the current one), a `.c`, a `.wat` or a `.wasm`.
#[derive(Debug, clap::Args)]
pub(crate) struct PathArg {
    /// The rule crate's folder, or a `.c`, `.wat` or `.wasm` file.
    #[arg(default_value = ".")]
    path: PathBuf,
}

/// Runs one subcommand. Exit 0 when it passed, 2 when it failed (the
/// message says why: lint issues, failed cases, a refused publish).
pub(crate) fn run(command: &RuleCommand) -> anyhow::Result<ExitCode> {
    match command {
        RuleCommand::New(args) => new::run(args),
        RuleCommand::Lint(args) => lint::run(&args.path),
        RuleCommand::Test(args) => test::run(&args.path),
        RuleCommand::Build(args) => build::run(args),
        RuleCommand::Publish(args) => publish::run(args),
        RuleCommand::Approve(args) => publish::approve(args),
    }
}
