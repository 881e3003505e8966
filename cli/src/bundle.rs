//! `pitfall bundle pull|show`: the registry's approved rules as one signed
//! file in the user's data dir, fetched conditionally and verified with the
//! pinned key before it replaces the previous one.
//!
//! Beyond the signature, a pulled bundle must be current (before its signed
//! expiry) and no older than the one held (a lower revision, or the same
//! one signed earlier), so a mirror or someone in the path cannot bring
//! yanked rules back by replaying an older bundle; `--allow-downgrade` lets
//! an operator go back on purpose. A held bundle past its expiry is used
//! with a warning, or refused with `--require-fresh`.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, bail};
use pitfall_client::api::bundle::Freshness;
use pitfall_client::api::{Bundle, BundleIndex, PublicKey};
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
        /// `bundle_public_key` in the config file); twice while the
        /// registry rotates its key.
        #[arg(long, value_name = "ed25519:...")]
        key: Vec<String>,
        /// Accept a bundle older than the one held (a lower revision, or
        /// the same one signed earlier), or one that signs no expiry.
        #[arg(long)]
        allow_downgrade: bool,
        /// Exit 2 when the bundle held afterwards is past its expiry (the
        /// server answered "not modified" to a stale copy).
        #[arg(long)]
        require_fresh: bool,
    },
    /// Verify a bundle (default: the pulled one) and list its rules.
    Show {
        /// A bundle file.
        path: Option<PathBuf>,
        /// The public key to verify with (as for `pull`).
        #[arg(long, value_name = "ed25519:...")]
        key: Vec<String>,
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

/// A verified bundle's signed index and its age now.
pub(crate) struct Held {
    pub(crate) index: BundleIndex,
    pub(crate) freshness: Freshness,
}

impl Held {
    fn of(bundle: &Bundle<'_>) -> Held {
        Held { index: bundle.index.clone(), freshness: bundle.freshness(SystemTime::now()) }
    }

    /// `revision N, M rules`.
    fn summary(&self) -> String {
        format!("revision {}, {} rules", self.index.ruleset_revision, self.index.rules.len())
    }

    /// Whether half its validity has passed (or its age cannot be told):
    /// time to fetch a freshly signed copy even if the rules are the same.
    fn due_for_refresh(&self, now: SystemTime) -> bool {
        match (self.index.issued_at, self.index.expires_at) {
            (Some(issued), Some(expires)) => {
                let now = pitfall_client::api::bundle::unix_seconds(now);
                now >= issued + (expires.saturating_sub(issued)) / 2
            }
            _ => true,
        }
    }
}

/// Says on stderr that a bundle about to be used is not current; an error
/// instead with `require_fresh`.
pub(crate) fn judge_freshness(name: &str, held: &Held, require_fresh: bool) -> anyhow::Result<()> {
    let why = match held.freshness {
        Freshness::Current { .. } => return Ok(()),
        Freshness::Expired { expires_at } => format!("expired at {}", utc(expires_at)),
        Freshness::Unknown => "signs no expiry (bundle format 1)".to_owned(),
    };
    let advice = "run `pitfall bundle pull` to get a current one";
    if require_fresh {
        bail!("{name} ({}) {why}; --require-fresh refuses it: {advice}", held.summary());
    }
    eprintln!("warning: {name} ({}) {why}: its rules may be out of date; {advice}", held.summary());
    Ok(())
}

/// How two bundles' revisions compare: as numbers (a registry counts its
/// revisions), else not at all.
fn compare_revisions(a: &str, b: &str) -> Option<Ordering> {
    Some(a.parse::<u64>().ok()?.cmp(&b.parse::<u64>().ok()?))
}

/// Why `new` would be a step back from `held`, if it would.
fn downgrade(held: &BundleIndex, new: &BundleIndex) -> Option<String> {
    match compare_revisions(&new.ruleset_revision, &held.ruleset_revision) {
        Some(Ordering::Less) => Some(format!(
            "its revision {} is older than the held revision {}",
            new.ruleset_revision, held.ruleset_revision
        )),
        Some(Ordering::Equal) if new.issued_at < held.issued_at => Some(format!(
            "it is revision {} signed before the held copy of it",
            new.ruleset_revision
        )),
        _ => None,
    }
}

/// A UTC date and time from seconds since the Unix epoch.
pub(crate) fn utc(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

/// Reads and verifies a bundle file; the error names the file.
pub(crate) fn read_verified(path: &Path, keys: &[PublicKey]) -> anyhow::Result<(Vec<u8>, Held)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let bundle =
        Bundle::verify_any(&bytes, keys).with_context(|| format!("{}: refused", path.display()))?;
    let held = Held::of(&bundle);
    Ok((bytes, held))
}

pub(crate) fn run(command: &BundleCommand) -> anyhow::Result<ExitCode> {
    let config = UserConfig::load()?;
    match command {
        BundleCommand::Pull { server, key, allow_downgrade, require_fresh } => pull(
            &config,
            server.as_deref(),
            key,
            Pulling { allow_downgrade: *allow_downgrade, require_fresh: *require_fresh },
        ),
        BundleCommand::Show { path, key } => show(&config, path.as_deref(), key),
    }
}

/// `pull`'s switches.
#[derive(Debug, Clone, Copy)]
struct Pulling {
    allow_downgrade: bool,
    require_fresh: bool,
}

fn pull(
    config: &UserConfig,
    server: Option<&str>,
    keys: &[String],
    how: Pulling,
) -> anyhow::Result<ExitCode> {
    let keys = config.public_keys(keys)?;
    let Some(server) = server.or(config.server.as_deref()) else {
        bail!("no server: pass --server URL, or set PITFALL_SERVER or `server` in the config file");
    };
    let path = bundle_path().context("no place for the bundle: set PITFALL_BUNDLE or HOME")?;
    // The previous bundle counts only if it still verifies with these keys.
    let previous = path.exists().then(|| read_verified(&path, &keys)).and_then(Result::ok);
    let state: Option<PullState> =
        std::fs::read(state_path(&path)).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let client = Client::new(server)?;
    // A conditional fetch only while the held copy has more than half its
    // validity left: past that, a freshly signed copy of the same rules is
    // worth the download.
    let if_none_match = match (&previous, &state) {
        (Some((_, held)), Some(state))
            if state.server == client.base_url() && !held.due_for_refresh(SystemTime::now()) =>
        {
            Some(state.etag.as_str())
        }
        _ => None,
    };
    let kept = || match &previous {
        Some((_, held)) => format!("keeping the previous bundle ({})", held.summary()),
        None => "there is no previous bundle".to_owned(),
    };
    let (bytes, etag) = match client.bundle(if_none_match).with_context(kept)? {
        BundleFetch::NotModified { .. } => {
            if let Some((_, held)) = &previous {
                outln!("unchanged: {} ({})", held.summary(), path.display());
                judge_freshness("the pulled bundle", held, how.require_fresh)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        BundleFetch::Fetched { bytes, etag } => (bytes, etag),
    };
    let bundle = match Bundle::verify_any(&bytes, &keys) {
        Ok(bundle) => bundle,
        Err(e) => bail!("refused the bundle from {}: {e}; {}", client.base_url(), kept()),
    };
    let fetched = Held::of(&bundle);
    let stale = match fetched.freshness {
        Freshness::Current { .. } => None,
        Freshness::Expired { expires_at } => {
            Some(format!("it expired at {}: a stale copy", utc(expires_at)))
        }
        // An old server's bundle, or an old bundle replayed: its age
        // cannot be told, so only an operator who says so takes it.
        Freshness::Unknown if !how.allow_downgrade => {
            Some("it signs no expiry (bundle format 1; --allow-downgrade accepts it)".to_owned())
        }
        Freshness::Unknown => None,
    };
    if let Some(why) = stale {
        bail!("refused the bundle from {}: {why}; {}", client.base_url(), kept());
    }
    if let Some((_, held)) = &previous
        && !how.allow_downgrade
        && let Some(why) = downgrade(&held.index, &fetched.index)
    {
        bail!(
            "refused the bundle from {}: {why} (--allow-downgrade accepts it); {}",
            client.base_url(),
            kept()
        );
    }
    write_atomically(&path, &bytes)?;
    let state = PullState {
        server: client.base_url().to_owned(),
        etag: etag.unwrap_or_else(|| bundle.etag().to_owned()),
    };
    write_atomically(&state_path(&path), &serde_json::to_vec_pretty(&state)?)?;
    outln!(
        "pulled revision {}: {} rules, signed by {}, current until {} ({})",
        bundle.index.ruleset_revision,
        bundle.index.rules.len(),
        bundle.index.public_key,
        bundle.index.expires_at.map_or_else(|| "(no expiry)".to_owned(), utc),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn show(config: &UserConfig, path: Option<&Path>, keys: &[String]) -> anyhow::Result<ExitCode> {
    let keys = config.public_keys(keys)?;
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => bundle_path().context("no pulled bundle: set PITFALL_BUNDLE or HOME")?,
    };
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let bundle = Bundle::verify_any(&bytes, &keys)
        .with_context(|| format!("{}: refused", path.display()))?;
    let until = match bundle.freshness(SystemTime::now()) {
        Freshness::Current { expires_at } => format!("current until {}", utc(expires_at)),
        Freshness::Expired { expires_at } => format!("EXPIRED at {}", utc(expires_at)),
        Freshness::Unknown => "no expiry (format 1)".to_owned(),
    };
    outln!(
        "{}: revision {}, {} rules, signed by {}, {until}",
        path.display(),
        bundle.index.ruleset_revision,
        bundle.index.rules.len(),
        bundle.index.public_key,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_796_600_037), "2026-12-06 23:33 UTC");
    }
}
