//! `cargo xtask image [--debug]`: the container images, built with podman
//! and nothing from an image registry:
//!
//! 1. podman, runc and debootstrap from apt (unless `PITFALL_NO_INSTALL`);
//! 2. the base the Dockerfiles name, `debian:bookworm-slim`, unless podman
//!    already has it: `debootstrap --variant=minbase bookworm` into
//!    `target/image/rootfs`, slimmed as Debian's slim images are (no docs,
//!    man pages or locales), then `podman import`ed under that name;
//! 3. `pitfall-server` with cargo (release, or the dev profile with
//!    `--debug`), copied alone into `target/image/context`;
//! 4. `podman build --pull=never` of `Dockerfile` (the server) and of
//!    `deploy/postgres/Dockerfile` (PostgreSQL from Debian's package, for
//!    `compose.yaml`).
//!
//! podman runs with `--runtime runc --cgroup-manager=cgroupfs` and explicit
//! ulimits: the crun default and the systemd cgroup manager do not work on
//! every machine this project runs on (virtual machines without systemd).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The base image's name, as the Dockerfiles' `FROM` has it.
pub(crate) const BASE_IMAGE: &str = "docker.io/library/debian:bookworm-slim";
/// The server image.
pub(crate) const SERVER_IMAGE: &str = "localhost/pitfall-server:latest";
/// The PostgreSQL image `compose.yaml` names.
pub(crate) const POSTGRES_IMAGE: &str = "localhost/pitfall-postgres:15";
/// Where Debian's packages come from (debootstrap's default mirror).
const MIRROR: &str = "http://deb.debian.org/debian";

/// podman-compose runs `compose.yaml`; the dnsname CNI plugin lets its
/// services find each other by name.
const PACKAGES: &[&str] = &[
    "podman",
    "runc",
    "debootstrap",
    "podman-compose",
    "golang-github-containernetworking-plugin-dnsname",
];
const BINARIES: &[&str] = &[
    "/usr/bin/podman",
    "/usr/sbin/runc",
    "/usr/sbin/debootstrap",
    "/usr/bin/podman-compose",
    "/usr/lib/cni/dnsname",
];

/// Which cargo profile the image's binary comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    Release,
    /// The binary the test suite builds anyway: the image test needs no
    /// release build.
    Debug,
}

/// `podman` with the flags this machine kind needs.
pub(crate) fn podman() -> Command {
    let mut command = Command::new("podman");
    command.args(["--runtime", "runc", "--cgroup-manager=cgroupfs"]);
    command
}

