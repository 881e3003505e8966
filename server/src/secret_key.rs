//! The keys that seal watch secrets in the database (`secret_box.rs`).
//! The key is configuration, shared by every replica
//! (`--secret-key-file`): a secret sealed by one server is opened by
//! whichever replica delivers its notification. Without the flag, a
//! single-process server keeps a key in its data dir, generated on first
//! start.
//!
//! The file holds the 32 key bytes as 64 hex digits, optionally followed
//! by a newline (`openssl rand -hex 32` writes one). Whoever reads it and
//! a database dump can sign as the registry; losing it makes every sealed
//! secret unusable (each watch must be created again).
//!
//! Rotation (`admin secret-key rotate`, [`rotate`]) moves the key to the
//! same path with `.previous` appended and writes a fresh one in its
//! place. A server holds both ([`SecretKeys`]): the current key seals, the
//! previous one still opens what it sealed, and each start re-seals those
//! rows under the current key (`Store::seal_watch_secrets`). A server
//! started before the rotation reads the files again when a value names a
//! key it does not hold, and before it seals, so replicas sharing the
//! files agree without a restart and none seals under a key the files no
//! longer hold.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::Context;

use crate::config::Config;
use crate::secret_box::{KEY_BYTES, OpenError, SealError, SealedSecret, SealingKey, SealingKeys};

/// The key file's name in the data dir when no `--secret-key-file` is given.
pub const DEFAULT_KEY_FILE: &str = "watch-secret-key";
/// Appended to the key file's path for the key a rotation replaced.
pub const PREVIOUS_SUFFIX: &str = ".previous";

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

/// The file the previous key is read from, beside the key's.
pub fn previous_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(PREVIOUS_SUFFIX);
    PathBuf::from(name)
}

/// The keys a server seals and opens watch secrets with, read again from
/// their files when another process rotated them. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SecretKeys {
    /// The key file, `None` for keys given in code (tests, the bench).
    path: Option<PathBuf>,
    held: Arc<RwLock<Arc<SealingKeys>>>,
}

impl From<SealingKey> for SecretKeys {
    /// One key, never read again.
    fn from(key: SealingKey) -> SecretKeys {
        SecretKeys::from(SealingKeys::new(key))
    }
}

impl From<SealingKeys> for SecretKeys {
    /// These keys, never read again.
    fn from(keys: SealingKeys) -> SecretKeys {
        SecretKeys { path: None, held: Arc::new(RwLock::new(Arc::new(keys))) }
    }
}

impl SecretKeys {
    /// The configured key and, if a rotation left it, the previous one;
    /// without `--secret-key-file`, the data dir's key, created on first
    /// use.
    pub fn load_or_create(config: &Config) -> anyhow::Result<SecretKeys> {
        let (path, may_create) = key_path(config);
        let (current, created) = crate::key_file::load_or_create(
            &path,
            may_create,
            "watch secret key",
            |text| read_hex(&path, text),
            fresh_key,
        )?;
        if created {
            tracing::info!(path = %path.display(), "generated a watch secret key");
        }
        let keys = with_previous(current, &path)?;
        Ok(SecretKeys { path: Some(path), held: Arc::new(RwLock::new(Arc::new(keys))) })
    }

