//! The server's configuration: flags with environment equivalents, in one
//! typed struct. Every setting is documented here and in `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `pitfall-server` settings. Each is a flag, an environment variable and
/// a key of the config file (`--config`): the flag's name without its
/// dashes (`max-body-bytes = 2097152`). A flag wins over the environment,
/// which wins over the file, which wins over the default.
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// A TOML file of settings, keyed by the flags' names
    /// (`pitfall-server config check FILE` validates one).
    #[arg(long, env = "PITFALL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How log lines are written to stderr: `text` for people, `json`
    /// (one object a line) for log shippers.
    #[arg(long, env = "PITFALL_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// On SIGTERM or ctrl-c: how long the requests in flight may take to
    /// finish, in milliseconds, before their connections are closed.
    #[arg(long, env = "PITFALL_SHUTDOWN_TIMEOUT_MS", default_value_t = DEFAULT_SHUTDOWN_TIMEOUT_MS)]
    pub shutdown_timeout_ms: u64,
    /// Address to listen on.
    #[arg(long, env = "PITFALL_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where the server keeps its data: the SQLite database (unless
    /// DATABASE_URL names another), the bundle signing key (unless
    /// --signing-key-file), the watch secret key (unless --secret-key-file)
    /// and the compiled-code cache. Default: see
    /// [`default_data_dir`] (a system service's state directory, else the
    /// user's XDG data dir), never the directory it was started from.
    #[arg(long, env = "PITFALL_DATA_DIR", default_value_os_t = default_data_dir())]
    pub data_dir: PathBuf,
    /// The registry's database: `sqlite://PATH` or `postgres://...`.
    /// Default: `sqlite://<data-dir>/pitfall.db`. Several servers on one
    /// PostgreSQL database are one registry.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    #[command(flatten)]
    pub limits: ServerLimits,
    /// How often the server looks for a newer ruleset revision written by
    /// another server process, in milliseconds.
    #[arg(long, env = "PITFALL_REFRESH_MS", default_value_t = 1000)]
    pub refresh_ms: u64,
    /// Whether to seed the bundled rules into the registry at start
    /// (idempotent: an already seeded version is left as it is).
    #[arg(long, env = "PITFALL_SEED_BUNDLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub seed_bundled: bool,
    /// The ed25519 key that signs `GET /v1/bundle` (PKCS#8 PEM, as
    /// `openssl genpkey -algorithm ed25519` writes it). Every replica of one
    /// registry needs the same file. Default: `<data-dir>/bundle-signing-key.pem`,
    /// generated on first start; `admin bundle-key` prints its public key.
    #[arg(long, env = "PITFALL_SIGNING_KEY_FILE", value_name = "PATH")]
    pub signing_key_file: Option<PathBuf>,
    /// The key that seals watches' webhook secrets in the database
    /// (ChaCha20-Poly1305): 32 bytes as 64 hex digits and a newline, as
    /// `openssl rand -hex 32` writes them, readable by the server only.
    /// Every replica of one registry needs the same file; without it a
    /// watch's secret cannot be opened and its deliveries fail. Default:
    /// `<data-dir>/watch-secret-key`, generated on first start. During a
    /// rotation (`admin secret-key rotate`) the key it replaced is read
    /// from the same path with `.previous` appended.
    #[arg(long, env = "PITFALL_SECRET_KEY_FILE", value_name = "PATH")]
    pub secret_key_file: Option<PathBuf>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    Text,
    /// One JSON object a line: the event's fields flattened, its span's
    /// fields under `span`.
    Json,
}

/// A request in flight when the server is told to stop may run up to the
/// request timeout ([`DEFAULT_REQUEST_TIMEOUT_MS`]); container runtimes
/// give 10 s by default before SIGKILL, so a deployment sets its stop
/// timeout above this (the `compose.yaml` does).
pub const DEFAULT_SHUTDOWN_TIMEOUT_MS: u64 = 30_000;

/// Where a system service keeps its data when nothing else says.
pub const SYSTEM_DATA_DIR: &str = "/var/lib/pitfall";

/// The data dir when `--data-dir` and `PITFALL_DATA_DIR` are not given:
///
/// 1. `$STATE_DIRECTORY` (its first entry), which systemd sets for a unit
///    with `StateDirectory=`;
/// 2. [`SYSTEM_DATA_DIR`] when running as a system service: systemd set
///    `INVOCATION_ID` and the process runs as root or a system account
///    (uid below 1000; a `systemd --user` unit runs as a person, who gets
///    the next rule);
/// 3. `$XDG_DATA_HOME/pitfall`, else `$HOME/.local/share/pitfall`;
/// 4. [`SYSTEM_DATA_DIR`] when there is no home at all.
pub fn default_data_dir() -> PathBuf {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory.
    let euid = unsafe { libc::geteuid() };
    data_dir_from(|name| std::env::var_os(name), euid)
}

