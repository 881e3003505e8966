//! Compiled code, cached by the host itself: in memory by module digest,
//! and optionally on disk in a directory only this user can write.
//!
//! Deserialising compiled code skips validation and runs it as native code
//! outside the sandbox, so only bytes this host (or an earlier run of it)
//! serialised are ever deserialised:
//!
//! - the directory must be owned by this user and writable by nobody else
//!   (group or others); otherwise the disk cache is refused and rules are
//!   compiled afresh ([`CompiledCache::refused`] says why);
//! - every file carries an HMAC-SHA256 of its module's digest and its
//!   contents, keyed with a secret made once per install (`key`, in the
//!   directory, mode 0600): someone who can change a file but cannot read
//!   the key cannot forge an entry that verifies. A plain hash would not
//!   do: whoever flips bytes recomputes it;
//! - files are written atomically (temp file + rename), named by the
//!   module's sha256 and the engine's compatibility fingerprint; anything
//!   that does not verify is recompiled.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use wasmtime::Module;

type HmacSha256 = Hmac<Sha256>;

/// A module's identity: the sha256 of its bytes, in hex.
pub(crate) fn digest_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// Version 3: the header is an HMAC under the install's key (version 2
/// had a plain sha256, which anyone who alters a file can recompute).
const MAGIC: &[u8; 8] = b"PFCWASM3";

/// The install's HMAC key, inside the cache directory.
const KEY_FILE: &str = "key";
const KEY_BYTES: usize = 32;

/// Compiled modules kept in memory at most. The map only saves a second
/// compile (or a disk read) when the same bytes are loaded again, e.g. a
/// publish's assessment and then the registry's load of the approved
/// version; a loaded rule holds its own compiled code. Unbounded, it kept
/// every module ever published (refused, yanked and superseded ones too),
/// so memory grew with each publish.
const MAX_IN_MEMORY: usize = 256;

/// The on-disk part: a directory that passed [`trusted_dir`] and its key.
struct Disk {
    dir: PathBuf,
    key: [u8; KEY_BYTES],
}

impl std::fmt::Debug for Disk {
    // The key never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disk").field("dir", &self.dir).finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
pub(crate) struct CompiledCache {
    memory: Mutex<HashMap<String, Module>>,
    disk: Option<Disk>,
    /// Why a directory was asked for and not used.
    refused: Option<String>,
    fingerprint: String,
}

impl CompiledCache {
    /// A cache in memory, and on disk in `dir` when that directory can be
    /// trusted (created with mode 0700 if missing). A directory that
    /// cannot be trusted is not an error: the cache runs without it.
    pub(crate) fn new(dir: Option<PathBuf>, engine: &wasmtime::Engine) -> CompiledCache {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let (disk, refused) = match dir.map(|d| open_disk(&d).map_err(|e| (d, e))) {
            None => (None, None),
            Some(Ok(disk)) => (Some(disk), None),
            Some(Err((d, why))) => {
                (None, Some(format!("compiled-code cache {} not used: {why}", d.display())))
            }
        };
        CompiledCache {
            memory: Mutex::default(),
            disk,
            refused,
            fingerprint: format!("{:016x}", h.finish()),
        }
    }

    /// Why the directory asked for is not used, if it is not.
    pub(crate) fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    pub(crate) fn get(&self, engine: &wasmtime::Engine, sha256: &str) -> Option<Module> {
        if let Some(m) = self.memory.lock().ok()?.get(sha256) {
            return Some(m.clone());
        }
        let artifact = self.read_verified(sha256)?;
        // SAFETY: `artifact` carries an HMAC under this install's key, which
        // only this user can read, over the module's digest and these bytes;
        // only `put` below computes it, from `Module::serialize` of this
        // engine configuration (the file name carries the engine
        // fingerprint). So these are bytes this host produced.
        let module = unsafe { Module::deserialize(engine, &artifact) }.ok()?;
        self.remember(sha256, &module);
        Some(module)
    }

    /// The compiled code stored for `sha256`, if its file verifies.
    fn read_verified(&self, sha256: &str) -> Option<Vec<u8>> {
        let disk = self.disk.as_ref()?;
        let mut file = fs::read(self.path(sha256)?).ok()?;
        let start = verified(&disk.key, sha256, &file)?;
        Some(file.split_off(start))
    }

    /// Keeps `module` in memory, within [`MAX_IN_MEMORY`].
    fn remember(&self, sha256: &str, module: &Module) {
        if let Ok(mut mem) = self.memory.lock() {
            if mem.len() >= MAX_IN_MEMORY && !mem.contains_key(sha256) {
                // Forget them all: rules in use hold their own code, and a
                // forgotten one is read back from the disk cache if needed.
                mem.clear();
            }
            mem.insert(sha256.to_owned(), module.clone());
        }
    }

