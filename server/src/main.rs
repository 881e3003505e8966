//! `pitfall-server`: the registry. With no subcommand it serves; `admin
//! create-token` makes the first admin's token; `admin bundle-key` prints
//! the public key that verifies its bundles; `admin secret-key` makes the
//! key that seals watch secrets, `admin secret-key rotate` replaces it;
//! `config check FILE` validates
//! a config file; `probe` asks a running server whether it is ready (the
//! container image's health check).

use clap::{CommandFactory, Parser, Subcommand};
use pitfall_server::Config;

/// A check allocates and frees thousands of small values (the manifest's
/// types, the rules' outputs, the answer), across many threads at once:
/// glibc's allocator was a third of a loaded server's CPU (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use pitfall_server::store::{Role, Scope, Scopes, TokenGrant};

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
    /// The config file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Ask the server at --listen (an unspecified address as loopback)
    /// whether it is ready (`GET /readyz`): exit 0 if so, 1 if not. The
    /// container image's HEALTHCHECK, which has no HTTP client of its own.
    Probe,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate a config file: every key a setting (the long flags'
    /// names), every value one its flag accepts. Exit 0 if valid, 2 with
    /// the first problem if not.
    Check {
        /// The TOML file.
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum Admin {
    /// Create (or reuse) an account and print a new token for it, once.
    CreateToken {
        /// The account's name.
        #[arg(long, default_value = "admin")]
        name: String,
        /// The account's role: contributor, maintainer or admin. An
        /// existing account must already have it, unless --set-role.
        #[arg(long)]
        role: String,
        /// Change an existing account's role to --role.
        #[arg(long)]
        set_role: bool,
        /// What the token may be used for (check, publish, review, admin;
        /// repeat or comma-separate). Default: everything the role allows.
        #[arg(long = "scope", value_delimiter = ',')]
        scopes: Vec<String>,
        /// Days until the token stops authenticating. Default: never.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires_in_days: Option<u32>,
        /// What the token is for.
        #[arg(long, default_value = "created by pitfall-server admin")]
        label: String,
    },
    /// Print the public key that verifies this server's bundles
    /// (`ed25519:...`), for clients to pin (`bundle_public_key` in
    /// `~/.config/pitfall/config.toml`, or `PITFALL_BUNDLE_KEY`).
    BundleKey,
    /// Make the key that seals watch secrets in the database, if the data
    /// dir has none (`watch-secret-key`, mode 0600), or check
    /// --secret-key-file's; print the file's path, never the key. Replicas
    /// of one registry read one such file (--secret-key-file).
    SecretKey {
        #[command(subcommand)]
        action: Option<SecretKeyAction>,
    },
}

#[derive(Debug, Subcommand)]
enum SecretKeyAction {
    /// Replace the key: the key file's key moves to the same path with
    /// `.previous` appended, and a fresh key takes its place (each file
    /// replaced whole, mode 0600). Servers read both: the new key seals,
    /// the previous one still opens what it sealed, and each start
    /// re-seals those secrets under the new key; a server started before
    /// reads the files again when it meets the new key. Then restart every
    /// server. Refused while the last rotation is not finished (a secret
    /// not yet re-sealed). Reads the database: run it with the servers'
    /// DATABASE_URL. Prints the new key's id.
    Rotate,
}

/// A token's scopes and expiry from `create-token`'s flags.
fn grant(scopes: &[String], expires_in_days: Option<u32>) -> anyhow::Result<TokenGrant> {
    let scopes = if scopes.is_empty() {
        Scopes::ALL
    } else {
        let parsed: Result<Vec<Scope>, _> = scopes.iter().map(|s| s.trim().parse()).collect();
        Scopes::of(parsed.map_err(|e| anyhow::anyhow!("--scope: {e}"))?)
    };
    let expires_at = expires_in_days.map(|days| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        now + i64::from(days) * 86_400_000
    });
    Ok(TokenGrant { expires_at, scopes })
}

fn main() -> std::process::ExitCode {
    pitfall_server::allocator::no_transparent_huge_pages();
    // Flags, then the environment, then the config file, then defaults.
    let cli: Cli = match pitfall_server::config_file::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Some(Command::Config(ConfigCommand::Check { file })) => {
            return match pitfall_server::config_file::check(Cli::command(), &file) {
                Ok(settings) => {
                    println!("{}: valid ({settings} settings)", file.display());
                    std::process::ExitCode::SUCCESS
                }
                Err(e) => e.exit(),
            };
        }
        Some(Command::Probe) => {
            return match pitfall_server::probe::ready(cli.config.listen) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(why) => {
                    eprintln!("pitfall-server probe: {why}");
                    std::process::ExitCode::from(1)
                }
            };
        }
        _ => {}
    }
    init_logging(cli.config.log_format);
    // One worker more than checks may occupy (`pitfall_server::runtime`).
    match pitfall_server::runtime::build() {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(e) => {
            eprintln!("pitfall-server: starting the runtime: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Log lines to stderr, filtered by `RUST_LOG` (default `info`), as text
/// or as one JSON object a line.
fn init_logging(format: pitfall_server::LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        pitfall_server::LogFormat::Text => builder
            // Colour only for people; log collectors get plain text.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        pitfall_server::LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(true).with_span_list(false).init()
        }
    }
}

async fn run(cli: Cli) -> std::process::ExitCode {
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => pitfall_server::server::serve(cli.config).await,
        Command::Admin(Admin::CreateToken {
            name,
            role,
            set_role,
            scopes,
            expires_in_days,
            label,
        }) => match (role.parse::<Role>(), grant(&scopes, expires_in_days)) {
            (Ok(role), Ok(grant)) => {
                pitfall_server::server::create_token(
                    &cli.config,
                    &name,
                    role,
                    &label,
                    set_role,
                    grant,
                )
                .await
                .map(|token| {
                    // The secret goes to stdout alone, so scripts can capture
                    // it; it is stored hashed and never shown again.
                    println!("{token}");
                })
            }
            (Err(e), _) => Err(anyhow::anyhow!("--role: {e}")),
            (_, Err(e)) => Err(e),
        },
        Command::Admin(Admin::BundleKey) => {
            pitfall_server::server::bundle_key(&cli.config).map(|key| println!("{key}"))
        }
        Command::Admin(Admin::SecretKey { action: None }) => {
            pitfall_server::server::secret_key(&cli.config)
                .map(|path| println!("{}", path.display()))
        }
        Command::Admin(Admin::SecretKey { action: Some(SecretKeyAction::Rotate) }) => {
            pitfall_server::server::rotate_secret_key(&cli.config).await.map(|rotated| {
                // The id alone on stdout, for scripts; what to do next on stderr.
                println!("{}", rotated.key_id);
                eprintln!(
                    "pitfall-server: {} holds the new watch secret key {}; {} the previous one, {}. Restart every server: each start re-seals the watch secrets under the new key.",
                    rotated.path.display(),
                    rotated.key_id,
                    rotated.previous.0.display(),
                    rotated.previous.1
                );
            })
        }
        // Answered in `main`, before the runtime starts.
        Command::Config(_) | Command::Probe => Ok(()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pitfall-server: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
