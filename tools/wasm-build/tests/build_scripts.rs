//! No build script of the workspace installs anything: `cargo build` must
//! not run apt-get (as root, at that). Installing is `cargo xtask setup`'s
//! job; a build script only detects a toolchain (`detect_for_build`) and
//! otherwise fails naming the command to run.

use std::path::{Path, PathBuf};

/// Every `build.rs` beside a `Cargo.toml` under `dir` (not `target/`).
fn build_scripts(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != ".git" {
                build_scripts(&path, found);
            }
        } else if name == "build.rs" && dir.join("Cargo.toml").is_file() {
            found.push(path);
        }
    }
}

#[test]
fn no_build_script_installs_packages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut scripts = Vec::new();
    build_scripts(&root, &mut scripts);
    assert!(
        scripts.iter().any(|p| p.ends_with("rules/bundle/build.rs")),
        "the bundled rules' build script was not found among {scripts:?}"
    );
    let mut offenders = Vec::new();
    for script in &scripts {
        let text = std::fs::read_to_string(script).expect("readable");
        for needle in ["apt-get", "ensure(", "Command::new(\"apt", "dpkg", "pip install"] {
            if text.contains(needle) {
                offenders.push(format!("{}: {needle}", script.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "build scripts that install: {offenders:?}");
}

#[test]
fn a_missing_toolchain_names_the_setup_command() {
    // Whatever this machine has, the message a build script would print
    // without a toolchain names the opt-in installer.
    let message = pitfall_wasm_build::BuildError::NoToolchain(String::new()).to_string();
    assert!(message.contains("no wasm32 toolchain"), "{message}");
    if let Err(e) = pitfall_wasm_build::detect_for_build() {
        assert!(e.to_string().contains("cargo xtask setup"), "{e}");
    }
}
