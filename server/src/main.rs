//! `pitfall-server`: the registry. With no subcommand it serves; `admin
//! create-token` makes the first admin's token; `admin bundle-key` prints
//! the public key that verifies its bundles.

use clap::{Parser, Subcommand};
use pitfall_server::Config;

/// A check allocates and frees thousands of small values (the manifest's
/// types, the rules' outputs, the answer), across many threads at once:
/// glibc's allocator was a third of a loaded server's CPU (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use pitfall_server::store::Role;

#[derive(Debug, Parser)]
#[command(name = "pitfall-server", version, about = "The Pitfall registry server")]
struct Cli {
    #[command(flatten)]
    config: Config,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Administration on the database directly.
    #[command(subcommand)]
    Admin(Admin),
}

#[derive(Debug, Subcommand)]
enum Admin {
    /// Create (or reuse) an account and print a new token for it, once.
    CreateToken {
        /// The account's name.
        #[arg(long, default_value = "admin")]
        name: String,
        /// The account's role: contributor, maintainer or admin.
        #[arg(long, default_value = "admin")]
        role: String,
        /// What the token is for.
        #[arg(long, default_value = "created by pitfall-server admin")]
        label: String,
    },
    /// Print the public key that verifies this server's bundles
    /// (`ed25519:...`), for clients to pin (`bundle_public_key` in
    /// `~/.config/pitfall/config.toml`, or `PITFALL_BUNDLE_KEY`).
    BundleKey,
}

fn main() -> std::process::ExitCode {
    pitfall_server::allocator::no_transparent_huge_pages();
    // One worker more than checks may occupy (`pitfall_server::runtime`).
    match pitfall_server::runtime::build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("pitfall-server: starting the runtime: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only for people; log collectors get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => pitfall_server::server::serve(cli.config).await,
        Command::Admin(Admin::CreateToken { name, role, label }) => match role.parse::<Role>() {
            Ok(role) => pitfall_server::server::create_token(&cli.config, &name, role, &label)
                .await
                .map(|token| {
                    // The secret goes to stdout alone, so scripts can capture it;
                    // it is stored hashed and never shown again.
                    println!("{token}");
                }),
            Err(e) => Err(anyhow::anyhow!("--role: {e}")),
        },
        Command::Admin(Admin::BundleKey) => {
            pitfall_server::server::bundle_key(&cli.config).map(|key| println!("{key}"))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pitfall-server: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
