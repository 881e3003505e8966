//! Debian packages the project's commands need, installed with apt-get
//! (as root) only from here, and only unless `PITFALL_NO_INSTALL` is set.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// Installs Debian `packages` with apt-get (as root) when any of `files`
/// is missing; with `install` false, names the packages instead.
pub(crate) fn ensure_packages(
    purpose: &str,
    packages: &[&str],
    files: &[&str],
    install: bool,
) -> anyhow::Result<()> {
    let present = || files.iter().all(|b| Path::new(b).exists());
    if present() {
        eprintln!("xtask: {purpose}: {} present", packages.join(", "));
        return Ok(());
    }
    if !install {
        bail!(
            "{purpose} need {}; PITFALL_NO_INSTALL is set, so install them with `apt-get install -y {}`",
            files.join(" and "),
            packages.join(" ")
        );
    }
    let apt = |args: &[&str]| -> anyhow::Result<bool> {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("running apt-get ({purpose} need root and apt-get)"))?;
        Ok(status.success())
    };
    eprintln!("xtask: installing {} with apt-get", packages.join(" "));
    let mut install_args = vec!["install", "-y", "-q", "--no-install-recommends"];
    install_args.extend_from_slice(packages);
    // A fresh machine's package lists may be missing or stale: update once
    // when the first try fails.
    let installed = apt(&install_args)? || (apt(&["update", "-q"])? && apt(&install_args)?);
    if !installed {
        bail!("apt-get could not install {}", packages.join(" "));
    }
    if !present() {
        bail!("apt-get ran but {} are still missing", files.join(" and "));
    }
    Ok(())
}