/// [`default_data_dir`] over a given environment and user id.
pub fn data_dir_from(env: impl Fn(&str) -> Option<std::ffi::OsString>, euid: u32) -> PathBuf {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(state) = set("STATE_DIRECTORY") {
        let first = state.to_string_lossy().split(':').next().unwrap_or("").to_owned();
        if !first.is_empty() {
            return PathBuf::from(first);
        }
    }
    if set("INVOCATION_ID").is_some() && euid < 1000 {
        return PathBuf::from(SYSTEM_DATA_DIR);
    }
    if let Some(xdg) = set("XDG_DATA_HOME") {
        return PathBuf::from(xdg).join("pitfall");
    }
    match set("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/pitfall"),
        None => PathBuf::from(SYSTEM_DATA_DIR),
    }
}

/// `Config` alone, parsed like `pitfall-server`'s flags.
#[derive(Debug, clap::Parser)]
struct ConfigOnly {
    #[command(flatten)]
    config: Config,
}

impl Config {
    /// A config from flags (the first item is the program name) and the
    /// environment, as `pitfall-server` reads them; for embedding and tests.
    pub fn from_args<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        crate::config_file::parse::<ConfigOnly, _, _>(args).map(|c| c.config)
    }

    /// How long the requests in flight may take to finish at shutdown.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }

    /// The database URL in effect.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("pitfall.db").display()),
        }
    }
}

/// A body large enough for a 1 MiB module plus headroom.
pub const DEFAULT_MAX_BODY_BYTES: usize = 2 << 20;
/// Real manifests are a few KiB; 256 KiB leaves room for long package lists.
pub const DEFAULT_MAX_MANIFEST_BYTES: usize = 256 << 10;
/// A fleet's batch; larger fleets send several.
pub const DEFAULT_MAX_BATCH: usize = 256;
/// Long enough for a batch or a publish on a busy 2-core host.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// A request head (line and headers) arrives in one round trip; 10 s is
/// generous for a slow link and short for a client that drips it to hold a
/// connection open.
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 10_000;
/// A 2 MiB module on a slow link; a body that takes longer is a client
/// holding a worker, answered 408.
pub const DEFAULT_BODY_TIMEOUT_MS: u64 = 20_000;
/// Open connections at most: far beyond what a few provisioning fleets
/// need, well under the file-descriptor limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Open connections at most from one client network (an IPv4 address or
/// an IPv6 /64): a CI fleet behind one NAT keeps a few dozen; one client
/// cannot hold every one of [`DEFAULT_MAX_CONNECTIONS`].
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 64;
/// Checks per minute from one client IP: a CI fleet behind one NAT checks
/// a few manifests per deploy (a batch counts per manifest).
pub const DEFAULT_RATE_CHECK_PER_IP: u32 = 600;
/// Checks per minute with one token.
pub const DEFAULT_RATE_CHECK_PER_TOKEN: u32 = 600;
/// Publishes per minute from one IP: each compiles a module and runs its
/// cases, seconds of CPU.
pub const DEFAULT_RATE_PUBLISH_PER_IP: u32 = 30;
/// Publishes per minute with one token.
pub const DEFAULT_RATE_PUBLISH_PER_TOKEN: u32 = 30;
/// How long a signed bundle is current, in hours: a week
/// (`pitfall_api::bundle::DEFAULT_VALIDITY`).
pub const DEFAULT_BUNDLE_VALIDITY_HOURS: u64 = 7 * 24;
/// Answers kept for identical manifests, at most.
pub const DEFAULT_RESULT_CACHE_ENTRIES: usize = 10_000;
/// And at most this much answer text: an answer of twenty findings is
/// 20-40 KiB, so a count alone let 10,000 distinct machines' answers take
/// hundreds of MiB (measured: 120-170 MiB over a 10,000-rule server's own).
/// 32 MiB, and as much again for the memo of evaluations: the 64 MiB the
/// result cache alone had before the memo, which makes a miss here cheap.
pub const DEFAULT_RESULT_CACHE_BYTES: usize = 32 << 20;
/// Bytes the engine's memo of evaluations keeps (pitfall_engine::limits::DEFAULT_MEMO_BYTES).
pub const DEFAULT_RULE_MEMO_BYTES: usize = pitfall_engine::limits::DEFAULT_MEMO_BYTES;

