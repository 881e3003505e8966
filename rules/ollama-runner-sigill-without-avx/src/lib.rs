//! Ollama's official x86-64 builds before 0.1.23 run llama.cpp code
//! compiled with AVX and never check the CPU for it: on a CPU without AVX
//! (a VM whose CPU model hides it, a CPU older than Sandy Bridge) the
//! llama.cpp code dies with SIGILL when a model loads.
//!
//! Per release (source read at each tag, both sides of each boundary):
//! - 0.0.19 and earlier: no official Linux build (scripts/build_linux.sh
//!   and scripts/install.sh first in 0.0.20). Not judged.
//! - 0.0.20 to 0.1.3: the runner subprocess (CPU and CUDA) is llama.cpp's
//!   server built with llama.cpp's CMake defaults: AVX, AVX2, FMA and F16C
//!   on. 0.1.0 and 0.1.1 log "llama runner exited with error: signal:
//!   illegal instruction", 0.1.2 and 0.1.3 "llama runner stopped with
//!   error: signal: illegal instruction".
//! - 0.1.4 and 0.1.5: the gguf runner is built with llama.cpp's new
//!   default LLAMA_NATIVE=on (-march=native on the build machine): AVX at
//!   least; more is not judged.
//! - 0.1.6 to 0.1.17: AVX on, AVX2/FMA/F16C off (commit 3a1ed9ff7, #900);
//!   the log says "signal: illegal instruction".
//! - 0.1.18 to 0.1.20: the same flags, llama.cpp linked into the server
//!   process: Ollama itself dies ("SIGILL: illegal instruction").
//! - 0.1.21 and 0.1.22: CPU variants, one without AVX, chosen at run
//!   time; the CUDA and ROCm libraries still need AVX, so only a host with
//!   a GPU crashes (issue 2187).
//! - 0.1.23 on: the GPU is turned off instead (the rule
//!   `ollama-gpu-disabled-without-avx`).
//!
//! Builds from source choose their own CPU flags and are not judged.
#![no_std]

use pitfall_sdk::image::Release;
use pitfall_sdk::prelude::*;

const FLAGS: &str = "host.cpu_flags";
const ARCH: &str = "host.arch";
const REPOSITORY: &str = "ollama/ollama";
const PACKAGE_VERSION: &str = "packages.ollama.version";

/// Remedy indices in rule.json.
const EXPOSE_AVX: u32 = 0;
const UPGRADE: u32 = 1;
const IMAGE: u32 = 2;

const DEFAULTS: &[&str] = &["avx", "avx2", "fma", "f16c"];
const AVX: &[&str] = &["avx"];

const BUILT_DEFAULTS: &str = "llama.cpp's default x86 flags (AVX, AVX2, FMA, F16C)";
const BUILT_NATIVE: &str = "-march=native on Ollama's build machine (AVX at least)";
const BUILT_AVX: &str = "AVX";
const BUILT_GPU: &str =
    "AVX in its CUDA and ROCm libraries (only its CPU library has a variant without AVX)";

const LOG_EXITED: &str = "the runner process dies with SIGILL when a model loads ('llama runner exited with error: signal: illegal instruction')";
const LOG_STOPPED: &str = "the runner process dies with SIGILL when a model loads ('llama runner stopped with error: signal: illegal instruction', 'Error: llama runner process has terminated')";
const LOG_SIGNAL: &str = "the runner process dies with SIGILL when a model loads ('signal: illegal instruction', then 'error starting llama runner: llama runner process has terminated')";
const LOG_IN_PROCESS: &str = "the Ollama server itself dies with SIGILL when a model loads ('SIGILL: illegal instruction'; llama.cpp runs inside the server process)";
const LOG_GPU: &str = "the Ollama server itself dies with SIGILL when it loads the GPU library for a model ('SIGILL: illegal instruction')";

/// Releases whose official builds run llama.cpp code the CPU cannot.
struct Window {
    /// The PEP 440 range's ends.
    lo: &'static str,
    hi: &'static str,
    /// The CPU flags the build needs.
    needs: &'static [&'static str],
    /// Whether only the GPU libraries need them (a host without a GPU
    /// gets a CPU variant without AVX).
    gpu_only: bool,
    built: &'static str,
    crash: &'static str,
}