    pub(crate) fn put(&self, sha256: &str, module: &Module) {
        self.remember(sha256, module);
        let (Some(disk), Some(path)) = (self.disk.as_ref(), self.path(sha256)) else {
            return;
        };
        let Ok(artifact) = module.serialize() else { return };
        // The disk cache is an optimisation: a failure to write it costs a
        // recompile next time, nothing else.
        let _ = write_atomically(&path, &mac(&disk.key, sha256, &artifact), &artifact);
    }

    fn path(&self, sha256: &str) -> Option<PathBuf> {
        self.disk.as_ref().map(|d| d.dir.join(format!("{sha256}-{}.cwasm", self.fingerprint)))
    }
}

fn mac(key: &[u8], sha256: &str, artifact: &[u8]) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    // The digest is bound in too, so a valid entry cannot be renamed to
    // stand for another module.
    m.update(sha256.as_bytes());
    m.update(artifact);
    let mut tag = [0u8; 32];
    tag.copy_from_slice(&m.finalize().into_bytes());
    tag
}

/// Where the artifact starts in `file`, if its header is `MAGIC` and the
/// HMAC of `sha256` and the rest under `key`.
fn verified(key: &[u8], sha256: &str, file: &[u8]) -> Option<usize> {
    let rest = file.strip_prefix(MAGIC)?;
    let (tag, artifact) = rest.split_at_checked(32)?;
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).ok()?;
    m.update(sha256.as_bytes());
    m.update(artifact);
    // Constant-time comparison: the tag is a secret's function.
    m.verify_slice(tag).ok()?;
    Some(MAGIC.len() + 32)
}

fn write_atomically(path: &Path, tag: &[u8], artifact: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(MAGIC)?;
    f.write_all(tag)?;
    f.write_all(artifact)?;
    f.sync_all()?;
    fs::rename(&tmp, path)
}

/// Creates `dir` (mode 0700) if missing, checks it, and reads or makes
/// its key.
fn open_disk(dir: &Path) -> Result<Disk, String> {
    create_private_dir(dir).map_err(|e| format!("cannot create it: {e}"))?;
    trusted_dir(dir)?;
    let key = read_or_make_key(&dir.join(KEY_FILE))?;
    Ok(Disk { dir: dir.to_owned(), key })
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// This process's effective user id.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Owned by this process's user and writable by no one else: otherwise
/// another user could plant or swap files (or the key) in it.
#[cfg(unix)]
fn trusted_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // `symlink_metadata`: a symlink's target is somebody else's choice.
    let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory (or a symbolic link)".to_owned());
    }
    let me = euid();
    if meta.uid() != me {
        return Err(format!("owned by uid {}, not by this user (uid {me})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("writable by others (mode {:o})", meta.mode() & 0o7777));
    }
    Ok(())
}

#[cfg(not(unix))]
fn trusted_dir(_dir: &Path) -> Result<(), String> {
    Err("only checked on unix".to_owned())
}

/// The install's key: read if `path` holds one this user owns and only
/// this user can read, else made (32 random bytes, mode 0600, never
/// replacing a file that is there).
#[cfg(unix)]
fn read_or_make_key(path: &Path) -> Result<[u8; KEY_BYTES], String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            let me = euid();
            if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
                return Err(format!(
                    "its key {} is not a file only this user can read (uid {}, mode {:o})",
                    path.display(),
                    meta.uid(),
                    meta.mode() & 0o7777
                ));
            }
            let bytes = fs::read(path).map_err(|e| format!("reading its key: {e}"))?;
            bytes
                .try_into()
                .map_err(|_| format!("its key {} is not {KEY_BYTES} bytes", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; KEY_BYTES];
            getrandom::fill(&mut key).map_err(|e| format!("no randomness for its key: {e}"))?;
            // Written whole under a temporary name, then linked into place:
            // a second process starting at the same time either links first
            // or reads the complete key the first one linked.
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let written = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
                .and_then(|()| fs::hard_link(&tmp, path));
            let _ = fs::remove_file(&tmp);
            match written {
                Ok(()) => Ok(key),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_or_make_key(path),
                Err(e) => Err(format!("creating its key: {e}")),
            }
        }
        Err(e) => Err(format!("reading its key: {e}")),
    }
}