/// Bounds on what one request may ask of the server.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerLimits {
    /// Largest request body accepted, in bytes (a published module is
    /// bounded by the engine's module size limit on top of this).
    #[arg(long, env = "PITFALL_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Largest manifest accepted, in bytes (real manifests are a few KiB).
    #[arg(long, env = "PITFALL_MAX_MANIFEST_BYTES", default_value_t = DEFAULT_MAX_MANIFEST_BYTES)]
    pub max_manifest_bytes: usize,
    /// Most manifests in one `POST /v1/check/batch`.
    #[arg(long, env = "PITFALL_MAX_BATCH", default_value_t = DEFAULT_MAX_BATCH)]
    pub max_batch: usize,
    /// Longest a request may take before it is answered 503, in milliseconds.
    #[arg(long, env = "PITFALL_REQUEST_TIMEOUT_MS", default_value_t = DEFAULT_REQUEST_TIMEOUT_MS)]
    pub request_timeout_ms: u64,
    /// Check answers kept for identical manifests (per ruleset revision).
    #[arg(long, env = "PITFALL_RESULT_CACHE_ENTRIES", default_value_t = DEFAULT_RESULT_CACHE_ENTRIES)]
    pub result_cache_entries: usize,
    /// Bytes of answer text the result cache keeps, at most (oldest out first).
    #[arg(long, env = "PITFALL_RESULT_CACHE_BYTES", default_value_t = DEFAULT_RESULT_CACHE_BYTES)]
    pub result_cache_bytes: usize,
    /// Bytes the memo of evaluations keeps: each rule's outcomes by what it
    /// read, so a manifest new to the cache runs in the sandbox only the
    /// rules that read something no machine showed them before. 0 turns
    /// it off (every candidate of every check runs in the sandbox).
    #[arg(long, env = "PITFALL_RULE_MEMO_BYTES", default_value_t = DEFAULT_RULE_MEMO_BYTES)]
    pub rule_memo_bytes: usize,
    /// Longest a client may take to send a request's head, in milliseconds;
    /// then the connection is closed.
    #[arg(long, env = "PITFALL_HEADER_TIMEOUT_MS", default_value_t = DEFAULT_HEADER_TIMEOUT_MS)]
    pub header_timeout_ms: u64,
    /// Longest a client may take to send a request's body, in milliseconds;
    /// then it is answered 408.
    #[arg(long, env = "PITFALL_BODY_TIMEOUT_MS", default_value_t = DEFAULT_BODY_TIMEOUT_MS)]
    pub body_timeout_ms: u64,
    /// Open connections at most; one more is closed at once.
    #[arg(long, env = "PITFALL_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Open connections at most from one client network (an IPv4 address
    /// or an IPv6 /64); one more is closed at once.
    #[arg(long, env = "PITFALL_MAX_CONNECTIONS_PER_IP", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_IP)]
    pub max_connections_per_ip: usize,
    /// Checks (`/v1/check`, a manifest of `/v1/check/batch`) per minute
    /// from one client IP (an IPv6 /64), bursts up to that many; 0 turns
    /// the limit off.
    #[arg(long, env = "PITFALL_RATE_CHECK_PER_IP", default_value_t = DEFAULT_RATE_CHECK_PER_IP)]
    pub rate_check_per_ip: u32,
    /// Checks per minute with one bearer token; 0 turns the limit off.
    #[arg(long, env = "PITFALL_RATE_CHECK_PER_TOKEN", default_value_t = DEFAULT_RATE_CHECK_PER_TOKEN)]
    pub rate_check_per_token: u32,
    /// Publishes (`POST /v1/rules`) per minute from one client IP; 0: off.
    #[arg(long, env = "PITFALL_RATE_PUBLISH_PER_IP", default_value_t = DEFAULT_RATE_PUBLISH_PER_IP)]
    pub rate_publish_per_ip: u32,
    /// Publishes per minute with one bearer token; 0: off.
    #[arg(long, env = "PITFALL_RATE_PUBLISH_PER_TOKEN", default_value_t = DEFAULT_RATE_PUBLISH_PER_TOKEN)]
    pub rate_publish_per_token: u32,
    /// How long a signed bundle (`GET /v1/bundle`) is current, in hours
    /// from its signing; clients warn past it, or refuse with
    /// `--require-fresh`. The server signs again after half of it.
    #[arg(long, env = "PITFALL_BUNDLE_VALIDITY_HOURS", default_value_t = DEFAULT_BUNDLE_VALIDITY_HOURS, value_parser = clap::value_parser!(u64).range(1..=24 * 366))]
    pub bundle_validity_hours: u64,
    /// Let a maintainer approve their own rules, but only while the
    /// registry has a single maintainer (or admin) in all. Off, approval
    /// always needs someone other than the rule's publisher and owners.
    #[arg(long, env = "PITFALL_SOLE_MAINTAINER_SELF_APPROVAL", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub sole_maintainer_self_approval: bool,
    /// The URL people reach this server at (`https://pitfall.example.org`),
    /// when it differs from the listen address (behind a proxy). An https
    /// URL marks the review session cookie `Secure`, as a request that
    /// arrived over https (`X-Forwarded-Proto: https`) does.
    #[arg(long, env = "PITFALL_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    #[command(flatten)]
    pub watch: WatchSettings,
}

