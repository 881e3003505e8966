//! `docker run --gpus` needs the NVIDIA Container Toolkit on the host; without
//! it Docker answers `could not select device driver "" with capabilities:
//! [[gpu]]` (KNOWLEDGE.md D3; nvidia-container-toolkit issue 871).
//!
//! Proposed fields: `container.engine` (`docker`, `podman`, ...),
//! `container.gpu_request` (`gpus_flag`, ...) and `host.system_packages_listed`
//! (scan listed dpkg/rpm packages, so an absent package is not installed).
#![no_std]

use pitfall_sdk::prelude::*;

fn lower(m: &Manifest, path: &str) -> Option<String> {
    m.text(path).map(|t| t.trim().to_ascii_lowercase())
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors `container` and `accelerator:nvidia`.
    if m.image().is_none() || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let engine = lower(m, "container.engine");
    let request = lower(m, "container.gpu_request");
    let (Some(engine), Some(request)) = (engine.as_deref(), request.as_deref()) else {
        let mut outcome = Outcome::undetermined();
        if engine.is_none() {
            outcome = outcome.missing("container.engine");
        }
        if request.is_none() {
            outcome = outcome.missing("container.gpu_request");
        }
        return outcome;
    };
    if engine != "docker" || request != "gpus_flag" {
        return Outcome::clear();
    }
    if m.package("nvidia-container-toolkit").is_some() {
        // Installed: the error can still come from a snap Docker or a daemon
        // not restarted after the install, which this rule does not see.
        return Outcome::clear();
    }
    // An absent entry only means "not installed" when the OS packages were listed.
    match m.boolean("host.system_packages_listed") {
        Some(true) => Outcome::matched()
            .evidence("container.engine")
            .evidence("container.gpu_request")
            .evidence("host.system_packages_listed"),
        _ => Outcome::needs("host.system_packages_listed"),
    }
}

pitfall_sdk::export_rule!(evaluate);
