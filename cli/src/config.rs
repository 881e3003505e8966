//! The user's settings: `~/.config/pitfall/config.toml` (or
//! `$XDG_CONFIG_HOME/pitfall/config.toml`, or the file `PITFALL_CONFIG`
//! names), each key overridden by its environment variable.
//!
//! ```toml
//! server = "https://pitfall.example.org"          # PITFALL_SERVER
//! bundle_public_key = "ed25519:..."               # PITFALL_BUNDLE_KEY
//! # while the registry rotates its key, both, comma-separated:
//! # bundle_public_key = "ed25519:OLD...,ed25519:NEW..."
//! token = "pft_..."                               # PITFALL_TOKEN
//! ```

use std::path::PathBuf;

use anyhow::Context;
use pitfall_client::api::PublicKey;
use serde::Deserialize;

/// The settings in effect. Its `Debug` never shows the token.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserConfig {
    /// The registry `bundle pull` (and, through `PITFALL_SERVER`, `check`) uses.
    pub(crate) server: Option<String>,
    /// The key bundles must be signed with (two, comma-separated, while
    /// the registry rotates its key).
    pub(crate) bundle_public_key: Option<String>,
    /// A bearer token for writes.
    pub(crate) token: Option<String>,
}

impl std::fmt::Debug for UserConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserConfig")
            .field("server", &self.server)
            .field("bundle_public_key", &self.bundle_public_key)
            .field("token", &pitfall_client::api::redacted(&self.token))
            .finish()
    }
}

/// Where a token came from, for what to warn about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenSource {
    /// `--token` on the command line: other users see it in the process
    /// list, and it stays in the shell's history.
    Flag,
    /// `PITFALL_TOKEN` or the config file.
    Settings,
}

/// Warns on stderr before a token is sent in a way that exposes it: over
/// plain http to another machine, or given as `--token`.
pub(crate) fn warn_about_token(client: &pitfall_client::Client, source: TokenSource) {
    if client.sends_token_in_the_clear() {
        eprintln!(
            "warning: sending the token over plain http to {}: anyone on the path can read and \
             reuse it; use https (or a loopback address)",
            client.base_url()
        );
    }
    if source == TokenSource::Flag {
        eprintln!(
            "warning: --token is visible to other users of this machine and kept in shell \
             history; prefer PITFALL_TOKEN or `token` in {}",
            path().map_or_else(|| "the config file".to_owned(), |p| p.display().to_string())
        );
    }
}

/// A per-user file or folder: the path `override_var` names, else
/// `$<xdg_var>/pitfall/<name>`, else `~/<home_default>/pitfall/<name>`;
/// none when no such place can be named.
pub(crate) fn user_path(
    override_var: &str,
    xdg_var: &str,
    home_default: &str,
    name: &str,
) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(override_var) {
        return Some(PathBuf::from(path));
    }
    let base = std::env::var_os(xdg_var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(home_default)))?;
    Some(base.join("pitfall").join(name))
}

/// The config file's path.
pub(crate) fn path() -> Option<PathBuf> {
    user_path("PITFALL_CONFIG", "XDG_CONFIG_HOME", ".config", "config.toml")
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

impl UserConfig {
    /// The file (absent: nothing set), then the environment over it.
    pub(crate) fn load() -> anyhow::Result<UserConfig> {
        let mut config = match path() {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(text) => toml::from_str(&text)
                    .with_context(|| format!("{}: invalid config", path.display()))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => UserConfig::default(),
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            },
            None => UserConfig::default(),
        };
        config.server = env("PITFALL_SERVER").or(config.server);
        config.bundle_public_key = env("PITFALL_BUNDLE_KEY").or(config.bundle_public_key);
        config.token = env("PITFALL_TOKEN").or(config.token);
        Ok(config)
    }

    /// The pinned keys (`--key`, which may be given twice, first; else the
    /// comma-separated setting); an error says how to pin one.
    pub(crate) fn public_keys(&self, flags: &[String]) -> anyhow::Result<Vec<PublicKey>> {
        let texts: Vec<&str> = if flags.is_empty() {
            self.bundle_public_key.as_deref().map_or_else(Vec::new, |t| t.split(',').collect())
        } else {
            flags.iter().flat_map(|f| f.split(',')).collect()
        };
        let texts: Vec<&str> = texts.into_iter().map(str::trim).filter(|t| !t.is_empty()).collect();
        if texts.is_empty() {
            anyhow::bail!(
                "no bundle public key is pinned: set bundle_public_key in {} or PITFALL_BUNDLE_KEY \
                 (the registry's operator prints it with `pitfall-server admin bundle-key`)",
                path().map_or_else(|| "the config file".to_owned(), |p| p.display().to_string())
            );
        }
        if texts.len() > 2 {
            anyhow::bail!(
                "{} bundle public keys are pinned; at most two (the old and the new one while \
                 the registry rotates its key)",
                texts.len()
            );
        }
        texts.iter().map(|t| t.parse().context("the pinned bundle public key")).collect()
    }
}