    /// The keys held now.
    pub fn get(&self) -> Arc<SealingKeys> {
        self.held.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the files again; the keys held after (the same ones when the
    /// files did not change, or cannot be read: a rotation half-written or
    /// a file taken away leaves this process with what it had).
    pub fn reread(&self) -> Arc<SealingKeys> {
        let Some(path) = &self.path else { return self.get() };
        let read = std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|text| read_hex(path, &text))
            .and_then(|current| with_previous(current, path));
        let keys = match read {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "the watch secret key files could not be read again; the keys held are kept"
                );
                return self.get();
            }
        };
        let mut held = self.held.write().unwrap_or_else(|p| p.into_inner());
        let changed = held.current().id() != keys.current().id()
            || held.previous().map(SealingKey::id) != keys.previous().map(SealingKey::id);
        if changed {
            tracing::info!(
                key_id = keys.current().id(),
                previous_key_id = keys.previous().map(SealingKey::id),
                "the watch secret key files changed (a rotation); the new keys are held"
            );
            *held = Arc::new(keys);
        }
        held.clone()
    }

    /// `secret` sealed under the current key as the files hold it now, so
    /// a process started before a rotation seals under the new key (two
    /// small reads, where a watch is written).
    pub fn seal(&self, secret: &str) -> Result<SealedSecret, SealError> {
        self.reread().seal(secret)
    }

    /// The secret a stored value holds; when the keys held do not open it
    /// but another key might (a rotation this process has not read yet),
    /// with the keys the files hold now.
    pub fn open(&self, stored: &SealedSecret) -> Result<String, OpenError> {
        let held = self.get();
        match held.open(stored) {
            Err(e) if e.may_open_with_another_key() && self.path.is_some() => {
                let now = self.reread();
                if Arc::ptr_eq(&now, &held) { Err(e) } else { now.open(stored) }
            }
            other => other,
        }
    }
}

