//! Builds rule crates to `wasm32-unknown-unknown`, on any machine of ours.
//!
//! Two routes, chosen by [`detect`]:
//! - **rustup**: the active toolchain has the `wasm32-unknown-unknown`
//!   target installed; plain `cargo build --target wasm32-unknown-unknown`.
//! - **debian**: the target cannot be downloaded (these machines reach only
//!   package registries), so Debian's `rustc-web` + `cargo-web` +
//!   `rust-web-src` + `lld` build `core` and `alloc` from source:
//!   `RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build
//!   -Zbuild-std=core,alloc` with `wasm-ld` as the linker.
//!
//! On the Debian route `core` is built from source anyway, so it is built
//! with `-Cpanic=immediate-abort`: a panic is the `unreachable` trap it
//! already was (the SDK's panic handler traps), and core's panic formatting
//! (messages, `Display`/`Debug` impls, Unicode tables, the function table
//! for their indirect calls) is never linked. After linking, [`build`]
//! drops a table that nothing uses ([`shrink`]), on both routes.
//!
//! [`ensure`] installs the Debian packages when neither route is present
//! (as root, with apt-get); only `cargo xtask setup` (and the xtask
//! commands built on it) calls it with installing allowed. Build scripts
//! never install anything: they call [`detect_for_build`], which says what
//! to run when nothing is there. This crate is used by the bundled-rules
//! build script, by `cargo xtask`, and by `pitfall rule build`, so all
//! three pick the same route. Rules written in C are built by [`c::build_c`] (clang
//! and wasm-ld, the same stack, memory and shrinking).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub mod c;
pub mod shrink;

pub use c::{build_c, detect_clang};

/// The wasm target rules are built for.
pub const TARGET: &str = "wasm32-unknown-unknown";

/// The cargo profile rules are built with (see the workspace Cargo.toml).
pub const PROFILE: &str = "rule";

/// Extra `rustflags` of the Debian route, added to (not replacing) those
/// of `.cargo/config.toml`. `-Zbuild-std` compiles `core` with them, so a
/// panic becomes an immediate trap and no panic formatting is linked (on
/// rustup's prebuilt `core` the strategy is fixed at `abort`).
pub const DEBIAN_RUSTFLAGS: &[&str] = &["-Zunstable-options", "-Cpanic=immediate-abort"];

/// The Debian packages of the fallback route.
pub const DEBIAN_PACKAGES: &[&str] = &["rustc-web", "cargo-web", "rust-web-src", "lld"];

const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_STD_SRC: &str = "/usr/lib/rustlib/src/rust/library/core";

/// How rules get built on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolchain {
    /// The active (rustup) toolchain has the wasm32 target.
    Rustup {
        /// The `cargo` to run.
        cargo: PathBuf,
    },
    /// Debian's rustc-web with `-Zbuild-std`.
    Debian,
}

impl Toolchain {
    /// A short name for messages: `rustup` or `debian`.
    pub fn name(&self) -> &'static str {
        match self {
            Toolchain::Rustup { .. } => "rustup",
            Toolchain::Debian => "debian",
        }
    }
}

/// Why rules could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Neither route is available and installing was not allowed or failed.
    #[error(
        "no wasm32 toolchain: neither rustup's {TARGET} target nor Debian's rustc-web + cargo-web + rust-web-src + lld is installed{0}"
    )]
    NoToolchain(String),
    /// A command could not be started.
    #[error("could not run {command}: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The build itself failed.
    #[error("`{command}` failed with {status}")]
    Failed {
        /// The command.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// A built module could not be read or rewritten.
    #[error("{}: {source}", path.display())]
    Io {
        /// The module.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The build succeeded but a module is missing.
    #[error("built, but {0} is missing")]
    MissingOutput(PathBuf),
}

/// Finds a route that works here, without installing anything.
pub fn detect() -> Option<Toolchain> {
    if rustup_has_target() {
        let cargo =
            std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("cargo"));
        return Some(Toolchain::Rustup { cargo });
    }
    debian_ready().then_some(Toolchain::Debian)
}

/// [`detect`] for a build script: a route that works here, or an error
/// naming the command that installs one (`cargo xtask setup`). A build
/// script that ran apt-get as root would surprise whoever runs `cargo
/// build`; installing is something to ask for.
pub fn detect_for_build() -> Result<Toolchain, BuildError> {
    detect().ok_or_else(|| {
        BuildError::NoToolchain(format!(
            "; run `cargo xtask setup` (it installs them with apt-get, as root), or \
             `apt-get install -y {}`, or `rustup target add {TARGET}`",
            DEBIAN_PACKAGES.join(" ")
        ))
    })
}

/// Like [`detect`], but installs the Debian route when nothing is present
/// and `install` is true (needs root and apt-get). For `cargo xtask`
/// only: see [`detect_for_build`].
pub fn ensure(install: bool) -> Result<Toolchain, BuildError> {
    if let Some(t) = detect() {
        return Ok(t);
    }
    if !install {
        return Err(BuildError::NoToolchain(format!(
            "; install them with `apt-get install -y {}`",
            DEBIAN_PACKAGES.join(" ")
        )));
    }
    install_debian_packages()?;
    if debian_ready() {
        Ok(Toolchain::Debian)
    } else {
        Err(BuildError::NoToolchain("; apt-get ran but the packages are still not usable".into()))
    }
}

fn rustup_has_target() -> bool {
    // `rustc --print target-libdir --target T` names the directory the
    // target's prebuilt std would be in; it exists only when installed.
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with("libcore-"))
                })
                .unwrap_or(false)
        }
        _ => false,
    }
}

fn debian_ready() -> bool {
    Path::new(DEBIAN_RUSTC).exists()
        && Path::new(DEBIAN_CARGO).exists()
        && Path::new(DEBIAN_STD_SRC).exists()
        && which("wasm-ld")
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
        .unwrap_or(false)
}