/// A fleet of 10,000 manifests of a few KiB each, in one request.
pub const DEFAULT_MAX_WATCH_BODY_BYTES: usize = 64 << 20;
/// Manifests in one watch, at most.
pub const DEFAULT_MAX_WATCH_MANIFESTS: usize = 10_000;
/// A receiver answers a webhook in well under this.
pub const DEFAULT_WATCH_TIMEOUT_MS: u64 = 10_000;
/// The first wait after a failed delivery; each further one doubles.
pub const DEFAULT_WATCH_BACKOFF_BASE_MS: u64 = 10_000;
/// The longest wait between two tries.
pub const DEFAULT_WATCH_BACKOFF_MAX_MS: u64 = 3_600_000;
/// How long a delivery is retried before its watch is marked failing.
pub const DEFAULT_WATCH_RETRY_FOR_MS: u64 = 24 * 3_600_000;
/// Delivery workers per process: each holds one try at a time.
pub const DEFAULT_WATCH_WORKERS: usize = 4;
/// How long a replica's claim of a ruleset transition lasts: far longer
/// than an evaluation pass takes, short enough that a replica that died
/// holding it is replaced within a minute.
pub const DEFAULT_WATCH_LEASE_MS: u64 = 60_000;

/// Watches and their webhooks.
#[derive(Debug, Clone, clap::Args)]
pub struct WatchSettings {
    /// Allow webhook URLs over plain http and to loopback, private and
    /// link-local addresses (tests and development). Off, a webhook is
    /// https to a public address only.
    #[arg(long, env = "PITFALL_WATCH_ALLOW_PRIVATE_URLS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub watch_allow_private_urls: bool,
    /// Largest body of `POST /v1/watches` and `PATCH /v1/watches/{id}`, in bytes.
    #[arg(long, env = "PITFALL_MAX_WATCH_BODY_BYTES", default_value_t = DEFAULT_MAX_WATCH_BODY_BYTES)]
    pub max_watch_body_bytes: usize,
    /// Most manifests in one watch.
    #[arg(long, env = "PITFALL_MAX_WATCH_MANIFESTS", default_value_t = DEFAULT_MAX_WATCH_MANIFESTS)]
    pub max_watch_manifests: usize,
    /// One webhook try's bound (connect, send, answer), in milliseconds.
    #[arg(long, env = "PITFALL_WATCH_TIMEOUT_MS", default_value_t = DEFAULT_WATCH_TIMEOUT_MS)]
    pub watch_timeout_ms: u64,
    /// The first wait after a failed delivery, in milliseconds; each
    /// further one doubles (half of it drawn at random).
    #[arg(long, env = "PITFALL_WATCH_BACKOFF_BASE_MS", default_value_t = DEFAULT_WATCH_BACKOFF_BASE_MS)]
    pub watch_backoff_base_ms: u64,
    /// The longest wait between two tries, in milliseconds.
    #[arg(long, env = "PITFALL_WATCH_BACKOFF_MAX_MS", default_value_t = DEFAULT_WATCH_BACKOFF_MAX_MS)]
    pub watch_backoff_max_ms: u64,
    /// How long a delivery is retried, in milliseconds from its event;
    /// then it is given up and its watch marked failing.
    #[arg(long, env = "PITFALL_WATCH_RETRY_FOR_MS", default_value_t = DEFAULT_WATCH_RETRY_FOR_MS)]
    pub watch_retry_for_ms: u64,
    /// Delivery workers in this process; 0 delivers nothing (another
    /// replica does).
    #[arg(long, env = "PITFALL_WATCH_WORKERS", default_value_t = DEFAULT_WATCH_WORKERS)]
    pub watch_workers: usize,
    /// How long a replica's claim of a ruleset transition lasts, in
    /// milliseconds, before another may take it over.
    #[arg(long, env = "PITFALL_WATCH_LEASE_MS", default_value_t = DEFAULT_WATCH_LEASE_MS)]
    pub watch_lease_ms: u64,
}

