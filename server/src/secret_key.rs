//! The key that seals watch secrets in the database (`secret_box.rs`). It
//! is configuration, shared by every replica (`--secret-key-file`): a
//! secret sealed by one server is opened by whichever replica delivers
//! its notification. Without the flag, a single-process server keeps a key
//! in its data dir, generated on first start.
//!
//! The file holds the 32 key bytes as 64 hex digits, optionally followed
//! by a newline (`openssl rand -hex 32` writes one). Whoever reads it and
//! a database dump can sign as the registry; losing it makes every sealed
//! secret unusable (each watch must be created again).

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::secret_box::{KEY_BYTES, SealingKey};

/// The key file's name in the data dir when no `--secret-key-file` is given.
pub const DEFAULT_KEY_FILE: &str = "watch-secret-key";

/// Where the key is read from, and whether it may be created there.
fn key_path(config: &Config) -> (PathBuf, bool) {
    match &config.secret_key_file {
        Some(path) => (path.clone(), false),
        None => (config.data_dir.join(DEFAULT_KEY_FILE), true),
    }
}

/// The file the key is read from (for the start-up log).
pub fn path(config: &Config) -> PathBuf {
    key_path(config).0
}

/// The configured key; without `--secret-key-file`, the data dir's key,
/// created on first use.
pub fn load_or_create(config: &Config) -> anyhow::Result<SealingKey> {
    let (path, may_create) = key_path(config);
    let fresh = || {
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
        Ok((SealingKey::from_bytes(bytes), format!("{}\n", to_hex(&bytes))))
    };
    let (key, created) = crate::key_file::load_or_create(
        &path,
        may_create,
        "watch secret key",
        |text| read_hex(&path, text),
        fresh,
    )?;
    if created {
        tracing::info!(path = %path.display(), "generated a watch secret key");
    }
    Ok(key)
}

/// The key a file's text holds: 64 hex digits and at most a newline.
fn read_hex(path: &Path, text: &str) -> anyhow::Result<SealingKey> {
    parse_hex(text.strip_suffix('\n').unwrap_or(text)).map(SealingKey::from_bytes).ok_or_else(
        || {
            anyhow::anyhow!(
                "{}: not a watch secret key: expected {} hex digits ({KEY_BYTES} bytes, as `openssl rand -hex {KEY_BYTES}` writes), and at most a newline",
                path.display(),
                KEY_BYTES * 2
            )
        },
    )
}

fn parse_hex(text: &str) -> Option<[u8; KEY_BYTES]> {
    let digits = text.as_bytes();
    if digits.len() != KEY_BYTES * 2 {
        return None;
    }
    let mut key = [0u8; KEY_BYTES];
    for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(key)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(data_dir: &Path, file: Option<PathBuf>) -> Config {
        let dir = data_dir.display().to_string();
        let mut config = Config::from_args(["pitfall-server", "--data-dir", &dir]).expect("config");
        config.secret_key_file = file;
        config
    }

    #[test]
    fn the_data_dir_key_is_made_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = config(dir.path(), None);
        let first = load_or_create(&config).expect("created");
        let path = dir.path().join(DEFAULT_KEY_FILE);
        let text = std::fs::read_to_string(&path).expect("written");
        assert_eq!(text.len(), 65, "64 hex digits and a newline: {text:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = load_or_create(&config).expect("read");
        let sealed = first.seal("a secret").expect("sealed");
        assert_eq!(again.open(&sealed).as_deref(), Ok("a secret"), "the same key");
    }

    #[test]
    fn a_named_key_file_is_read_never_made() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("shared-key");
        let missing = load_or_create(&config(dir.path(), Some(file.clone())));
        assert!(missing.is_err(), "a named file that is missing is an error");
        assert!(!file.exists() && !dir.path().join(DEFAULT_KEY_FILE).exists());
        std::fs::write(&file, format!("{}\n", "ab".repeat(32))).expect("write");
        let key = load_or_create(&config(dir.path(), Some(file.clone()))).expect("read");
        let same = SealingKey::from_bytes([0xab; KEY_BYTES]);
        assert_eq!(same.open(&key.seal("x").expect("sealed")).as_deref(), Ok("x"));
    }

    #[test]
    fn a_malformed_key_file_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("bad-key");
        for text in
            ["", "abcd\n", &"zz".repeat(32), &"ab".repeat(33), &format!("{}\n\n", "ab".repeat(32))]
        {
            std::fs::write(&file, text).expect("write");
            let error = load_or_create(&config(dir.path(), Some(file.clone())))
                .expect_err("refused")
                .to_string();
            assert!(error.contains("bad-key") && error.contains("64 hex digits"), "{error}");
        }
    }
}