fn install_debian_packages() -> Result<(), BuildError> {
    let run = |args: &[&str]| -> Result<(), BuildError> {
        let command = format!("apt-get {}", args.join(" "));
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .map_err(|source| BuildError::Spawn { command: command.clone(), source })?;
        if status.success() { Ok(()) } else { Err(BuildError::Failed { command, status }) }
    };
    run(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(DEBIAN_PACKAGES);
    run(&args)
}

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The `Cargo.toml` of the workspace (or single crate) holding the rules.
    pub manifest_path: PathBuf,
    /// Package names to build (each a `cdylib` rule crate).
    pub packages: Vec<String>,
    /// Where cargo puts its output for this build (kept apart from the host build).
    pub target_dir: PathBuf,
    /// Whether cargo may print progress (off inside build scripts).
    pub quiet: bool,
}

/// Builds the requested rule crates and returns their `.wasm` paths, in
/// the order of `packages`.
pub fn build(toolchain: &Toolchain, request: &BuildRequest) -> Result<Vec<PathBuf>, BuildError> {
    build_crates(toolchain, request, BuildStd::CoreAlloc)
}

/// Like [`build`], for crates that need `std` (e.g. an Extism plug-in
/// built with extism-pdk): on the Debian route `std` and `panic_abort`
/// are built from source as well.
pub fn build_with_std(
    toolchain: &Toolchain,
    request: &BuildRequest,
) -> Result<Vec<PathBuf>, BuildError> {
    build_crates(toolchain, request, BuildStd::Std)
}

/// What the Debian route builds from source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BuildStd {
    /// `core` and `alloc`, for `no_std` rules.
    CoreAlloc,
    /// `std` and `panic_abort`, for crates that need `std`.
    Std,
}

impl BuildStd {
    fn arg(self) -> &'static str {
        match self {
            BuildStd::CoreAlloc => "-Zbuild-std=core,alloc",
            BuildStd::Std => "-Zbuild-std=std,panic_abort",
        }
    }
}

fn build_crates(
    toolchain: &Toolchain,
    request: &BuildRequest,
    build_std: BuildStd,
) -> Result<Vec<PathBuf>, BuildError> {
    let mut cmd = match toolchain {
        Toolchain::Rustup { cargo } => Command::new(cargo),
        Toolchain::Debian => Command::new(DEBIAN_CARGO),
    };
    clean_env(&mut cmd);
    if let Toolchain::Debian = toolchain {
        cmd.env("RUSTC", DEBIAN_RUSTC).env("RUSTC_BOOTSTRAP", "1");
        cmd.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", "wasm-ld");
    }
    cmd.arg("build").arg("--manifest-path").arg(&request.manifest_path);
    // Cargo reads `.cargo/config.toml` from the current folder up, not
    // from the manifest's: run in the crate's folder so a rule crate
    // outside this repo gets its own link arguments.
    if let Some(dir) = request.manifest_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        cmd.current_dir(dir);
    }
    cmd.args(["--profile", PROFILE, "--target", TARGET])
        .arg("--target-dir")
        .arg(&request.target_dir);
    if let Toolchain::Debian = toolchain {
        cmd.arg(build_std.arg());
        // Rules only (core + alloc): `--config` arrays are appended to the
        // config files' arrays, so the stack-size and initial-memory link
        // arguments stay. A `std` crate keeps std's own panic runtime.
        if build_std == BuildStd::CoreAlloc {
            let flags: Vec<String> = DEBIAN_RUSTFLAGS.iter().map(|f| format!("{f:?}")).collect();
            cmd.arg("--config").arg(format!("target.{TARGET}.rustflags=[{}]", flags.join(",")));
        }
    }
    if request.quiet {
        cmd.arg("--quiet");
    }
    for p in &request.packages {
        cmd.args(["-p", p]);
    }
    let command = format!("{cmd:?}");
    let status =
        cmd.status().map_err(|source| BuildError::Spawn { command: command.clone(), source })?;
    if !status.success() {
        return Err(BuildError::Failed { command, status });
    }
    let out_dir = request.target_dir.join(TARGET).join(PROFILE);
    request
        .packages
        .iter()
        .map(|p| {
            let path = out_dir.join(format!("{}.wasm", p.replace('-', "_")));
            if !path.exists() {
                return Err(BuildError::MissingOutput(path));
            }
            shrink_in_place(&path)?;
            Ok(path)
        })
        .collect()
}

/// Applies [`shrink::drop_unused_table`] to the module at `path`. Written
/// beside it and renamed over it: the file cargo put there is a hard link
/// to its own artifact, which stays as the linker made it, and no reader
/// ever sees half a module.
pub(crate) fn shrink_in_place(path: &Path) -> Result<(), BuildError> {
    let io = |source| BuildError::Io { path: path.to_path_buf(), source };
    let wasm = std::fs::read(path).map_err(io)?;
    if let Some(smaller) = shrink::drop_unused_table(&wasm) {
        let tmp = path.with_extension("wasm.shrunk");
        std::fs::write(&tmp, smaller).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)?;
    }
    Ok(())
}

/// Removes what an outer cargo (a build script's environment) would leak
/// into the inner build: its rustc, flags, jobserver and profile settings.
fn clean_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = (key.starts_with("CARGO_")
            && key != "CARGO_HOME"
            && !key.starts_with("CARGO_NET_")
            && !key.starts_with("CARGO_REGISTRIES_")
            && !key.starts_with("CARGO_HTTP_"))
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key == "RUSTFLAGS"
            || key == "CARGO"
            || key == "__CARGO_FIX_PLZ";
        if leaks {
            cmd.env_remove(key);
        }
    }
}