/// The per-container flags every `podman run` and `podman build` here takes.
pub(crate) const ULIMITS: &[&str] =
    &["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

/// `cargo xtask image [--debug]`.
pub(crate) fn image(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let profile = match args {
        [] => Profile::Release,
        [flag] if flag == "--debug" => Profile::Debug,
        _ => bail!("usage: cargo xtask image [--debug]"),
    };
    build(root, profile)
}

/// Every step of the module's doc.
pub(crate) fn build(root: &Path, profile: Profile) -> anyhow::Result<()> {
    let install = std::env::var_os("PITFALL_NO_INSTALL").is_none();
    crate::ensure_packages("the container images", PACKAGES, BINARIES, install)?;
    base_image(root)?;
    let binary = server_binary(root, profile)?;
    let context = root.join("target/image/context");
    std::fs::create_dir_all(&context)?;
    std::fs::copy(&binary, context.join("pitfall-server"))
        .with_context(|| format!("copying {}", binary.display()))?;
    run(podman()
        .args(["build", "--pull=never", "--format", "docker", "--tag", SERVER_IMAGE])
        .args(ULIMITS)
        .arg("--file")
        .arg(root.join("Dockerfile"))
        .arg(&context))
    .context("building the server image")?;
    // Its RUN installs Debian's postgresql package: the host's network.
    run(podman()
        .args(["build", "--pull=never", "--format", "docker", "--network", "host"])
        .args(["--tag", POSTGRES_IMAGE])
        .args(ULIMITS)
        .arg(root.join("deploy/postgres")))
    .context("building the PostgreSQL image")?;
    eprintln!("xtask: images {SERVER_IMAGE} and {POSTGRES_IMAGE} built");
    Ok(())
}

/// `debian:bookworm-slim`, made here unless podman has it.
fn base_image(root: &Path) -> anyhow::Result<()> {
    let present = podman()
        .args(["image", "exists", BASE_IMAGE])
        .status()
        .context("running podman")?
        .success();
    if present {
        eprintln!("xtask: base image {BASE_IMAGE} present");
        return Ok(());
    }
    let rootfs = root.join("target/image/rootfs");
    if rootfs.exists() {
        std::fs::remove_dir_all(&rootfs)
            .with_context(|| format!("removing the partial {}", rootfs.display()))?;
    }
    std::fs::create_dir_all(rootfs.parent().context("target/image")?)?;
    eprintln!("xtask: debootstrap --variant=minbase bookworm (a few minutes)");
    run(Command::new("debootstrap")
        .args(["--variant=minbase", "bookworm"])
        .arg(&rootfs)
        .arg(MIRROR))
    .context("debootstrap")?;
    slim(&rootfs)?;
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .context("running tar")?;
    let status = podman()
        .args(["import", "-", BASE_IMAGE])
        .stdin(tar.stdout.context("tar's output")?)
        .status()
        .context("podman import")?;
    if !status.success() {
        bail!("podman import failed ({status})");
    }
    std::fs::remove_dir_all(&rootfs).ok();
    Ok(())
}

/// What Debian's slim images leave out, removed and kept out of later
/// installs (`/etc/dpkg/dpkg.cfg.d/slim`): documentation, man pages,
/// translations; and the package lists, fetched again by whoever installs.
fn slim(rootfs: &Path) -> anyhow::Result<()> {
    for dir in ["usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale"] {
        let dir = rootfs.join(dir);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
            std::fs::create_dir_all(&dir)?;
        }
    }
    let lists = rootfs.join("var/lib/apt/lists");
    if lists.exists() {
        std::fs::remove_dir_all(&lists)?;
        std::fs::create_dir_all(lists.join("partial"))?;
    }
    std::fs::write(
        rootfs.join("etc/dpkg/dpkg.cfg.d/slim"),
        "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n\
         path-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\n\
         path-exclude /usr/share/locale/*\n",
    )?;
    Ok(())
}

/// `pitfall-server` built by cargo; its path.
fn server_binary(root: &Path, profile: Profile) -> anyhow::Result<std::path::PathBuf> {
    let mut cargo = crate::cargo();
    cargo.current_dir(root);
    if profile == Profile::Release {
        cargo.args(["build", "--release", "--workspace", "--bin", "pitfall-server"]);
    } else {
        // The dev binary the tests built, with their feature set (their
        // dev-dependencies turn features on): a plain `cargo build` would
        // resolve other features and build the workspace a second time.
        cargo.args(["test", "--workspace", "--all-targets", "--no-run"]);
    }
    run(&mut cargo).context("building pitfall-server")?;
    let dir = if profile == Profile::Release { "release" } else { "debug" };
    Ok(root.join("target").join(dir).join("pitfall-server"))
}

/// The image tests (`server/tests/it/image.rs`, ignored in a plain
/// `cargo test`): the images built from the dev binary, then the tests
/// with `PITFALL_IMAGE_TESTS` naming them.
pub(crate) fn test(root: &Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    build(root, Profile::Debug)?;
    run(crate::cargo()
        .current_dir(root)
        .env("PITFALL_SERVER_IMAGE", SERVER_IMAGE)
        .env("PITFALL_POSTGRES_IMAGE", POSTGRES_IMAGE)
        // One at a time: compose reconfigures the container network while
        // the other test holds connections through a published port.
        .args([
            "test",
            "--workspace",
            "--test",
            "it",
            "--",
            "--ignored",
            "--test-threads=1",
            "image::",
        ]))
    .context("the image tests")?;
    eprintln!("xtask: image tests passed in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("running {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}
