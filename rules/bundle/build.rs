//! Builds every rule crate under `rules/` to wasm (through
//! `pitfall-wasm-build`, which picks the rustup target or the Debian route)
//! and embeds the modules. It installs nothing: without a wasm toolchain
//! the build fails naming the command that installs one (`cargo xtask
//! setup`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: building the bundled rules: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let rules_dir = manifest_dir.parent().ok_or("no rules dir")?.to_path_buf();
    let root = rules_dir.parent().ok_or("no workspace root")?.to_path_buf();
    let crates = rule_crates(&rules_dir, &manifest_dir)?;

    println!("cargo:rerun-if-changed={}", rules_dir.display());
    for p in ["sdk/src", "sdk/Cargo.toml", "Cargo.lock", "Cargo.toml", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let toolchain = pitfall_wasm_build::detect_for_build()?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let request = pitfall_wasm_build::BuildRequest {
        manifest_path: root.join("Cargo.toml"),
        packages: crates.iter().map(|(name, _)| name.clone()).collect(),
        target_dir: target_dir.join("wasm"),
        quiet: true,
    };
    let paths = if crates.is_empty() {
        Vec::new()
    } else {
        pitfall_wasm_build::build(&toolchain, &request)?
    };

    let mut digest = Sha256::new();
    let mut out = String::from(
        "/// The bundled rule modules, in crate-name order.\npub static MODULES: &[BundledModule] = &[\n",
    );
    for ((name, dir), path) in crates.iter().zip(&paths) {
        let bytes = std::fs::read(path)?;
        digest.update(&bytes);
        writeln!(
            out,
            "    BundledModule {{ crate_name: {name:?}, source_dir: {:?}, wasm: include_bytes!({:?}) }},",
            dir.display().to_string(),
            path.display().to_string()
        )?;
    }
    out.push_str("];\n");
    let hex: String = digest.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    writeln!(
        out,
        "/// Names this set of modules (changes whenever any module does).\npub const REVISION: &str = \"bundled-{hex}\";"
    )?;
    writeln!(
        out,
        "/// The route the modules were built with (`rustup` or `debian`).\npub const TOOLCHAIN: &str = {:?};",
        toolchain.name()
    )?;
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR")?).join("bundled.rs"), out)?;
    Ok(())
}

/// `(package name, directory)` of every rule crate, sorted by name.
fn rule_crates(
    rules_dir: &Path,
    this_crate: &Path,
) -> Result<Vec<(String, PathBuf)>, Box<dyn std::error::Error>> {
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(rules_dir)? {
        let dir = entry?.path();
        let manifest = dir.join("Cargo.toml");
        if dir == this_crate || !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        let field = |key: &str| {
            text.lines()
                .find_map(|l| {
                    l.trim().strip_prefix(key).map(str::trim).and_then(|r| r.strip_prefix('='))
                })
                .map(|v| v.trim().trim_matches('"').to_owned())
                .ok_or_else(|| format!("{}: no package {key}", manifest.display()))
        };
        let name = field("name")?;
        // The crate's version is what Cargo.lock and build logs show: it must
        // be the release the rule's metadata declares.
        let meta = dir.join("rule.json");
        let declared: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta)?)
            .map_err(|e| format!("{}: {e}", meta.display()))?;
        let (crate_version, rule_version) = (field("version")?, &declared["version"]);
        if rule_version.as_str() != Some(crate_version.as_str()) {
            return Err(format!(
                "{}: the crate's version {crate_version} is not rule.json's {rule_version}; give both the rule's release",
                dir.display()
            )
            .into());
        }
        crates.push((name, dir));
    }
    crates.sort();
    Ok(crates)
}
