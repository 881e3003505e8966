//! Start-up: open the store (running migrations), seed the bundled rules
//! (before serving on an empty registry, beside it otherwise), load what is
//! approved, and serve until SIGTERM or ctrl-c, then drain.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pitfall_engine::{Engine, Limits};

use crate::app::app;
use crate::config::Config;
use crate::registry::{Registry, plan_seed, seed_unstored};
use crate::secret_box::SealingKey;
use crate::secret_key::SecretKeys;
use crate::state::AppState;
use crate::store::{Actor, Role, SecretSealing, Store};

/// Opens the registry a config names: data dir, store, engine, seed.
pub async fn open(config: &Config) -> anyhow::Result<Arc<Registry>> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data dir {}", config.data_dir.display()))?;
    // What to back up is there (the database, unless DATABASE_URL names
    // another, and the keys): say where it is.
    tracing::info!(data_dir = %config.data_dir.display(), "data dir");
    let secret_keys = SecretKeys::load_or_create(config)?;
    if config.secret_key_file.is_none() && config.database_url().starts_with("postgres") {
        tracing::warn!(
            "watch secrets are sealed with this data dir's own key; replicas of one registry must share one: set --secret-key-file"
        );
    }
    let keys = secret_keys.get();
    tracing::info!(
        key_file = %crate::secret_key::path(config).display(),
        key_id = keys.current().id(),
        previous_key_id = keys.previous().map(SealingKey::id),
        "watch secrets sealed"
    );
    let store = connect(config).await?;
    // Watch secrets in the clear (stored before sealing existed) or under
    // the previous key (a rotation) are sealed under the current key now,
    // unless an earlier start with this key recorded that none is left.
    match store.seal_watch_secrets(&keys).await? {
        SecretSealing::Skipped => {}
        SecretSealing::Scanned { sealed, unopenable, recorded } => {
            tracing::info!(sealed, recorded, "watch secrets sealed under the current key");
            if unopenable > 0 {
                tracing::warn!(
                    unopenable,
                    "watch secrets open with no key held (sealed under another key, or altered): their deliveries fail until the watch is made again"
                );
            }
            if recorded && let Some(previous) = keys.previous() {
                tracing::info!(
                    previous_key_id = previous.id(),
                    "every watch secret is sealed under the current key: the previous key file is no longer needed"
                );
            }
        }
    }
    let limits = Limits { memo_bytes: config.limits.rule_memo_bytes, ..Limits::default() };
    let engine = Engine::with_cache_dir(limits, config.data_dir.join("compiled"))
        .context("starting the rule engine")?;
    if let Some(why) = engine.disk_cache_refused() {
        tracing::warn!("{why}; rules are compiled afresh at each start");
    }
    if !config.seed_bundled {
        return Ok(Arc::new(Registry::open(store, engine, secret_keys.clone()).await?));
    }
    // A registry that never held a rule waits for the bundled ones, so its
    // first answers are not empty. One that holds rules serves them at
    // once and takes bundled versions it lacks (a first start over an
    // existing database, an upgrade that brings new ones) as its next
    // revision, as it would a publish: compiling and testing them (about
    // 70 ms each on a slow core) no longer holds up readiness.
    // Which bundled versions the store lacks is cheap to tell (no compile),
    // so a restart that has them all says so before it serves.
    let plan = plan_seed(&store, &engine, pitfall_bundled_rules::MODULES.to_vec()).await?;
    if !plan.rebuilt.is_empty() {
        // Kept as stored: a rule's change must come with a higher version.
        tracing::warn!(
            versions = plan.rebuilt.join(", "),
            "bundled versions differ from the stored ones in bytes; serving the stored ones"
        );
    }
    let unstored = plan.unstored;
    if unstored.is_empty() || plan.store_was_empty {
        let inserted = seed_unstored(&store, &engine, unstored).await?;
        tracing::info!(inserted, "bundled rules seeded");
        return Ok(Arc::new(Registry::open(store, engine, secret_keys.clone()).await?));
    }
    let registry = Arc::new(Registry::open(store, engine, secret_keys.clone()).await?);
    let seeding = Arc::clone(&registry);
    tracing::info!(
        unstored = unstored.len(),
        "seeding the bundled rules the registry lacks, while serving"
    );
    tokio::spawn(async move {
        match seed_unstored(seeding.store(), seeding.engine(), unstored).await {
            Ok(inserted) => {
                tracing::info!(inserted, "bundled rules seeded");
                if let Err(e) = seeding.refresh().await {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        "serving the seeded rules waits for the next poll"
                    );
                }
            }
            // A bundled rule that fails the pipeline is this build's bug;
            // the stored rules go on being served.
            Err(e) => tracing::error!(error = format!("{e:#}"), "seeding the bundled rules failed"),
        }
    });
    Ok(registry)
}

