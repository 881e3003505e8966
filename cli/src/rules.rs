//! Where `check` gets its rules: the set built into the binary, a `.wasm`
//! file, a folder of them, or a signed bundle (verified first).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use pitfall_client::api::{Bundle, PublicKey};
use pitfall_engine::{Engine, Limits, Rule, RuleSet};

/// The compiled-code cache: `PITFALL_CACHE_DIR`, else `$XDG_CACHE_HOME/pitfall`,
/// else `~/.cache/pitfall`; none when no such place can be named.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    crate::config::user_path("PITFALL_CACHE_DIR", "XDG_CACHE_HOME", ".cache", "compiled")
}

/// An engine with the on-disk compiled-code cache when it can be used
/// (the cache only saves time: without it, rules compile afresh).
pub(crate) fn engine() -> anyhow::Result<Engine> {
    if let Some(dir) = cache_dir()
        && let Ok(engine) = Engine::with_cache_dir(Limits::default(), dir)
    {
        if let Some(why) = engine.disk_cache_refused() {
            eprintln!("warning: {why}");
        }
        return Ok(engine);
    }
    Engine::new(Limits::default()).context("starting the rule engine")
}

/// Reads every module's metadata now and leaves its compile to its first
/// candidacy (`Engine::load_deferred`): a check compiles only the rules
/// its manifest could match, not the whole set, and a compile never shares
/// the cores with a hundred others (each is bounded in wall time). `name`
/// says which module was refused.
fn load_all<'a>(
    engine: &Engine,
    modules: impl Iterator<Item = (String, &'a [u8])>,
) -> anyhow::Result<Vec<Arc<Rule>>> {
    modules
        .map(|(name, wasm)| {
            engine.load_deferred(Arc::from(wasm)).map(Arc::new).with_context(|| name)
        })
        .collect()
}

/// Loads the bundled rules (each compiled on first use, or taken from the
/// compiled-code cache).
pub(crate) fn bundled(engine: &Engine) -> anyhow::Result<RuleSet> {
    let modules = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| (format!("bundled rule {}", m.crate_name), m.wasm));
    Ok(RuleSet::new(load_all(engine, modules)?, pitfall_bundled_rules::REVISION))
}

/// Loads a signed bundle's rules after verifying it with one of `keys`;
/// each module must describe itself as its signed index entry says. The
/// set answers with the bundle's ruleset revision, as the server that
/// signed it does. A bundle past its signed expiry is used with a warning,
/// or refused with `require_fresh`.
pub(crate) fn from_bundle(
    engine: &Engine,
    name: &str,
    bytes: &[u8],
    keys: &[PublicKey],
    require_fresh: bool,
) -> anyhow::Result<RuleSet> {
    let bundle = Bundle::verify_any(bytes, keys).with_context(|| format!("{name}: refused"))?;
    let held = crate::bundle::Held {
        index: bundle.index.clone(),
        freshness: bundle.freshness(std::time::SystemTime::now()),
    };
    crate::bundle::judge_freshness(name, &held, require_fresh)?;
    let modules = bundle
        .modules()
        .map(|(entry, wasm)| (format!("{name}: rule {} {}", entry.id, entry.version), wasm));
    let rules = load_all(engine, modules)?;
    for (rule, (entry, _)) in rules.iter().zip(bundle.modules()) {
        if rule.id() != entry.id || rule.meta().version != entry.version {
            bail!(
                "{name}: the module listed as {} {} describes itself as {} {}",
                entry.id,
                entry.version,
                rule.id(),
                rule.meta().version
            );
        }
    }
    Ok(RuleSet::new(rules, bundle.index.ruleset_revision.clone()))
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
