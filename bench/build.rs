//! With the `extism` feature: builds `extism-plugin/` (extism-pdk) to
//! wasm32 through tools/wasm-build, the route the bundled rules take (the
//! Debian route builds std from source for it), and leaves the module in
//! OUT_DIR for `src/extism.rs`. Without the feature it does nothing.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=extism-plugin/src");
    println!("cargo:rerun-if-changed=extism-plugin/Cargo.toml");
    if std::env::var_os("CARGO_FEATURE_EXTISM").is_none() {
        return;
    }
    if let Err(e) = build() {
        eprintln!("error: building the Extism plug-in: {e}");
        std::process::exit(1);
    }
}

fn build() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = dir.parent().ok_or("no workspace root")?;
    let toolchain = pitfall_wasm_build::detect_for_build()?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let request = pitfall_wasm_build::BuildRequest {
        manifest_path: dir.join("extism-plugin/Cargo.toml"),
        packages: vec!["pitfall-bench-extism-plugin".into()],
        target_dir: target_dir.join("wasm-extism"),
        quiet: true,
    };
    let paths = pitfall_wasm_build::build_with_std(&toolchain, &request)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("pitfall_bench_extism_plugin.wasm");
    std::fs::copy(&paths[0], out)?;
    Ok(())
}