async fn connect(config: &Config) -> anyhow::Result<Store> {
    let url = config.database_url();
    // The URL may carry a password: log only which backend it is.
    let backend = crate::store::Backend::from_url(&url).context("DATABASE_URL")?;
    // A SQLite URL is a path and names the file an operator must look at.
    let which = match backend {
        crate::store::Backend::Sqlite => {
            format!("the sqlite database {}", url.trim_start_matches("sqlite://"))
        }
        other => format!("the {} database", other.as_str()),
    };
    Store::connect(&url).await.with_context(|| format!("opening {which}"))
}

/// A server listening and serving in the background of the current
/// runtime: what `serve` runs until SIGTERM or ctrl-c, and what embedders and tests
/// start on `127.0.0.1:0`.
#[derive(Debug)]
pub struct Running {
    /// Where it listens (the bound port when the config said 0).
    pub addr: std::net::SocketAddr,
    /// The bundle signing key's public half, which clients pin.
    pub public_key: pitfall_api::PublicKey,
    /// The serving task.
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
    _poller: tokio::task::JoinHandle<()>,
    _watch: Vec<tokio::task::JoinHandle<()>>,
}

/// Opens the registry, binds `config.listen` and serves in the background.
pub async fn start(config: Config) -> anyhow::Result<Running> {
    let registry = open(&config).await?;
    // After `open`, which made the data dir the default key lives in.
    let signer = crate::signing::load_or_create(&config)?;
    if config.signing_key_file.is_none() && config.database_url().starts_with("postgres") {
        tracing::warn!(
            "bundles are signed with this data dir's own key; replicas of one registry must share one: set --signing-key-file"
        );
    }
    let rules = registry.rules();
    tracing::info!(rules = rules.rules().len(), revision = rules.revision(), "rules loaded");
    let poller = registry.spawn_poller(Duration::from_millis(config.refresh_ms.max(10)));
    let public_key = signer.public_key();
    tracing::info!(
        public_key = %public_key,
        key_file = %config.signing_key_file.clone().unwrap_or_else(|| config.data_dir.join(crate::signing::DEFAULT_KEY_FILE)).display(),
        "bundles signed"
    );
    let listen_limits = crate::listen::ListenLimits {
        header_read_timeout: Duration::from_millis(config.limits.header_timeout_ms.max(1)),
        max_connections: config.limits.max_connections,
        max_connections_per_ip: config.limits.max_connections_per_ip,
    };
    let watcher = crate::watch::Watcher::new(
        Arc::clone(&registry),
        crate::watch::WatchOptions::from_settings(
            &config.limits.watch,
            Duration::from_millis(config.refresh_ms.max(10)),
        ),
    );
    let watch_tasks = watcher.spawn();
    let state = AppState::with_signer(registry, config.limits.clone(), signer);
    state.set_watcher(watcher);
    let router = app(state);
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let addr = listener.local_addr().unwrap_or(config.listen);
    tracing::info!(listen = %addr, "serving");
    // Registered before the first request, so a SIGTERM from then on
    // drains rather than kills.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    let shutdown = async move {
        let signal = tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        tracing::info!(signal, "stopping: no new connections");
    };
    let task = tokio::spawn(crate::listen::serve(
        listener,
        router,
        listen_limits,
        shutdown,
        config.shutdown_timeout(),
    ));
    Ok(Running { addr, public_key, task, _poller: poller, _watch: watch_tasks })
}