const WINDOWS: [Window; 6] = [
    Window {
        lo: "0.0.20",
        hi: "0.1.2",
        needs: DEFAULTS,
        gpu_only: false,
        built: BUILT_DEFAULTS,
        crash: LOG_EXITED,
    },
    Window {
        lo: "0.1.2",
        hi: "0.1.4",
        needs: DEFAULTS,
        gpu_only: false,
        built: BUILT_DEFAULTS,
        crash: LOG_STOPPED,
    },
    Window {
        lo: "0.1.4",
        hi: "0.1.6",
        needs: AVX,
        gpu_only: false,
        built: BUILT_NATIVE,
        crash: LOG_SIGNAL,
    },
    Window {
        lo: "0.1.6",
        hi: "0.1.18",
        needs: AVX,
        gpu_only: false,
        built: BUILT_AVX,
        crash: LOG_SIGNAL,
    },
    Window {
        lo: "0.1.18",
        hi: "0.1.21",
        needs: AVX,
        gpu_only: false,
        built: BUILT_AVX,
        crash: LOG_IN_PROCESS,
    },
    Window {
        lo: "0.1.21",
        hi: "0.1.23",
        needs: AVX,
        gpu_only: true,
        built: BUILT_GPU,
        crash: LOG_GPU,
    },
];

/// `outcome` naming the other fields the manifest lacks too.
fn also(mut outcome: Outcome, arch: bool, flags: bool) -> Outcome {
    if arch {
        outcome = outcome.missing(ARCH);
    }
    if flags {
        outcome = outcome.missing(FLAGS);
    }
    outcome
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
    // x86-64 only: other architectures have no AVX.
    let arch = m.arch();
    if arch.as_deref().is_some_and(|a| a != "x86_64") {
        return Outcome::clear();
    }
    let flags = m.cpu_flags();
    let (no_arch, no_flags) = (arch.is_none(), flags.is_none());
    let release = match (release, &package) {
        (Some(release), _) => release,
        (None, Some(p)) => {
            return also(Outcome::needs(p.version_path().as_str()), no_arch, no_flags);
        }
        (None, None) => return also(Outcome::needs(PACKAGE_VERSION), no_arch, no_flags),
    };
    let window = match release.window(&WINDOWS, |w| (w.lo, w.hi)) {
        Ok(Some(window)) => window,
        Ok(None) => return Outcome::clear(),
        Err(outcome) => return also(outcome, no_arch, no_flags),
    };
    let gpu = m.accelerators().find(|a| matches!(a.vendor().as_deref(), Some("nvidia" | "amd")));
    if window.gpu_only && gpu.is_none() {
        return Outcome::clear();
    }
    let Some(flags) = flags else {
        return also(Outcome::needs(FLAGS), no_arch, false);
    };
    let missing = pitfall_sdk::text::missing(&flags, window.needs);
    if missing.is_empty() {
        return Outcome::clear();
    }
    if no_arch {
        return Outcome::needs(ARCH);
    }
    let cpu = m.cpu_model().unwrap_or_else(|| String::from("model not given"));
    let mut outcome = Outcome::matched()
        .evidence(FLAGS)
        .evidence(ARCH)
        .param("cpu", &cpu)
        .param("missing", &missing)
        .param("built", window.built)
        .param("crash", window.crash)
        .remedy(EXPOSE_AVX);
    if m.has("host.cpu_model") {
        outcome = outcome.evidence("host.cpu_model");
    }
    if window.gpu_only
        && let Some(gpu) = gpu
    {
        outcome = outcome.evidence(gpu.field_path("vendor").as_str());
    }
    outcome = match release {
        Release::Package(_) => outcome.remedy(UPGRADE),
        Release::Image(_) => outcome.remedy(IMAGE),
    };
    release.cite(outcome, "ollama")
}

pitfall_sdk::export_rule!(evaluate);