#[cfg(not(unix))]
fn read_or_make_key(_path: &Path) -> Result<[u8; KEY_BYTES], String> {
    Err("only kept on unix".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_MODULE: &[u8] = b"\0asm\x01\0\0\0";

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        set_mode(dir.path(), 0o700);
        dir
    }

    fn set_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn cache_in(dir: &Path, engine: &wasmtime::Engine) -> CompiledCache {
        CompiledCache::new(Some(dir.to_owned()), engine)
    }

    #[test]
    fn an_entry_with_flipped_bytes_and_a_recomputed_plain_hash_is_refused() {
        let engine = wasmtime::Engine::default();
        let dir = private_dir();
        let module = Module::new(&engine, EMPTY_MODULE).expect("an empty module");
        let sha = digest_hex(EMPTY_MODULE);
        let cache = cache_in(dir.path(), &engine);
        assert_eq!(cache.refused(), None);
        cache.put(&sha, &module);
        let path = cache.path(&sha).expect("a disk cache");
        let fresh = cache_in(dir.path(), &engine);
        assert!(fresh.read_verified(&sha).is_some(), "what this host wrote verifies");

        // What someone who can write the file but not read the key can do:
        // change the code and put a correct sha256 of it in the header.
        let file = fs::read(&path).expect("the entry");
        let mut artifact = file[MAGIC.len() + 32..].to_vec();
        let middle = artifact.len() / 2;
        artifact[middle] ^= 0x5a;
        let mut forged = MAGIC.to_vec();
        forged.extend_from_slice(&Sha256::digest(&artifact));
        forged.extend_from_slice(&artifact);
        fs::write(&path, &forged).expect("write the forged entry");
        let fresh = cache_in(dir.path(), &engine);
        assert!(fresh.read_verified(&sha).is_none(), "a plain hash buys nothing");
        assert!(fresh.get(&engine, &sha).is_none(), "and nothing is deserialised");

        // Nor does a valid entry of another module, renamed.
        let other = digest_hex(b"another module");
        fs::write(&path, &file).expect("restore");
        fs::copy(&path, cache.path(&other).expect("path")).expect("copy");
        assert!(cache_in(dir.path(), &engine).read_verified(&other).is_none());
    }

    #[test]
    fn tampered_or_truncated_cache_files_do_not_verify() {
        let key = [7u8; KEY_BYTES];
        let artifact = b"compiled code".to_vec();
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&mac(&key, "ab", &artifact));
        file.extend_from_slice(&artifact);
        assert_eq!(verified(&key, "ab", &file), Some(MAGIC.len() + 32));
        assert_eq!(verified(&[8u8; KEY_BYTES], "ab", &file), None, "another install's key");
        let mut tampered = file.clone();
        *tampered.last_mut().expect("non-empty") ^= 1;
        assert_eq!(verified(&key, "ab", &tampered), None);
        assert_eq!(verified(&key, "ab", &file[..20]), None);
        assert_eq!(verified(&key, "ab", b"not a cache file at all, not at all"), None);
    }

    #[test]
    fn the_key_is_made_once_with_mode_0600_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let engine = wasmtime::Engine::default();
        let dir = private_dir();
        let first = cache_in(dir.path(), &engine);
        let meta = fs::metadata(dir.path().join(KEY_FILE)).expect("the key");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let second = cache_in(dir.path(), &engine);
        assert_eq!(first.disk.as_ref().map(|d| d.key), second.disk.as_ref().map(|d| d.key));
        // A key others can read is no secret: the cache is refused.
        set_mode(&dir.path().join(KEY_FILE), 0o644);
        let third = cache_in(dir.path(), &engine);
        assert!(third.disk.is_none());
        assert!(third.refused().expect("a reason").contains("key"), "{:?}", third.refused());
    }

    #[test]
    fn a_directory_others_can_write_or_another_user_owns_is_not_used() {
        let engine = wasmtime::Engine::default();
        let module = Module::new(&engine, EMPTY_MODULE).expect("an empty module");
        let sha = digest_hex(EMPTY_MODULE);
        for mode in [0o777, 0o770, 0o702] {
            let dir = private_dir();
            set_mode(dir.path(), mode);
            let cache = cache_in(dir.path(), &engine);
            let why = cache.refused().expect("refused");
            assert!(why.contains("writable by others"), "{mode:o}: {why}");
            cache.put(&sha, &module);
            assert!(!dir.path().join(KEY_FILE).exists(), "no key is written there");
            assert_eq!(fs::read_dir(dir.path()).expect("ls").count(), 0, "nor any code");
            assert!(cache.get(&engine, &sha).is_some(), "the in-memory cache still works");
        }
        // Ownership can only be handed to someone else by root.
        if euid() == 0 {
            let dir = private_dir();
            std::os::unix::fs::chown(dir.path(), Some(65534), None).expect("chown");
            let cache = cache_in(dir.path(), &engine);
            assert!(cache.refused().expect("refused").contains("owned by uid 65534"));
        }
        let file = tempfile::NamedTempFile::new().expect("a file");
        assert!(cache_in(file.path(), &engine).refused().is_some(), "a file is no directory");
    }

    #[test]
    fn the_in_memory_map_stays_bounded_and_keeps_what_was_put_last() {
        let engine = wasmtime::Engine::default();
        let module = Module::new(&engine, EMPTY_MODULE).expect("an empty module");
        let cache = CompiledCache::new(None, &engine);
        for i in 0..MAX_IN_MEMORY * 2 + 3 {
            cache.put(&format!("{i:064x}"), &module);
            assert!(cache.memory.lock().expect("lock").len() <= MAX_IN_MEMORY);
        }
        let last = format!("{:064x}", MAX_IN_MEMORY * 2 + 2);
        assert!(cache.get(&engine, &last).is_some(), "the module put last is kept");
    }
}