/// Serves the API until SIGTERM or ctrl-c, then drains (`listen::serve`).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let running = start(config).await?;
    running.task.await.context("the serving task failed")?.context("serving")
}

/// `admin bundle-key`: the public key of the key that signs bundles (the
/// data dir's, created if missing, or `--signing-key-file`'s), for clients
/// to pin.
pub fn bundle_key(config: &Config) -> anyhow::Result<pitfall_api::PublicKey> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data dir {}", config.data_dir.display()))?;
    Ok(crate::signing::load_or_create(config)?.public_key())
}

/// `admin secret-key`: the file of the key that seals watch secrets (the
/// data dir's, created if missing, or `--secret-key-file`'s, read to check
/// it), for replicas to share.
pub fn secret_key(config: &Config) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data dir {}", config.data_dir.display()))?;
    SecretKeys::load_or_create(config)?;
    Ok(crate::secret_key::path(config))
}

/// `admin secret-key rotate`: the key file's key moves to its `.previous`
/// file and a fresh key takes its place (`secret_key::rotate`). Refused
/// while a previous key file is there and a stored secret is not yet
/// sealed under the current key: that secret may need the previous key,
/// which this would overwrite (a rotation not finished: restart every
/// server first, each start re-seals). Reads the registry's database, so
/// it runs with the servers' DATABASE_URL; a SQLite file that does not
/// exist is refused rather than made.
pub async fn rotate_secret_key(config: &Config) -> anyhow::Result<crate::secret_key::Rotated> {
    let path = crate::secret_key::path(config);
    if !path.is_file() {
        anyhow::bail!(
            "no watch secret key at {} to rotate (`admin secret-key` makes one)",
            path.display()
        );
    }
    let keys = SecretKeys::load_or_create(config)?.get();
    let url = config.database_url();
    if let Some(file) = url.strip_prefix("sqlite://") {
        let file = std::path::Path::new(file.split('?').next().unwrap_or(file));
        if !file.is_file() {
            anyhow::bail!(
                "no database at {}: set DATABASE_URL to the registry's database, which the rotation reads first",
                file.display()
            );
        }
    }
    let store = connect(config).await?;
    let left = store.watch_secrets_not_under(keys.current()).await;
    store.close().await;
    let left = left?;
    if let Some(previous) = keys.previous()
        && left > 0
    {
        anyhow::bail!(
            "{left} watch secret(s) are not yet sealed under the current key {} (the last rotation, from {}, is not finished): restart every server, whose start re-seals them, then rotate again (a secret a start reports opening with no key held stays: make that watch again)",
            keys.current().id(),
            previous.id()
        );
    }
    crate::secret_key::rotate(&path)
}

/// `admin create-token`: an account with `role` (created if missing) and a
/// fresh token for it, printed once. This is how the first admin exists.
/// An existing account with another role is refused unless `set_role`.
pub async fn create_token(
    config: &Config,
    name: &str,
    role: Role,
    label: &str,
    set_role: bool,
    grant: crate::store::TokenGrant,
) -> anyhow::Result<String> {
    crate::api::accounts::validate_account_name(name)
        .map_err(|e| anyhow::anyhow!("{}", e.describe().1.message))?;
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data dir {}", config.data_dir.display()))?;
    let store = connect(config).await?;
    let account = match store.account_by_name(name).await? {
        Some(account) if account.role == role => account,
        // A typo in a name must not silently promote (or demote) an
        // existing account: changing a role is said out loud.
        Some(account) if set_role => store.set_role(account.id, role, &Actor::System).await?,
        Some(account) => anyhow::bail!(
            "the account {name} exists with the role {}, not {}: pass --set-role to change it",
            account.role.as_str(),
            role.as_str()
        ),
        None => store.create_account(name, role, &Actor::System).await?,
    };
    let (secret, _) = store.issue_token_with(account.id, label, grant, &Actor::System).await?;
    Ok(secret)
}
