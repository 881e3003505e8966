//! Where `check` gets its rules: the bundled set, a `.wasm` file, or a
//! folder of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use pitfall_engine::{Engine, Limits, RuleSet};

/// The compiled-code cache: `PITFALL_CACHE_DIR`, else `$XDG_CACHE_HOME/pitfall`,
/// else `~/.cache/pitfall`; none when no such place can be named.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PITFALL_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("pitfall").join("compiled"))
}

/// An engine with the on-disk compiled-code cache when it can be used
/// (the cache only saves time: without it, rules compile afresh).
pub(crate) fn engine() -> anyhow::Result<Engine> {
    if let Some(dir) = cache_dir() {
        if let Ok(engine) = Engine::with_cache_dir(Limits::default(), dir) {
            return Ok(engine);
        }
    }
    Engine::new(Limits::default()).context("starting the rule engine")
}

/// Loads the bundled rules (compiling on all cores when not cached).
pub(crate) fn bundled(engine: &Engine) -> anyhow::Result<RuleSet> {
    let rules = std::thread::scope(|scope| {
        let handles: Vec<_> = pitfall_bundled_rules::MODULES
            .iter()
            .map(|m| scope.spawn(move || engine.load(m.wasm).with_context(|| format!("bundled rule {}", m.crate_name))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a rule-loading thread panicked"))).map(Arc::new))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    Ok(RuleSet::new(rules, pitfall_bundled_rules::REVISION))
}

/// Loads a `.wasm` file or every `.wasm` file of a folder (sorted by name).
pub(crate) fn from_path(engine: &Engine, path: &Path) -> anyhow::Result<RuleSet> {
    let files = if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("{}: no .wasm files in this folder", path.display());
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut rules = Vec::with_capacity(files.len());
    let mut digests = Vec::with_capacity(files.len());
    for file in &files {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let rule = engine.load(&bytes).with_context(|| format!("{}: refused", file.display()))?;
        digests.push(rule.sha256[..12].to_owned());
        rules.push(Arc::new(rule));
    }
    let revision = format!("local-{}", digests.join("."));
    Ok(RuleSet::new(rules, revision))
}
