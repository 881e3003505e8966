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

const MAGIC: &[u8; 8] = b"PFCWASM1";

#[derive(Debug, Default)]
pub(crate) struct CompiledCache {
    memory: Mutex<HashMap<String, Module>>,
    dir: Option<PathBuf>,
    fingerprint: String,
}

impl CompiledCache {
    pub(crate) fn new(dir: Option<PathBuf>, engine: &wasmtime::Engine) -> std::io::Result<CompiledCache> {
        if let Some(dir) = &dir {
            fs::create_dir_all(dir)?;
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        Ok(CompiledCache { memory: Mutex::default(), dir, fingerprint: format!("{:016x}", h.finish()) })
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
        self.memory.lock().ok()?.insert(sha256.to_owned(), module.clone());
        Some(module)
    }

    pub(crate) fn put(&self, sha256: &str, module: &Module) {
        if let Ok(mut mem) = self.memory.lock() {
            mem.insert(sha256.to_owned(), module.clone());
        }
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
}
