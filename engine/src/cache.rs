//! Compiled code, cached by the host itself: in memory by module digest,
//! and optionally on disk in a directory only this host writes.
//!
//! Deserialising compiled code skips validation, so only bytes this process
//! (or an earlier run of it) serialised are ever deserialised: files are
//! written atomically (temp file + rename) with a digest of their contents
//! in a header, named by the module's sha256 and the engine's
//! compatibility fingerprint; anything that does not verify is recompiled.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use wasmtime::Module;

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

/// Version 2: a resettable module is compiled with its mutable globals
/// exported (`crate::reset`); version 1's code lacks those exports.
const MAGIC: &[u8; 8] = b"PFCWASM2";

/// Compiled modules kept in memory at most. The map only saves a second
/// compile (or a disk read) when the same bytes are loaded again, e.g. a
/// publish's assessment and then the registry's load of the approved
/// version; a loaded rule holds its own compiled code. Unbounded, it kept
/// every module ever published (refused, yanked and superseded ones too),
/// so memory grew with each publish.
const MAX_IN_MEMORY: usize = 256;

#[derive(Debug, Default)]
pub(crate) struct CompiledCache {
    memory: Mutex<HashMap<String, Module>>,
    dir: Option<PathBuf>,
    fingerprint: String,
}

impl CompiledCache {
    pub(crate) fn new(
        dir: Option<PathBuf>,
        engine: &wasmtime::Engine,
    ) -> std::io::Result<CompiledCache> {
        if let Some(dir) = &dir {
            fs::create_dir_all(dir)?;
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        Ok(CompiledCache {
            memory: Mutex::default(),
            dir,
            fingerprint: format!("{:016x}", h.finish()),
        })
    }

    pub(crate) fn get(&self, engine: &wasmtime::Engine, sha256: &str) -> Option<Module> {
        if let Some(m) = self.memory.lock().ok()?.get(sha256) {
            return Some(m.clone());
        }
        let path = self.path(sha256)?;
        let bytes = fs::read(&path).ok()?;
        let artifact = verified(&bytes)?;
        // SAFETY: `artifact` was written by `put` below from
        // `Module::serialize` of this engine configuration (the file name
        // carries the engine fingerprint) and its digest verified, so these
        // are bytes this host produced, not bytes from outside.
        let module = unsafe { Module::deserialize(engine, artifact) }.ok()?;
        self.remember(sha256, &module);
        Some(module)
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
        let (Some(path), Ok(artifact)) = (self.path(sha256), module.serialize()) else {
            return;
        };
        // The disk cache is an optimisation: a failure to write it costs a
        // recompile next time, nothing else.
        let _ = write_atomically(&path, &artifact);
    }

    fn path(&self, sha256: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{sha256}-{}.cwasm", self.fingerprint)))
    }
}

fn verified(file: &[u8]) -> Option<&[u8]> {
    let rest = file.strip_prefix(MAGIC)?;
    let (digest, artifact) = rest.split_at_checked(32)?;
    (Sha256::digest(artifact).as_slice() == digest).then_some(artifact)
}

fn write_atomically(path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(MAGIC)?;
    f.write_all(&Sha256::digest(artifact))?;
    f.write_all(artifact)?;
    f.sync_all()?;
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tampered_or_truncated_cache_files_do_not_verify() {
        let artifact = b"compiled code".to_vec();
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&Sha256::digest(&artifact));
        file.extend_from_slice(&artifact);
        assert_eq!(verified(&file), Some(&artifact[..]));
        let mut tampered = file.clone();
        *tampered.last_mut().expect("non-empty") ^= 1;
        assert_eq!(verified(&tampered), None);
        assert_eq!(verified(&file[..20]), None);
        assert_eq!(verified(b"not a cache file at all, not at all"), None);
    }

    #[test]
    fn the_in_memory_map_stays_bounded_and_keeps_what_was_put_last() {
        let engine = wasmtime::Engine::default();
        let module = Module::new(&engine, b"\0asm\x01\0\0\0").expect("an empty module");
        let cache = CompiledCache::new(None, &engine).expect("cache");
        for i in 0..MAX_IN_MEMORY * 2 + 3 {
            cache.put(&format!("{i:064x}"), &module);
            assert!(cache.memory.lock().expect("lock").len() <= MAX_IN_MEMORY);
        }
        let last = format!("{:064x}", MAX_IN_MEMORY * 2 + 2);
        assert!(cache.get(&engine, &last).is_some(), "the module put last is kept");
    }
}
