//! `pitfall bundle pull|show`: the registry's approved rules as one signed
//! file in the user's data dir, fetched conditionally and verified with the
//! pinned key before it replaces the previous one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_client::api::{Bundle, PublicKey};
use pitfall_client::{BundleFetch, Client};
use serde::{Deserialize, Serialize};

use crate::config::UserConfig;

/// `pitfall bundle ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum BundleCommand {
    /// Download the registry's approved rules as one signed file (only when
    /// they changed), verify it with the pinned key and keep it for offline
    /// checks. A bundle that does not verify is refused and the previous
    /// one kept (exit 2).
    Pull {
        /// The registry (default: PITFALL_SERVER, then `server` in the config file).
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// The public key to verify with (default: PITFALL_BUNDLE_KEY, then
        /// `bundle_public_key` in the config file).
        #[arg(long, value_name = "ed25519:...")]
        key: Option<String>,
    },
    /// Verify a bundle (default: the pulled one) and list its rules.
    Show {
        /// A bundle file.
        path: Option<PathBuf>,
        /// The public key to verify with (as for `pull`).
        #[arg(long, value_name = "ed25519:...")]
        key: Option<String>,
    },
}

/// Where the pulled bundle lives: `PITFALL_BUNDLE`, else
/// `$XDG_DATA_HOME/pitfall/bundle.pfb`, else `~/.local/share/pitfall/bundle.pfb`.
pub(crate) fn bundle_path() -> Option<PathBuf> {
    crate::config::user_path("PITFALL_BUNDLE", "XDG_DATA_HOME", ".local/share", "bundle.pfb")
}

/// What `pull` remembers beside the bundle, for the next conditional fetch.
#[derive(Debug, Serialize, Deserialize)]
struct PullState {
    server: String,
    etag: String,
}

fn state_path(bundle: &Path) -> PathBuf {
    let mut name = bundle.as_os_str().to_owned();
    name.push(".state.json");
    PathBuf::from(name)
}

/// Reads and verifies a bundle file; the error names the file.
pub(crate) fn read_verified(
    path: &Path,
    key: &PublicKey,
) -> anyhow::Result<(Vec<u8>, String, usize)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let bundle =
        Bundle::verify(&bytes, key).with_context(|| format!("{}: refused", path.display()))?;
    let (revision, count) = (bundle.index.ruleset_revision.clone(), bundle.index.rules.len());
    Ok((bytes, revision, count))
}

pub(crate) fn run(command: &BundleCommand) -> anyhow::Result<ExitCode> {
    let config = UserConfig::load()?;
    match command {
        BundleCommand::Pull { server, key } => pull(&config, server.as_deref(), key.as_deref()),
        BundleCommand::Show { path, key } => show(&config, path.as_deref(), key.as_deref()),
    }
}

fn pull(config: &UserConfig, server: Option<&str>, key: Option<&str>) -> anyhow::Result<ExitCode> {
    let key = config.public_key(key)?;
    let Some(server) = server.or(config.server.as_deref()) else {
        bail!("no server: pass --server URL, or set PITFALL_SERVER or `server` in the config file");
    };
    let path = bundle_path().context("no place for the bundle: set PITFALL_BUNDLE or HOME")?;
    // The previous bundle counts only if it still verifies with this key.
    let previous = path.exists().then(|| read_verified(&path, &key)).and_then(Result::ok);
    let state: Option<PullState> =
        std::fs::read(state_path(&path)).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let client = Client::new(server)?;
    let if_none_match = match (&previous, &state) {
        (Some(_), Some(state)) if state.server == client.base_url() => Some(state.etag.as_str()),
        _ => None,
    };
    let kept = || match &previous {
        Some((_, revision, count)) => {
            format!("keeping the previous bundle (revision {revision}, {count} rules)")
        }
        None => "there is no previous bundle".to_owned(),
    };
    let (bytes, etag) = match client.bundle(if_none_match).with_context(kept)? {
        BundleFetch::NotModified { .. } => {
            if let Some((_, revision, count)) = &previous {
                outln!("unchanged: revision {revision}, {count} rules ({})", path.display());
            }
            return Ok(ExitCode::SUCCESS);
        }
        BundleFetch::Fetched { bytes, etag } => (bytes, etag),
    };
    let bundle = match Bundle::verify(&bytes, &key) {
        Ok(bundle) => bundle,
        Err(e) => bail!("refused the bundle from {}: {e}; {}", client.base_url(), kept()),
    };
    write_atomically(&path, &bytes)?;
    let state = PullState {
        server: client.base_url().to_owned(),
        etag: etag.unwrap_or_else(|| bundle.etag().to_owned()),
    };
    write_atomically(&state_path(&path), &serde_json::to_vec_pretty(&state)?)?;
    outln!(
        "pulled revision {}: {} rules, signed by {key} ({})",
        bundle.index.ruleset_revision,
        bundle.index.rules.len(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn show(config: &UserConfig, path: Option<&Path>, key: Option<&str>) -> anyhow::Result<ExitCode> {
    let key = config.public_key(key)?;
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => bundle_path().context("no pulled bundle: set PITFALL_BUNDLE or HOME")?,
    };
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let bundle =
        Bundle::verify(&bytes, &key).with_context(|| format!("{}: refused", path.display()))?;
    outln!(
        "{}: revision {}, {} rules, signed by {key}",
        path.display(),
        bundle.index.ruleset_revision,
        bundle.index.rules.len()
    );
    for rule in &bundle.index.rules {
        outln!("  {:<8} {} {}  {}", rule.severity.as_str(), rule.id, rule.version, rule.title);
    }
    Ok(ExitCode::SUCCESS)
}

/// Replaces `path` only once the new bytes are on disk (a crash leaves the
/// old file or the new one, never half of one).
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut name = path.file_name().map(|n| n.to_owned()).unwrap_or_default();
    name.push(format!(".tmp{}", std::process::id()));
    let temp = dir.join(name);
    let result = std::fs::File::create(&temp)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}
