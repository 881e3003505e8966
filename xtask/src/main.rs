//! `cargo xtask <command>`: the project's own commands, so a fresh machine
//! needs nothing but cargo. Installing packages (apt-get, as root) happens
//! here and nowhere else: build scripts only detect (`PITFALL_NO_INSTALL=1`
//! makes these commands name the packages instead of installing them).
//!
//! - `setup`: install what the tests need (the wasm toolchain when the
//!   active toolchain has no wasm32 target: Debian's rustc-web route; and
//!   Debian's chromium and chromium-driver for the web pages' browser tests,
//!   fonts-dejavu-core for the text of pitfall-bench's plot, clang + lld
//!   for rules written in C, groff-base's nroff to render the man page in
//!   the CLI's tests; and schemathesis, pinned, in a virtualenv
//!   under `target/schemathesis`, for the server's API conformance test).
//! - `serve [ARGS]`: install the wasm toolchain if it is missing (as
//!   `setup` does, and only that), then `cargo run -p pitfall-server --
//!   ARGS`: the one line that runs the registry on a fresh machine.
//! - `build-rules`: build every rule crate to `.wasm`; prints the paths.
//! - `test [--image]`: `setup`, `cargo fmt --check` and `cargo clippy -D
//!   warnings`, then every test of the workspace; with `--image`, then the
//!   container images built and tested under podman (`image.rs`).
//! - `image [--debug]`: the server's container image and the PostgreSQL
//!   one `compose.yaml` uses, built with podman from a local Debian base
//!   (`image.rs`).
//! - `schema`: regenerate `contract/schema/manifest-v1.schema.json`.
//! - `soak [--seconds N]`: the server's soak test (`server/tests/it/soak.rs`)
//!   for N seconds (default 600), at low CPU priority; prints its numbers.
//! - `fuzz TARGET [--seconds N] [--update-corpus]`: run a cargo-fuzz target
//!   of `fuzz/` (see `fuzz.rs` and `fuzz/README.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

mod apt;
mod fuzz;
mod image;

use apt::ensure_packages;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root()?;
    match args.first().map(String::as_str) {
        Some("setup") => setup().map(|_| ()),
        Some("serve") => serve(&root, &args[1..]),
        Some("build-rules") => build_rules(&root),
        Some("test") => test(&root, &args[1..]),
        Some("schema") => schema(&root),
        Some("soak") => soak(&root, &args[1..]),
        Some("fuzz") => fuzz::fuzz(&root, &args[1..]),
        Some("image") => image::image(&root, &args[1..]),
        _ => bail!(
            "usage: cargo xtask <setup|serve [ARGS]|build-rules|test [--image]|image [--debug]|schema|soak [--seconds N]|fuzz TARGET [--seconds N]>"
        ),
    }
}

fn root() -> anyhow::Result<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).context("xtask/ has a parent")
}

fn setup() -> anyhow::Result<pitfall_wasm_build::Toolchain> {
    let install = std::env::var_os("PITFALL_NO_INSTALL").is_none();
    let toolchain = pitfall_wasm_build::ensure(install)?;
    eprintln!("xtask: wasm toolchain: {}", toolchain.name());
    ensure_packages("the browser tests", BROWSER_PACKAGES, BROWSER_BINARIES, install)?;
    ensure_packages("the benchmark plot", FONT_PACKAGES, FONT_FILES, install)?;
    ensure_packages("the C example rule", C_PACKAGES, C_BINARIES, install)?;
    ensure_packages("the man page test", MAN_PACKAGES, MAN_BINARIES, install)?;
    ensure_schemathesis(install)?;
    Ok(toolchain)
}

/// The wasm toolchain the bundled rules need (installed if missing and
/// allowed), then the server, with `args`.
fn serve(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let install = std::env::var_os("PITFALL_NO_INSTALL").is_none();
    let toolchain = pitfall_wasm_build::ensure(install)?;
    eprintln!("xtask: wasm toolchain: {}", toolchain.name());
    let status = cargo()
        .current_dir(root)
        .args(["run", "-p", "pitfall-server", "--"])
        .args(args)
        .status()
        .context("running cargo run -p pitfall-server")?;
    if !status.success() {
        bail!("pitfall-server exited with {status}");
    }
    Ok(())
}

/// The schemathesis release the server's conformance test pins (the same
/// as `SCHEMATHESIS_VERSION` in `server/tests/it/schemathesis.rs`).
const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// schemathesis in `target/schemathesis` (a virtualenv, so nothing is
/// installed into the system's Python); python3-venv from apt if missing.
fn ensure_schemathesis(install: bool) -> anyhow::Result<()> {
    let venv = root()?.join("target/schemathesis");
    let exe = venv.join("bin/schemathesis");
    let pinned = Command::new(&exe)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(SCHEMATHESIS_VERSION));
    if pinned {
        eprintln!("xtask: schemathesis {SCHEMATHESIS_VERSION} present");
        return Ok(());
    }
    if !install {
        bail!(
            "the API conformance test needs schemathesis=={SCHEMATHESIS_VERSION} in {}; PITFALL_NO_INSTALL is set",
            venv.display()
        );
    }
    let make_venv = || {
        Command::new("python3").arg("-m").arg("venv").arg(&venv).status().is_ok_and(|s| s.success())
    };
    // Debian splits venv (ensurepip) out of python3: install it when the
    // first try fails.
    if !make_venv() {
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        let installed = apt(&["install", "-y", "-q", "python3-venv"])
            || (apt(&["update", "-q"]) && apt(&["install", "-y", "-q", "python3-venv"]));
        if !installed || !make_venv() {
            bail!("python3 -m venv {} failed (needs python3 and python3-venv)", venv.display());
        }
    }
    let status = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", &format!("schemathesis=={SCHEMATHESIS_VERSION}")])
        .status()
        .context("running pip")?;
    if !status.success() {
        bail!("pip install schemathesis=={SCHEMATHESIS_VERSION} failed");
    }
    Ok(())
}

