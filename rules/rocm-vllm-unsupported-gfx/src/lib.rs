//! vLLM on ROCm supports a short list of AMD GPUs. Its installation docs
//! (docs/getting_started/installation/gpu/rocm.inc.md, stored version at
//! commit 0794945f, mid-2025) list: MI200s (gfx90a), MI300 (gfx942),
//! Radeon RX 7900 series (gfx1100/1101), Radeon RX 9000 series
//! (gfx1200/1201), and the default Docker build targets "gfx90a;gfx942".
//! On another target vLLM's own kernels and the ROCm PyTorch it is built on
//! have no code objects: "HIP error: invalid device function" at start-up.
//! The list was read at one commit, not per release, so the finding is a
//! warning; gfx950 (MI350 series), which newer releases may support, is
//! not reported.
#![no_std]

use pitfall_sdk::prelude::*;

const SUPPORTED: [&str; 6] = ["gfx90a", "gfx942", "gfx1100", "gfx1101", "gfx1200", "gfx1201"];
/// Targets the docs read do not mention but newer vLLM may support.
const NOT_JUDGED: [&str; 1] = ["gfx950"];

fn evaluate(m: &Manifest) -> Outcome {
    if m.package("vllm").is_none() && m.workload().engine().as_deref() != Some("vllm") {
        return Outcome::clear();
    }
    for gpu in m.accelerators().filter(|a| a.vendor().as_deref() == Some("amd")) {
        let path = gpu.field_path("gfx_target");
        let Some(gfx) = m.text(path.as_str()) else {
            return Outcome::needs(path.as_str());
        };
        let gfx = gfx.trim();
        if SUPPORTED.contains(&gfx) || NOT_JUDGED.contains(&gfx) {
            continue;
        }
        let name = gpu.model().unwrap_or_else(|| String::from("AMD GPU"));
        return Outcome::matched().evidence(path.as_str()).param("gpu", &name).param("gfx", gfx);
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
