//! `pitfall`: describe a machine as a manifest (`scan`) and check a
//! manifest against the known breakages (`check`).
//!
//! Exit codes (the contract provisioning tools rely on): 0 no error-severity
//! finding, 1 at least one, 2 the command itself failed (unreadable or
//! invalid input, unloadable rules).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

mod check;
mod rules;
mod scan;
mod text;

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
    /// Check a manifest (a file, or `-` for standard input) against the rules.
    Check(CheckArgs),
    /// Print the JSON Schema of manifest v1.
    Schema,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For people: findings grouped by severity, with remedies.
    Text,
    /// The /v1/check answer.
    Json,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// The manifest (JSON, manifest v1), or `-` for standard input.
    manifest: PathBuf,
    /// Rules to use instead of the bundled ones: a `.wasm` file or a folder of them.
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scan(args) => scan::command::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Schema => {
            let schema = pitfall_sdk::model::manifest_schema();
            serde_json::to_string_pretty(&schema)
                .map(|s| {
                    println!("{s}");
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