/// `current` with the previous key from beside `path`, if a rotation
/// left one there.
fn with_previous(current: SealingKey, path: &Path) -> anyhow::Result<SealingKeys> {
    let previous = previous_path(path);
    match std::fs::read_to_string(&previous) {
        Ok(text) => Ok(SealingKeys::rotating(current, read_hex(&previous, &text)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SealingKeys::new(current)),
        Err(e) => Err(e).with_context(|| {
            format!("reading the previous watch secret key {}", previous.display())
        }),
    }
}

/// A fresh key and the text its file holds.
fn fresh_key() -> anyhow::Result<(SealingKey, String)> {
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok((SealingKey::from_bytes(bytes), format!("{}\n", to_hex(&bytes))))
}

/// What a rotation wrote.
#[derive(Debug)]
pub struct Rotated {
    /// The key file, now holding the new key.
    pub path: PathBuf,
    /// The new key's id.
    pub key_id: String,
    /// The previous key's file and id.
    pub previous: (PathBuf, String),
}

/// Rotates the key at `path` (which must exist): its text goes to the
/// `.previous` file, a fresh key takes its place, each file replaced
/// whole (written aside, then renamed over), previous first, so a crash
/// between the two leaves the old key in both and nothing lost. The
/// caller checks first that no stored secret still needs the previous
/// file's key (`server::rotate_secret_key`).
pub fn rotate(path: &Path) -> anyhow::Result<Rotated> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the watch secret key {}", path.display()))?;
    let old = read_hex(path, &text)?;
    let previous = previous_path(path);
    crate::key_file::replace(&previous, &text, "previous watch secret key")?;
    let (new, new_text) = fresh_key()?;
    crate::key_file::replace(path, &new_text, "watch secret key")?;
    Ok(Rotated {
        path: path.to_owned(),
        key_id: new.id().to_owned(),
        previous: (previous, old.id().to_owned()),
    })
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
        let first = SecretKeys::load_or_create(&config).expect("created");
        let path = dir.path().join(DEFAULT_KEY_FILE);
        let text = std::fs::read_to_string(&path).expect("written");
        assert_eq!(text.len(), 65, "64 hex digits and a newline: {text:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = SecretKeys::load_or_create(&config).expect("read");
        let sealed = first.seal("a secret").expect("sealed");
        assert_eq!(again.open(&sealed).as_deref(), Ok("a secret"), "the same key");
        assert!(again.get().previous().is_none(), "no rotation, no previous key");
    }

    #[test]
    fn a_named_key_file_is_read_never_made() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("shared-key");
        let missing = SecretKeys::load_or_create(&config(dir.path(), Some(file.clone())));
        assert!(missing.is_err(), "a named file that is missing is an error");
        assert!(!file.exists() && !dir.path().join(DEFAULT_KEY_FILE).exists());
        std::fs::write(&file, format!("{}\n", "ab".repeat(32))).expect("write");
        let keys =
            SecretKeys::load_or_create(&config(dir.path(), Some(file.clone()))).expect("read");
        let same = SealingKey::from_bytes([0xab; KEY_BYTES]);
        assert_eq!(same.open(&keys.seal("x").expect("sealed")).as_deref(), Ok("x"));
    }

    #[test]
    fn a_malformed_key_file_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("bad-key");
        for text in
            ["", "abcd\n", &"zz".repeat(32), &"ab".repeat(33), &format!("{}\n\n", "ab".repeat(32))]
        {
            std::fs::write(&file, text).expect("write");
            let error = SecretKeys::load_or_create(&config(dir.path(), Some(file.clone())))
                .expect_err("refused")
                .to_string();
            assert!(error.contains("bad-key") && error.contains("64 hex digits"), "{error}");
        }
        // A malformed previous key stops the start too.
        std::fs::write(&file, format!("{}\n", "ab".repeat(32))).expect("write");
        std::fs::write(previous_path(&file), "zz\n").expect("write");
        let error = SecretKeys::load_or_create(&config(dir.path(), Some(file.clone())))
            .expect_err("refused")
            .to_string();
        assert!(error.contains("bad-key.previous"), "{error}");
    }

    /// A rotation: the old key moves to `.previous` (owner-only, as the
    /// key), a fresh one takes its place. A process that loaded the keys
    /// before it opens what the new key sealed (it reads the files again),
    /// seals under the new key from then on, and still opens the old.
    #[test]
    fn a_rotation_is_read_by_a_process_started_before_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = config(dir.path(), None);
        let before = SecretKeys::load_or_create(&config).expect("created");
        let old_id = before.get().current().id().to_owned();
        let old_secret = before.seal("sealed before").expect("sealed");

        let path = dir.path().join(DEFAULT_KEY_FILE);
        let rotated = rotate(&path).expect("rotated");
        assert_eq!(rotated.previous, (previous_path(&path), old_id.clone()));
        assert_ne!(rotated.key_id, old_id);
        #[cfg(unix)]
        for file in [&path, &previous_path(&path)] {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(file).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", file.display());
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(leftovers.len(), 2, "no file written aside is left: {leftovers:?}");

        let after = SecretKeys::load_or_create(&config).expect("read");
        assert_eq!(after.get().current().id(), rotated.key_id);
        assert_eq!(after.get().previous().map(SealingKey::id), Some(old_id.as_str()));
        let new_secret = after.seal("sealed after").expect("sealed");
        assert_eq!(after.open(&old_secret).as_deref(), Ok("sealed before"));

        // The process from before: it opens the new value by reading the
        // files again, and seals under the new key.
        assert_eq!(before.get().current().id(), old_id, "nothing read yet");
        assert_eq!(before.open(&new_secret).as_deref(), Ok("sealed after"));
        assert_eq!(before.get().current().id(), rotated.key_id);
        let sealed = before.seal("sealed by the old process").expect("sealed");
        assert_eq!(sealed.key_id(), Some(rotated.key_id.as_str()));
        assert_eq!(before.open(&old_secret).as_deref(), Ok("sealed before"));

        // Keys given in code are never read again.
        let fixed = SecretKeys::from(SealingKey::from_bytes([1; KEY_BYTES]));
        assert!(fixed.open(&new_secret).is_err());
    }

    #[test]
    fn a_rotation_needs_a_key_to_rotate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = rotate(&dir.path().join("absent")).expect_err("nothing to rotate");
        assert!(format!("{error:#}").contains("absent"), "{error:#}");
        assert!(!previous_path(&dir.path().join("absent")).exists());
    }
}