/// The Debian packages of the browser the web tests drive.
const BROWSER_PACKAGES: &[&str] = &["chromium", "chromium-driver"];
/// What those packages install (the paths the tests run).
const BROWSER_BINARIES: &[&str] = &["/usr/bin/chromium", "/usr/bin/chromedriver"];

/// The font pitfall-bench draws its plot's text with.
const FONT_PACKAGES: &[&str] = &["fonts-dejavu-core"];
/// What that package installs (the file the bench reads).
const FONT_FILES: &[&str] = &["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"];

/// The C compiler the C example rule (`sdk/examples/c-vllm-cc-floor/`) and
/// `pitfall rule build rule.c` use; lld (its `wasm-ld`) comes with the wasm
/// toolchain above.
const C_PACKAGES: &[&str] = &["clang", "lld"];
/// What those packages install.
const C_BINARIES: &[&str] = &["/usr/bin/clang", "/usr/bin/wasm-ld"];

/// What renders `pitfall man`'s roff in the CLI's tests (`nroff -man`).
const MAN_PACKAGES: &[&str] = &["groff-base"];
/// What that package installs.
const MAN_BINARIES: &[&str] = &["/usr/bin/nroff"];

fn rule_packages(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root.join("rules"))? {
        let dir = entry?.path();
        let manifest = dir.join("Cargo.toml");
        if dir.ends_with("bundle") || !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        if let Some(name) = text.lines().find_map(|l| {
            l.trim().strip_prefix("name").map(str::trim).and_then(|r| r.strip_prefix('='))
        }) {
            names.push(name.trim().trim_matches('"').to_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn build_rules(root: &Path) -> anyhow::Result<()> {
    let toolchain = setup()?;
    let request = pitfall_wasm_build::BuildRequest {
        manifest_path: root.join("Cargo.toml"),
        packages: rule_packages(root)?,
        target_dir: root.join("target/wasm"),
        quiet: false,
    };
    for path in pitfall_wasm_build::build(&toolchain, &request)? {
        let size = std::fs::metadata(&path)?.len();
        println!("{}\t{size} bytes", path.display());
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn test(root: &Path, extra: &[String]) -> anyhow::Result<()> {
    let with_image = extra.iter().any(|a| a == "--image");
    let extra: Vec<&String> = extra.iter().filter(|a| *a != "--image").collect();
    setup()?;
    lint(root)?;
    // Every crate, every target; the bundled-rules build script builds the
    // rules to wasm on the way (same toolchain as `setup` found).
    let status = cargo()
        .current_dir(root)
        .args(["test", "--workspace", "--all-targets", "--no-fail-fast"])
        .args(extra)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("tests failed ({status})");
    }
    if with_image {
        image::test(root)?;
    }
    Ok(())
}

/// One formatting and no clippy warning, before any test runs: CI enforces
/// both, so a change that breaks either fails fast.
fn lint(root: &Path) -> anyhow::Result<()> {
    let status = cargo()
        .current_dir(root)
        .args(["fmt", "--all", "--check"])
        .status()
        .context("running cargo fmt --check")?;
    if !status.success() {
        bail!("cargo fmt --check found unformatted code; run `cargo fmt --all`");
    }
    let status = cargo()
        .current_dir(root)
        .args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])
        .status()
        .context("running cargo clippy")?;
    if !status.success() {
        bail!("cargo clippy found warnings");
    }
    Ok(())
}

fn schema(root: &Path) -> anyhow::Result<()> {
    let status = cargo()
        .current_dir(root)
        .env("PITFALL_BLESS", "1")
        .args(["test", "-p", "pitfall-contract", "--test", "schema"])
        .status()
        .context("running the schema test")?;
    if !status.success() {
        bail!("regenerating the schema failed ({status})");
    }
    Ok(())
}

/// The soak: mixed checks and publishes with hostile rules against a real
/// server on loopback (the test's own docs say what it asserts), `nice`d so
/// it yields to whoever else shares the machine.
fn soak(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let seconds = match args {
        [] => 600,
        [flag, n] if flag == "--seconds" => {
            n.parse::<u64>().context("--seconds takes a whole number")?
        }
        _ => bail!("usage: cargo xtask soak [--seconds N]"),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new("nice")
        .args(["-n", "10"])
        .arg(cargo)
        .current_dir(root)
        .env("PITFALL_SOAK_SECONDS", seconds.to_string())
        .args(["test", "-p", "pitfall-server", "--test", "it", "soak::", "--", "--nocapture"])
        .status()
        .context("running the soak test")?;
    if !status.success() {
        bail!("the soak failed ({status})");
    }
    Ok(())
}
