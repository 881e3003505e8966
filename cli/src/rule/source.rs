//! What a rule path names, and how to read the metadata and cases it
//! carries without running it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use pitfall_contract::meta::{RuleMeta, TestCase};

/// A rule, by the kind of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A Rust crate (its folder holds `Cargo.toml`, `rule.json`, `tests.json`).
    Crate(PathBuf),
    /// A C file (its folder holds `rule.json` and `tests.json`, which the
    /// source embeds with `.incbin`).
    C(PathBuf),
    /// Hand-written WAT with its sections inline (`@custom`).
    Wat(PathBuf),
    /// A built module.
    Wasm(PathBuf),
}

impl Source {
    /// Sorts `path` by what it is; an error names what was expected.
    pub(crate) fn of(path: &Path) -> anyhow::Result<Source> {
        // Absolute: cargo and clang run in other folders than ours.
        let path = &std::path::absolute(path)
            .with_context(|| format!("{}: not a usable path", path.display()))?;
        if path.is_dir() {
            if path.join("Cargo.toml").is_file() {
                return Ok(Source::Crate(path.to_path_buf()));
            }
            bail!(
                "{}: not a rule crate (no Cargo.toml); give a crate folder or a .c, .wat or .wasm file",
                path.display()
            );
        }
        if !path.is_file() {
            bail!("{}: no such file or folder", path.display());
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("c") => Ok(Source::C(path.to_path_buf())),
            Some("wat") => Ok(Source::Wat(path.to_path_buf())),
            Some("wasm") => Ok(Source::Wasm(path.to_path_buf())),
            _ => bail!(
                "{}: expected a rule crate folder, or a .c, .wat or .wasm file",
                path.display()
            ),
        }
    }

    /// The metadata and cases: read from `rule.json` and `tests.json` for
    /// a crate or a C source, else from the module's custom sections.
    pub(crate) fn embedded(&self) -> anyhow::Result<(RuleMeta, Vec<TestCase>)> {
        match self {
            Source::Crate(dir) => read_json_pair(dir),
            Source::C(file) => read_json_pair(file.parent().unwrap_or(Path::new("."))),
            Source::Wat(file) => {
                let wasm = wat_to_wasm(file)?;
                pitfall_engine::inspect::embedded(&wasm).with_context(|| file.display().to_string())
            }
            Source::Wasm(file) => {
                let wasm =
                    std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
                pitfall_engine::inspect::embedded(&wasm).with_context(|| file.display().to_string())
            }
        }
    }
}

/// Assembles a `.wat` file (custom sections from `(@custom ...)`).
pub(crate) fn wat_to_wasm(file: &Path) -> anyhow::Result<Vec<u8>> {
    wat::parse_file(file)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("assembling {}", file.display()))
}

fn read_json_pair(dir: &Path) -> anyhow::Result<(RuleMeta, Vec<TestCase>)> {
    let meta = read_document::<RuleMeta>(&dir.join("rule.json"));
    let cases = read_document::<Vec<TestCase>>(&dir.join("tests.json"));
    match (meta, cases) {
        (Ok(meta), Ok(cases)) => Ok((meta, cases)),
        // Both files' problems at once, one per line.
        (meta, cases) => {
            let problems: Vec<String> =
                [meta.err(), cases.err()].into_iter().flatten().flatten().collect();
            bail!("{} problem(s) reading the rule:\n{}", problems.len(), problems.join("\n"))
        }
    }
}

/// Reads the JSON file at `path` as `T`, or every problem in it, each
/// line naming the file and the member at fault.
fn read_document<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, Vec<String>> {
    let name = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let text = std::fs::read(path).map_err(|e| vec![format!("{}: {e}", path.display())])?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| vec![format!("{name}: not JSON: {e}")])?;
    pitfall_contract::read::read_all(value)
        .map_err(|issues| issues.iter().map(|i| format!("{name}: {i}")).collect())
}