impl Default for WatchSettings {
    fn default() -> WatchSettings {
        WatchSettings {
            watch_allow_private_urls: false,
            max_watch_body_bytes: DEFAULT_MAX_WATCH_BODY_BYTES,
            max_watch_manifests: DEFAULT_MAX_WATCH_MANIFESTS,
            watch_timeout_ms: DEFAULT_WATCH_TIMEOUT_MS,
            watch_backoff_base_ms: DEFAULT_WATCH_BACKOFF_BASE_MS,
            watch_backoff_max_ms: DEFAULT_WATCH_BACKOFF_MAX_MS,
            watch_retry_for_ms: DEFAULT_WATCH_RETRY_FOR_MS,
            watch_workers: DEFAULT_WATCH_WORKERS,
            watch_lease_ms: DEFAULT_WATCH_LEASE_MS,
        }
    }
}

impl ServerLimits {
    /// The request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// How long a signed bundle is current.
    pub fn bundle_validity(&self) -> Duration {
        Duration::from_secs(self.bundle_validity_hours * 3600)
    }

    /// The body timeout.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms)
    }
}

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            max_batch: DEFAULT_MAX_BATCH,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            result_cache_entries: DEFAULT_RESULT_CACHE_ENTRIES,
            result_cache_bytes: DEFAULT_RESULT_CACHE_BYTES,
            rule_memo_bytes: DEFAULT_RULE_MEMO_BYTES,
            header_timeout_ms: DEFAULT_HEADER_TIMEOUT_MS,
            body_timeout_ms: DEFAULT_BODY_TIMEOUT_MS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
            rate_check_per_ip: DEFAULT_RATE_CHECK_PER_IP,
            rate_check_per_token: DEFAULT_RATE_CHECK_PER_TOKEN,
            rate_publish_per_ip: DEFAULT_RATE_PUBLISH_PER_IP,
            rate_publish_per_token: DEFAULT_RATE_PUBLISH_PER_TOKEN,
            bundle_validity_hours: DEFAULT_BUNDLE_VALIDITY_HOURS,
            sole_maintainer_self_approval: false,
            public_url: None,
            watch: WatchSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment, the user id and the data dir expected.
    type Case<'a> = (&'a [(&'a str, &'a str)], u32, &'a str);

    #[test]
    fn the_default_data_dir_follows_the_service_manager_then_xdg() {
        let cases: &[Case<'_>] = &[
            (&[("HOME", "/home/ann")], 1000, "/home/ann/.local/share/pitfall"),
            (&[("HOME", "/home/ann"), ("XDG_DATA_HOME", "/data/ann")], 1000, "/data/ann/pitfall"),
            // A systemd system service (as root or a system account).
            (&[("HOME", "/root"), ("INVOCATION_ID", "abc")], 0, SYSTEM_DATA_DIR),
            (&[("HOME", "/"), ("INVOCATION_ID", "abc")], 998, SYSTEM_DATA_DIR),
            // A systemd --user service: the person's own data dir.
            (
                &[("HOME", "/home/ann"), ("INVOCATION_ID", "abc")],
                1000,
                "/home/ann/.local/share/pitfall",
            ),
            // StateDirectory= wins.
            (
                &[("STATE_DIRECTORY", "/var/lib/pf:/var/lib/other"), ("INVOCATION_ID", "a")],
                0,
                "/var/lib/pf",
            ),
            (&[], 0, SYSTEM_DATA_DIR),
            (&[("HOME", "")], 1000, SYSTEM_DATA_DIR),
        ];
        for (vars, euid, expected) in cases {
            let env = |name: &str| {
                vars.iter().find(|(k, _)| *k == name).map(|(_, v)| std::ffi::OsString::from(v))
            };
            assert_eq!(data_dir_from(env, *euid), PathBuf::from(expected), "{vars:?} uid {euid}");
        }
    }
}
