//! Keys kept in files beside the data (the bundle signing key, the watch
//! secret key): read where configured, or created on first start where the
//! server keeps its data. A created file is readable by its owner only,
//! and never written over: two processes starting on one data dir at once
//! agree on the first one's key. Only a rotation replaces one
//! ([`replace`]), whole: a reader sees the old file or the new, never
//! part of one.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, bail};

/// The key at `path`, read with `parse`. When the file is missing and
/// `may_create`, `fresh` makes a key and the text to store it as, which is
/// written there; the flag says whether it was. `what` names the key in
/// errors ("bundle signing key").
pub fn load_or_create<K>(
    path: &Path,
    may_create: bool,
    what: &str,
    parse: impl Fn(&str) -> anyhow::Result<K>,
    fresh: impl FnOnce() -> anyhow::Result<(K, String)>,
) -> anyhow::Result<(K, bool)> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((parse(&text)?, false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && may_create => {
            create(path, what, parse, fresh)
        }
        Err(e) => Err(e).with_context(|| format!("reading the {what} {}", path.display())),
    }
}

fn create<K>(
    path: &Path,
    what: &str,
    parse: impl Fn(&str) -> anyhow::Result<K>,
    fresh: impl FnOnce() -> anyhow::Result<(K, String)>,
) -> anyhow::Result<(K, bool)> {
    let (key, text) = fresh()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing the new {what} {}", path.display()))?;
            Ok((key, true))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            if text.is_empty() {
                bail!("{} is being written by another process; start again", path.display());
            }
            Ok((parse(&text)?, false))
        }
        Err(e) => Err(e).with_context(|| format!("creating the {what} {}", path.display())),
    }
}

/// Replaces the file at `path` with `text`, owner-only: written to a new
/// file beside it, synced, then renamed over it (and the directory
/// synced), so a reader or a crash sees the old text or the new, whole.
pub fn replace(path: &Path, text: &str, what: &str) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut nonce = [0u8; 6];
    getrandom::fill(&mut nonce).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let aside = dir.join(format!(
        ".{name}.{}.{}",
        std::process::id(),
        nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&aside)
        .and_then(|mut file| file.write_all(text.as_bytes()).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&aside, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&aside);
        return Err(e).with_context(|| format!("writing the {what} {}", path.display()));
    }
    // The rename itself survives a power loss once the directory is synced.
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}
