//! The key that signs bundles. It is configuration, shared by every
//! replica (`--signing-key-file`): several servers on one database must
//! serve bundles that verify with one pinned public key. Without the flag,
//! a single-process server keeps a key in its data dir, generated on first
//! start; `pitfall-server admin bundle-key` prints its public half.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use pitfall_api::BundleSigner;

use crate::config::Config;

/// The key file's name in the data dir when no `--signing-key-file` is given.
pub const DEFAULT_KEY_FILE: &str = "bundle-signing-key.pem";

/// A fresh key from the OS's randomness.
pub fn generate() -> anyhow::Result<BundleSigner> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(BundleSigner::from_seed(&seed))
}

/// Where the key is read from, and whether it may be created there.
fn key_path(config: &Config) -> (PathBuf, bool) {
    match &config.signing_key_file {
        Some(path) => (path.clone(), false),
        None => (config.data_dir.join(DEFAULT_KEY_FILE), true),
    }
}

/// The configured key; without `--signing-key-file`, the data dir's key,
/// created on first use.
pub fn load_or_create(config: &Config) -> anyhow::Result<BundleSigner> {
    let (path, may_create) = key_path(config);
    match std::fs::read_to_string(&path) {
        Ok(pem) => read_pem(&path, &pem),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && may_create => create(&path),
        Err(e) => {
            Err(e).with_context(|| format!("reading the bundle signing key {}", path.display()))
        }
    }
}

fn read_pem(path: &Path, pem: &str) -> anyhow::Result<BundleSigner> {
    BundleSigner::from_pkcs8_pem(pem).map_err(|e| {
        anyhow::anyhow!("{}: not an ed25519 private key in PKCS#8 PEM ({e})", path.display())
    })
}

/// Writes a new key, readable by its owner only. Two processes starting on
/// one data dir at once agree: the second finds the first's file.
fn create(path: &Path) -> anyhow::Result<BundleSigner> {
    let signer = generate()?;
    let pem =
        signer.to_pkcs8_pem().map_err(|e| anyhow::anyhow!("encoding the new signing key: {e}"))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(pem.as_bytes()).and_then(|()| file.sync_all()).with_context(|| {
                format!("writing the new bundle signing key {}", path.display())
            })?;
            tracing::info!(path = %path.display(), public_key = %signer.public_key(), "generated a bundle signing key");
            Ok(signer)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let pem = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            if pem.is_empty() {
                bail!("{} is being written by another process; start again", path.display());
            }
            read_pem(path, &pem)
        }
        Err(e) => {
            Err(e).with_context(|| format!("creating the bundle signing key {}", path.display()))
        }
    }
}
