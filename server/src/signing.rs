//! The key that signs bundles. It is configuration, shared by every
//! replica (`--signing-key-file`): several servers on one database must
//! serve bundles that verify with one pinned public key. Without the flag,
//! a single-process server keeps a key in its data dir, generated on first
//! start; `pitfall-server admin bundle-key` prints its public half.

use std::path::{Path, PathBuf};

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
    let fresh = || {
        let signer = generate()?;
        let pem = signer
            .to_pkcs8_pem()
            .map_err(|e| anyhow::anyhow!("encoding the new signing key: {e}"))?;
        Ok((signer, pem))
    };
    let (signer, created) = crate::key_file::load_or_create(
        &path,
        may_create,
        "bundle signing key",
        |pem| read_pem(&path, pem),
        fresh,
    )?;
    if created {
        tracing::info!(path = %path.display(), public_key = %signer.public_key(), "generated a bundle signing key");
    }
    Ok(signer)
}

fn read_pem(path: &Path, pem: &str) -> anyhow::Result<BundleSigner> {
    BundleSigner::from_pkcs8_pem(pem).map_err(|e| {
        anyhow::anyhow!("{}: not an ed25519 private key in PKCS#8 PEM ({e})", path.display())
    })
}
