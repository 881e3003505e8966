//! The hostile module corpus loader: each `*.wat` file of this folder
//! becomes one module and its expected fate. Shared by the engine's tests
//! (`engine/tests/engine.rs`, the `hostile_*` tests) and usable from any
//! other crate's test with
//! `#[path = "../../../engine/tests/hostile/corpus.rs"] mod corpus;`
//! (the path relative to the including file). It depends only on `wat`
//! and `serde_json`. The header format is in `README.md` beside it.

#![allow(dead_code, unreachable_pub)] // each including test uses a part

use std::path::{Path, PathBuf};

/// What must become of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Refused at publish: `step` is the refusing step (`LoadError::step()`,
    /// or `tests` for embedded cases that fail, selector probe included),
    /// and the refusal's message contains `reason`.
    Refused {
        /// `size`, `validation`, `abi`, `imports`, `exports`, `limits`,
        /// `complexity`, `metadata`, `tests`, `compile`.
        step: String,
        /// A substring of the message.
        reason: String,
    },
    /// Loads, and every evaluation fails alone: that rule's `rule_errors`
    /// entry contains one of `errors`.
    Contained {
        /// Alternatives (`a|b` in the header): the first cause to fire wins.
        errors: Vec<String>,
    },
    /// Loads and reports nothing, however often it runs (a module that
    /// tries to carry state from one check to the next).
    Clean,
}

/// One module of the corpus.
#[derive(Debug, Clone)]
pub struct HostileModule {
    /// The file's stem, e.g. `loop-forever`.
    pub name: String,
    /// The rule id it carries (`hostile-<name>`).
    pub id: String,
    /// What it tries (the `;; threat:` line).
    pub threat: String,
    /// The module's bytes.
    pub wasm: Vec<u8>,
    /// What must become of it.
    pub fate: Fate,
}

/// This folder.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/hostile")
}

/// Every module of `dir`, sorted by name. Panics with the file's name on a
/// malformed header: the corpus is test data.
pub fn load_corpus(dir: &Path) -> Vec<HostileModule> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wat"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load_module(p)).collect()
}

/// One module from its WAT file.
pub fn load_module(path: &Path) -> HostileModule {
    let name = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name").to_owned();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(&format!(";; {key}: ")).map(str::trim))
    };
    let fate =
        parse_fate(header("expect").unwrap_or_else(|| panic!("{name}: no `;; expect:` line")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    let threat =
        header("threat").unwrap_or_else(|| panic!("{name}: no `;; threat:` line")).to_owned();
    let id = format!("hostile-{name}");

    let body = expand_repeats(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut sections = String::new();
    match header("abi") {
        Some("none") => {}
        abi => sections
            .push_str(&format!("(@custom \"pitfall.abi\" \"{}\")", wat_string(abi.unwrap_or("1")))),
    }
    match (header("meta"), header("meta-patch")) {
        (Some("none"), _) => {}
        (Some(raw), _) => {
            sections.push_str(&format!("(@custom \"pitfall.meta\" \"{}\")", wat_string(raw)))
        }
        (None, patch) => {
            let patch = patch.map(|p| {
                serde_json::from_str(p).unwrap_or_else(|e| panic!("{name}: meta-patch: {e}"))
            });
            let meta = default_meta(&id, patch);
            sections.push_str(&format!("(@custom \"pitfall.meta\" \"{}\")", wat_string(&meta)));
        }
    }
    match header("tests") {
        Some("none") => {}
        tests => sections.push_str(&format!(
            "(@custom \"pitfall.tests\" \"{}\")",
            wat_string(tests.unwrap_or("[]"))
        )),
    }
    let end = body.rfind(')').unwrap_or_else(|| panic!("{name}: no module"));
    let full = format!("{}{sections}{}", &body[..end], &body[end..]);
    let mut wasm = wat::parse_str(&full).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(n) = header("truncate") {
        let n: usize = n.parse().unwrap_or_else(|e| panic!("{name}: truncate: {e}"));
        wasm.truncate(n);
    }
    HostileModule { name, id, threat, wasm, fate }
}

fn parse_fate(line: &str) -> Result<Fate, String> {
    let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
    match kind {
        "refused" => {
            let (step, reason) = rest.split_once(' ').ok_or("`refused STEP REASON`")?;
            Ok(Fate::Refused { step: step.to_owned(), reason: reason.trim().to_owned() })
        }
        "contained" if !rest.is_empty() => {
            Ok(Fate::Contained { errors: rest.split('|').map(|s| s.trim().to_owned()).collect() })
        }
        "clean" => Ok(Fate::Clean),
        _ => Err(format!(
            "bad expect line {line:?}: refused STEP REASON | contained ERROR[|ERROR] | clean"
        )),
    }
}

/// The generator: the lines between `;; repeat-begin N` and `;; repeat-end`
/// are written N times, `{i}` replaced by the copy's number (0..N). So a
/// megabyte module or ten thousand functions cost a few lines in the repo.
fn expand_repeats(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(count) = line.trim().strip_prefix(";; repeat-begin ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let count: usize = count.trim().parse().map_err(|e| format!("repeat-begin: {e}"))?;
        let mut block = Vec::new();
        loop {
            match lines.next() {
                None => return Err("repeat-begin without repeat-end".into()),
                Some(l) if l.trim() == ";; repeat-end" => break,
                Some(l) => block.push(l),
            }
        }
        for i in 0..count {
            for l in &block {
                out.push_str(&l.replace("{i}", &i.to_string()));
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Well-formed metadata, so a module gets as far as its payload; `patch`
/// (a JSON object) replaces top-level fields.
pub fn default_meta(id: &str, patch: Option<serde_json::Value>) -> String {
    let mut meta = serde_json::json!({
        "id": id, "version": "1.0.0", "title": format!("hostile module {id}"), "severity": "warning",
        "summary": "A module from the hostile corpus of the engine's tests.", "message": "hostile",
        "remedies": [{"summary": "none", "actions": [{"kind": "unset_env", "name": "X"}]}],
        "references": [{"title": "engine/tests/hostile"}], "author": "tests"
    });
    if let (Some(serde_json::Value::Object(patch)), Some(obj)) = (patch, meta.as_object_mut()) {
        obj.extend(patch);
    }
    meta.to_string()
}

/// `s` as the contents of a WAT string literal.
pub fn wat_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
