//! Rules written in C: Debian's clang for `wasm32-unknown-unknown` without
//! a libc, linked by `wasm-ld` (lld) with the same stack and initial memory
//! as the Rust rules (`.cargo/config.toml`), then [`crate::shrink`]ed like
//! them. The rule's custom sections come from module-level assembly in the
//! source (`.incbin "rule.json"`, see sdk/ABI.md §16), so clang runs in the
//! source's folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::BuildError;

/// The Debian packages of the C route (`cargo xtask setup` installs them).
pub const C_PACKAGES: &[&str] = &["clang", "lld"];

/// The flags every C rule is built with: no libc, no entry point (a rule
/// has no start function), a 32 KiB stack and one page of memory.
pub const C_FLAGS: &[&str] = &[
    "--target=wasm32-unknown-unknown",
    "-O2",
    "-nostdlib",
    "-Wl,--no-entry",
    "-Wl,-z,stack-size=32768",
    "-Wl,--initial-memory=65536",
];

/// The clang on the PATH (`clang`, else Debian's versioned `clang-19` ...
/// `clang-14`), when `wasm-ld` is there too to link its output.
pub fn detect_clang() -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&paths).collect();
    let names = ["clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"];
    if !dirs.iter().any(|d| d.join("wasm-ld").is_file()) {
        return None;
    }
    names.iter().find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// Builds `source` (a `.c` file) to `out` (a `.wasm` path).
pub fn build_c(source: &Path, out: &Path) -> Result<PathBuf, BuildError> {
    let clang = detect_clang().ok_or_else(|| {
        BuildError::NoToolchain(format!(
            " for C: clang and wasm-ld are not on the PATH; install them with `apt-get install -y {}` (or `cargo xtask setup`)",
            C_PACKAGES.join(" ")
        ))
    })?;
    let source = std::path::absolute(source)
        .map_err(|e| BuildError::Io { path: source.to_path_buf(), source: e })?;
    let out = std::path::absolute(out)
        .map_err(|e| BuildError::Io { path: out.to_path_buf(), source: e })?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| BuildError::Io { path: dir.to_path_buf(), source: e })?;
    }
    let mut cmd = Command::new(&clang);
    cmd.args(C_FLAGS).arg("-o").arg(&out).arg(&source);
    if let Some(dir) = source.parent() {
        cmd.current_dir(dir);
    }
    let command = format!("{cmd:?}");
    let status =
        cmd.status().map_err(|e| BuildError::Spawn { command: command.clone(), source: e })?;
    if !status.success() {
        return Err(BuildError::Failed { command, status });
    }
    if !out.exists() {
        return Err(BuildError::MissingOutput(out));
    }
    crate::shrink_in_place(&out)?;
    Ok(out)
}
