//! `pitfall`: describe a machine as a manifest (`scan`), check manifests
//! against the known breakages (`check`, online or offline, one or a
//! fleet), keep the registry's signed rule bundle (`bundle pull`), and
//! write rules (`rule new|lint|test|build|publish`), and find the nearest
//! configuration that passes (`fix`).
//!
//! Exit codes (the contract provisioning tools rely on): 0 no error-severity
//! finding, 1 at least one, 2 the command itself failed (unreadable or
//! invalid input, unloadable rules); 141 when the reader of standard output
//! went away (SIGPIPE's status: `pitfall check m.json | head -1`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

/// `print!` that ends the command quietly on a broken pipe (see `stdout`).
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!($($arg)*)) };
}

/// `println!` that ends the command quietly on a broken pipe (see `stdout`).
macro_rules! outln {
    () => { $crate::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}

mod bundle;
mod catalogue;
mod check;
mod config;
mod explain;
mod fix;
mod progress;
mod rule;
mod rules;
mod sarif;
mod scan;
mod shell;
mod stdout;
mod text;
mod watch;

/// Known breakages of ML infrastructure, checked before you deploy.
#[derive(Debug, Parser)]
#[command(name = "pitfall", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Describe this machine (or captured outputs of its tools) as a manifest v1.
    Scan(Box<scan::command::ScanArgs>),
    /// Check a manifest (a file, or `-` for standard input), or many with
    /// --batch, against the rules: online with --server (or PITFALL_SERVER),
    /// else offline with --rules, else the pulled bundle, else the rules
    /// built into this binary.
    Check(CheckArgs),
    /// The nearest configuration that passes: the cheapest remedies that
    /// clear every error, with the patched manifest and the commands.
    /// Offline, with the rules `check` uses offline. Exit 0 when a plan
    /// clears every error, 1 when none does, 2 on bad input.
    Fix(fix::FixArgs),
    /// Explain a pasted log (a file, or `-` for standard input): the known
    /// breakages whose error text it holds, with the matched lines and the
    /// fix. Exit 1 when one explains it, 0 when none does, 2 on bad input.
    Explain(explain::ExplainArgs),
    /// Pull (or show) the registry's signed rule bundle for offline checks.
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
    /// Write a rule: new, lint, test, build, publish (and approve).
    #[command(subcommand)]
    Rule(rule::RuleCommand),
    /// Watch manifests on a registry: notified by webhook when a new rule
    /// matches them, or a yank clears them (add, list, show, rm,
    /// deliveries, test).
    #[command(subcommand)]
    Watch(watch::WatchCommand),
    /// Print the JSON Schema of manifest v1.
    Schema,
    /// List the rules (those built into this binary, or --rules): each
    /// one's component, sources and the date its boundaries were checked.
    Catalogue(catalogue::CatalogueArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or
    /// powershell (e.g. `pitfall completions bash > /etc/bash_completion.d/pitfall`).
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a
    /// folder with --dir (`pitfall.1`, `pitfall-check.1`, ...).
    Man(shell::ManArgs),
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For people: findings grouped by severity, with remedies.
    Text,
    /// The /v1/check answer.
    Json,
}

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    /// For people: findings grouped by severity, with remedies.
    Text,
    /// The /v1/check answer (with --batch: `{"results": [...]}`); its
    /// schema is served at /v1/schemas/check.json.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and GitLab: a result per
    /// finding, located in the manifest.
    Sarif,
}

/// The least severity that makes `check` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// A warning or an error.
    Warning,
    /// An error.
    Error,
}

impl FailOn {
    fn as_str(self) -> &'static str {
        match self {
            FailOn::Warning => "warning",
            FailOn::Error => "error",
        }
    }
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// The manifest (JSON, manifest v1), or `-` for standard input.
    #[arg(required_unless_present = "batch")]
    manifest: Option<PathBuf>,
    /// Check these manifests (a fleet): online through /v1/check/batch in
    /// batches the server accepts, offline one after another. Exit 2 if any
    /// could not be checked, else 1 if any fails --fail-on.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    batch: Vec<PathBuf>,
    /// Check online with this registry (default: PITFALL_SERVER, unless
    /// --rules is given).
    #[arg(long, value_name = "URL", conflicts_with = "rules")]
    server: Option<String>,
    /// Check offline with these rules: a `.wasm` file, a folder of them, or
    /// a signed bundle (verified with the pinned key).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: CheckFormat,
    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// Print nothing on stdout: the exit code is the answer (failures
    /// still go to stderr).
    #[arg(long, short)]
    quiet: bool,
    /// Show progress on stderr even when it is not a terminal.
    #[arg(long)]
    progress: bool,
    /// Offline with a signed bundle: exit 2 if it is past its signed expiry
    /// (otherwise a warning on stderr).
    #[arg(long)]
    require_fresh: bool,
    /// Online only: answer as the registry did at this ruleset revision
    /// (`GET /v1/revisions` lists them), with the rules it served then.
    #[arg(long, value_name = "N", conflicts_with = "rules")]
    revision: Option<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scan(args) => scan::command::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Fix(args) => fix::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Bundle(command) => bundle::run(&command),
        Command::Rule(command) => rule::run(&command),
        Command::Watch(command) => watch::run(&command),
        Command::Catalogue(args) => catalogue::run(&args),
        Command::Completions(args) => shell::completions(&args, &mut Cli::command()),
        Command::Man(args) => shell::man(&args, &Cli::command()),
        Command::Schema => {
            let schema = pitfall_contract::manifest_schema();
            serde_json::to_string_pretty(&schema)
                .map(|s| {
                    outln!("{s}");
                    ExitCode::SUCCESS
                })
                .map_err(anyhow::Error::from)
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("pitfall: error: {e:#}");
        ExitCode::from(2)
    })
}
