//! Official Ollama builds for x86-64 turn GPU support off when the CPU
//! lacks AVX (their GPU runners are compiled with AVX), and the model runs
//! on the CPU. Nothing fails; it is only slow. The usual cause is a VM
//! whose CPU model hides AVX (Proxmox's default kvm64 / x86-64-v2-AES,
//! QEMU's generic models), else a CPU older than Sandy Bridge.
//!
//! Per release (source read at each tag, both sides of each boundary):
//! - 0.1.22 and earlier: no check; the CUDA runner dies with SIGILL (issue
//!   2187). Not judged here.
//! - 0.1.23 to 0.1.44: `gpu/gpu.go` logs "CPU does not have AVX or AVX2,
//!   disabling GPU support." and skips CUDA GPUs; ROCm GPUs only up to
//!   0.1.28 (0.1.29 to 0.1.44 call `AMDGetGPUInfo` without the check).
//! - 0.1.45-rc1 to 0.3.13: `gpu/gpu.go` returns the CPU alone before any
//!   discovery: "CPU does not have minimum vector extensions, GPU inference
//!   disabled" (required=avx). 0.3.14-rc0 to 0.5.1: the same in
//!   `discover/gpu.go`, text "...disabled.  Required:avx  Detected:...".
//! - 0.5.2-rc0 to 0.5.7: `runners/common.go` drops runners named
//!   `<lib>_<variant>_avx` ("GPU runner incompatible with host system, CPU
//!   does not have AVX"): the CUDA runners (`cuda_v11_avx`, `cuda_v12_avx`)
//!   but not `rocm_avx`, so the built-in CPU runner serves NVIDIA hosts.
//! - 0.5.8-rc0 on: no such check (GGML backends loaded as libraries).
//!   Whether those releases use the GPU on a CPU without AVX is not
//!   verified, so they are not judged.
//!
//! Builds from source choose their own CPU flags and are not judged.
#![no_std]

use pitfall_sdk::image::Release;
use pitfall_sdk::prelude::*;

const FLAGS: &str = "host.cpu_flags";
const REPOSITORY: &str = "ollama/ollama";
const PACKAGE_VERSION: &str = "packages.ollama.version";

/// Remedy index in rule.json.
const EXPOSE_AVX: u32 = 0;

const HOW_0_1_23: &str = "its GPU discovery skips the GPUs when the CPU lacks AVX ('CPU does not have AVX or AVX2, disabling GPU support.')";
const HOW_0_1_45: &str = "its GPU discovery stops before looking for GPUs when the CPU lacks AVX ('CPU does not have minimum vector extensions, GPU inference disabled' required=avx)";
const HOW_0_3_14: &str = "its GPU discovery stops before looking for GPUs when the CPU lacks AVX ('CPU does not have minimum vector extensions, GPU inference disabled.  Required:avx  Detected:no vector extensions')";
const HOW_0_5_2: &str = "its CUDA runners are built with AVX and are skipped on a CPU without it ('GPU runner incompatible with host system, CPU does not have AVX' runner=cuda_v12_avx), leaving the built-in CPU runner";

/// Releases whose official builds turn the GPU off without AVX.
struct Window {
    /// The PEP 440 range's ends.
    lo: &'static str,
    hi: &'static str,
    /// Whether AMD (ROCm) GPUs are turned off too.
    amd: bool,
    how: &'static str,
}

const WINDOWS: [Window; 5] = [
    Window { lo: "0.1.23", hi: "0.1.29", amd: true, how: HOW_0_1_23 },
    Window { lo: "0.1.29", hi: "0.1.45rc0", amd: false, how: HOW_0_1_23 },
    Window { lo: "0.1.45rc0", hi: "0.3.14rc0", amd: true, how: HOW_0_1_45 },
    Window { lo: "0.3.14rc0", hi: "0.5.2rc0", amd: true, how: HOW_0_3_14 },
    Window { lo: "0.5.2rc0", hi: "0.5.8rc0", amd: false, how: HOW_0_5_2 },
];

/// Asks for `host.cpu_flags` too when the manifest lacks them.
fn also_flags(outcome: Outcome, flags: &Option<Vec<String>>) -> Outcome {
    if flags.is_none() { outcome.missing(FLAGS) } else { outcome }
}

fn evaluate(m: &Manifest) -> Outcome {
    let package = m.package("ollama");
    let release = Release::of(m, "ollama", REPOSITORY);
    let engine = m.workload().engine();
    if package.is_none() && release.is_none() && engine.as_deref() != Some("ollama") {
        return Outcome::clear();
    }
    if m.built_from_source("ollama") {
        return Outcome::clear();
    }
    // The check is for x86-64 only (`runtime.GOARCH == "amd64"`).
    if m.arch().is_some_and(|a| a != "x86_64") {
        return Outcome::clear();
    }
    let nvidia = m.nvidia_gpus().next();
    let amd = m.accelerators().find(|a| a.vendor().as_deref() == Some("amd"));
    if nvidia.is_none() && amd.is_none() {
        return Outcome::clear();
    }
    let flags = m.cpu_flags();
    let release = match (release, &package) {
        (Some(release), _) => release,
        (None, Some(p)) => return also_flags(Outcome::needs(p.version_path().as_str()), &flags),
        (None, None) => return also_flags(Outcome::needs(PACKAGE_VERSION), &flags),
    };
    let window = match release.window(&WINDOWS, |w| (w.lo, w.hi)) {
        Ok(Some(window)) => window,
        Ok(None) => return Outcome::clear(),
        Err(outcome) => return also_flags(outcome, &flags),
    };
    let gpu = match (nvidia, amd) {
        (Some(gpu), _) => gpu,
        (None, Some(gpu)) if window.amd => gpu,
        _ => return Outcome::clear(),
    };
    let Some(flags) = flags else {
        return Outcome::needs(FLAGS);
    };
    if flags.iter().any(|f| f == "avx") {
        return Outcome::clear();
    }
    let gpu_name = gpu
        .model()
        .unwrap_or_else(|| String::from(if gpu.is_nvidia() { "NVIDIA GPU" } else { "AMD GPU" }));
    let cpu = m.cpu_model().unwrap_or_else(|| String::from("model not given"));
    let mut outcome = Outcome::matched()
        .evidence(FLAGS)
        .evidence(gpu.field_path("vendor").as_str())
        .param("gpu", &gpu_name)
        .param("cpu", &cpu)
        .param("how", window.how)
        .remedy(EXPOSE_AVX);
    if m.has("host.cpu_model") {
        outcome = outcome.evidence("host.cpu_model");
    }
    release.cite(outcome, "ollama")
}

pitfall_sdk::export_rule!(evaluate);
