//! GPU containers lose their GPUs after `systemctl daemon-reload` when the
//! NVIDIA Container Runtime Hook injected them and systemd manages the
//! container's cgroups (KNOWLEDGE.md D2; NVIDIA Container Toolkit
//! troubleshooting guide; nvidia-container-toolkit issue 48).
//!
//! The hook is used by Docker's `--gpus` flag always, and by the NVIDIA
//! runtime in legacy mode, which `auto` resolves to up to 1.17.x and no
//! longer from 1.18.0 (jit-cdi; internal/info/auto.go at both tags).
//! Proposed fields: `container.cgroup_driver` (`systemd`/`cgroupfs`, from
//! `docker info`) and `container.gpu_request` (`gpus_flag`, `nvidia_runtime`,
//! `cdi`, `device_flags`, from `docker inspect`).
#![no_std]

use pitfall_sdk::prelude::*;

const TOOLKIT: &str = "nvidia-container-toolkit";
/// The runtime's `auto` mode resolves to legacy (the hook) before 1.18.0.
const LEGACY_DEFAULT: &str = "<1.18.0";

fn lower(m: &Manifest, path: &str) -> Option<String> {
    m.text(path).map(|t| t.trim().to_ascii_lowercase())
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors `container` and `accelerator:nvidia`.
    if m.image().is_none() || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let cgroup = lower(m, "container.cgroup_driver");
    let request = lower(m, "container.gpu_request");
    let (Some(cgroup), Some(request)) = (cgroup.as_deref(), request.as_deref()) else {
        let mut outcome = Outcome::undetermined();
        if cgroup.is_none() {
            outcome = outcome.missing("container.cgroup_driver");
        }
        if request.is_none() {
            outcome = outcome.missing("container.gpu_request");
        }
        return outcome;
    };
    // Only systemd re-applies the device rules on a unit reload.
    if cgroup != "systemd" {
        return Outcome::clear();
    }
    let base =
        Outcome::matched().evidence("container.cgroup_driver").evidence("container.gpu_request");
    match request {
        "gpus_flag" => {
            base.param("how", "Docker's --gpus flag (the NVIDIA Container Runtime Hook)").remedy(1)
        }
        "nvidia_runtime" => {
            let Some(toolkit) = m.package(TOOLKIT) else {
                return Outcome::needs("packages.nvidia-container-toolkit.version");
            };
            match toolkit.version_in(LEGACY_DEFAULT) {
                Some(true) => base
                    .evidence(toolkit.version_path().as_str())
                    .param(
                        "how",
                        "the NVIDIA runtime in legacy mode (its default before toolkit 1.18.0)",
                    )
                    .remedy(0)
                    .remedy(1),
                Some(false) => Outcome::clear(),
                None => Outcome::needs("packages.nvidia-container-toolkit.version"),
            }
        }
        // CDI and explicit --device flags put the device nodes in the
        // container's own config: not affected.
        _ => Outcome::clear(),
    }
}

pitfall_sdk::export_rule!(evaluate);
