//! `pitfall rule build [PATH] [--out-dir DIR]`: lint (the registry's own
//! checks and messages), build with the repo's toolchain choice
//! (`pitfall-wasm-build`: the rustup wasm32 target, else Debian's
//! rustc-web; clang + wasm-ld for C; the `wat` assembler for WAT), then
//! check the module's size and ABI with the engine's inspector, which
//! reads it without running it. The module's path is the last line on
//! stdout, for scripts (`WASM=$(pitfall rule build | tail -n1)`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_contract::lint;
use pitfall_engine::Limits;

use super::lint::print_issues;
use super::source::{Source, wat_to_wasm};

#[derive(Debug, clap::Args)]
pub(crate) struct BuildArgs {
    /// The rule crate's folder, or a `.c`, `.wat` or `.wasm` file.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    /// Where build output goes (default for a crate: CARGO_TARGET_DIR,
    /// else its workspace's `target/`; for a C or WAT source, `target/`
    /// beside it).
    #[arg(long, value_name = "DIR")]
    pub(crate) out_dir: Option<PathBuf>,
}

pub(crate) fn run(args: &BuildArgs) -> anyhow::Result<ExitCode> {
    let Some(module) = build_checked(&args.path, args.out_dir.as_deref())? else {
        return Ok(ExitCode::from(2));
    };
    outln!("{}", module.display());
    Ok(ExitCode::SUCCESS)
}

/// Lints, builds and inspects; prints what it found. `None` when the lint
/// refused the rule (the issues are printed).
pub(crate) fn build_checked(
    path: &Path,
    out_dir: Option<&Path>,
) -> anyhow::Result<Option<PathBuf>> {
    let source = Source::of(path)?;
    let (meta, cases) = source.embedded()?;
    let issues = lint::lint(&meta, &cases);
    if !issues.is_empty() {
        print_issues(&issues);
        eprintln!("{} {}: not built: {} lint issue(s)", meta.id, meta.version, issues.len());
        return Ok(None);
    }
    let module = build_module(&source, out_dir)?;
    let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
    let limits = Limits::default();
    let info = pitfall_engine::inspect::inspect(&bytes, &limits)
        .with_context(|| format!("{}: the registry would refuse this module", module.display()))?;
    if info.meta.id != meta.id {
        bail!(
            "{}: the module says it is rule {:?}, its metadata {:?}",
            module.display(),
            info.meta.id,
            meta.id
        );
    }
    outln!(
        "{} {}: {} bytes (limit {}), ABI {}, imports and exports as the engine requires",
        info.meta.id,
        info.meta.version,
        bytes.len(),
        limits.max_module_bytes,
        info.abi_version
    );
    Ok(Some(module))
}

/// Builds the module of `source` and returns its path (a `.wasm` is its own).
pub(crate) fn build_module(source: &Source, out_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    match source {
        Source::Crate(dir) => build_crate(dir, out_dir),
        Source::C(file) => {
            let out = beside(file, out_dir).join(module_name(file));
            pitfall_wasm_build::build_c(file, &out)
                .with_context(|| format!("building {}", file.display()))
        }
        Source::Wat(file) => {
            let wasm = wat_to_wasm(file)?;
            let dir = beside(file, out_dir);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let out = dir.join(module_name(file));
            std::fs::write(&out, wasm).with_context(|| format!("writing {}", out.display()))?;
            Ok(out)
        }
        Source::Wasm(file) => Ok(file.clone()),
    }
}

fn module_name(file: &Path) -> String {
    format!("{}.wasm", file.file_stem().map_or_else(|| "rule".into(), |s| s.to_string_lossy()))
}

/// `out_dir`, else `target/` in the source's folder; absolute, so the
/// path printed is one a script can use from anywhere.
fn beside(file: &Path, out_dir: Option<&Path>) -> PathBuf {
    let dir = out_dir
        .map_or_else(|| file.parent().unwrap_or(Path::new(".")).join("target"), Path::to_path_buf);
    std::path::absolute(&dir).unwrap_or(dir)
}

fn build_crate(dir: &Path, out_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let manifest_path = std::path::absolute(dir.join("Cargo.toml")).context("the crate's path")?;
    let package = package_name(&manifest_path)?;
    // Not installing: a contributor's machine is theirs; the error names
    // the packages (or run `cargo xtask setup` in the Pitfall repo).
    let toolchain = pitfall_wasm_build::ensure(false)?;
    let target = out_dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| workspace_root(&manifest_path).join("target"));
    let target = std::path::absolute(target).context("the target folder")?;
    let target_dir = target.join("wasm");
    // Cold: nothing built for wasm in this folder yet. Cargo's own lines
    // then show what is compiled; a warm build has little to say.
    let cold = !target_dir.join("wasm32-unknown-unknown").join("rule").is_dir();
    eprintln!("{}", build_plan(&package, &toolchain, cold, &target_dir));
    let request = pitfall_wasm_build::BuildRequest {
        manifest_path,
        packages: vec![package],
        target_dir,
        quiet: !cold,
    };
    let mut paths = pitfall_wasm_build::build(&toolchain, &request)?;
    paths.pop().context("the build named no module")
}

/// What a build is about to do and why, for people: a cold build takes
/// long enough that silence looks like a hang.
fn build_plan(
    package: &str,
    toolchain: &pitfall_wasm_build::Toolchain,
    cold: bool,
    target_dir: &Path,
) -> String {
    let route = toolchain.name();
    if !cold {
        return format!("wasm: building {package} ({route} route; its dependencies are built)");
    }
    let first = format!(
        "wasm: building {package} ({route} route), the first wasm build in {}:",
        target_dir.display()
    );
    match toolchain {
        pitfall_wasm_build::Toolchain::Debian => format!(
            "{first}\n  compiling core and alloc from source (Debian's rustc-web ships no wasm32 standard\n  library, so cargo builds it: -Zbuild-std), then pitfall-version, pitfall-sdk and the\n  rule with LTO; later builds reuse all but the rule"
        ),
        pitfall_wasm_build::Toolchain::Rustup { .. } => format!(
            "{first}\n  compiling pitfall-version, pitfall-sdk and the rule with LTO; later builds reuse all\n  but the rule"
        ),
    }
}

/// The folder of the workspace the crate belongs to, as cargo finds it:
/// the nearest folder from the crate's up whose Cargo.toml has a
/// `[workspace]` table (a crate from `rule new` is its own; a bundled
/// rule's is this repo, so it shares `target/wasm` with `cargo xtask
/// build-rules`); the crate's own folder when there is none.
fn workspace_root(manifest_path: &Path) -> PathBuf {
    let crate_dir = manifest_path.parent().unwrap_or(Path::new("."));
    crate_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .ok()
                .and_then(|text| text.parse::<toml::Table>().ok())
                .is_some_and(|doc| doc.contains_key("workspace"))
        })
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// `[package] name` of a Cargo.toml.
pub(crate) fn package_name(manifest_path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: not TOML", manifest_path.display()))?;
    doc.get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .with_context(|| format!("{}: no [package] name", manifest_path.display()))
}
