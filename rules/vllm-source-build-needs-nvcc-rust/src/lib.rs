//! Building vLLM from source needs the CUDA compiler (`nvcc`): without it
//! setup.py finds no CUDA_HOME and stops (KNOWLEDGE.md A3). Since vLLM 0.22
//! it also builds Rust artifacts through setuptools-rust (the `vllm-rs`
//! binary; from 0.24.0 to 0.31.x the PyO3 module `vllm._rust_tool_parser`),
//! but setup.py declares them optional unless `VLLM_REQUIRE_RUST_FRONTEND`
//! is set, and setuptools-rust skips optional extensions when it finds no
//! Rust compiler (read in the vLLM sdists and setuptools-rust's command.py).
//! A build without Rust therefore completes, and the missing artifacts fail
//! at run time (`VLLM_USE_RUST_FRONTEND=1`, MiniMax-M3 tool calls). The
//! rule reports a missing Rust toolchain alone only where the manifest
//! shows it is needed (`VLLM_REQUIRE_RUST_FRONTEND` or
//! `VLLM_USE_RUST_FRONTEND` set), and beside a missing nvcc.
#![no_std]

use pitfall_sdk::prelude::*;

/// The first vLLM version whose build compiles Rust (its development builds included).
const RUST_SINCE: &str = "0.22.0.dev0";

/// Remedy indices in rule.json.
const REMEDY_BOTH: u32 = 0;
const REMEDY_NVCC: u32 = 1;
const REMEDY_RUST: u32 = 2;

/// What a build tool's entry says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// Not needed for this build.
    NotNeeded,
    /// Listed with a version (or any non-null value).
    Present,
    /// Listed as `null`: absent.
    Absent,
    /// Not listed.
    Unknown,
}

fn tool(m: &Manifest, name: &str, needed: bool) -> Tool {
    if !needed {
        return Tool::NotNeeded;
    }
    match m.build_tool(name) {
        None => Tool::Unknown,
        Some(None) => Tool::Absent,
        Some(Some(_)) => Tool::Present,
    }
}

/// An environment switch set on: set, and not `0`, `false` or `no` (how
/// setup.py's `should_require_rust_frontend` reads
/// `VLLM_REQUIRE_RUST_FRONTEND`; envs.py reads `VLLM_USE_RUST_FRONTEND`
/// as `1` or not).
fn switched_on(m: &Manifest, name: &str) -> bool {
    m.env(name).is_some_and(|v| {
        let v = v.trim();
        !(v.is_empty()
            || v == "0"
            || v.eq_ignore_ascii_case("false")
            || v.eq_ignore_ascii_case("no"))
    })
}

const REQUIRE_RUST: &str = "VLLM_REQUIRE_RUST_FRONTEND";
const USE_RUST: &str = "VLLM_USE_RUST_FRONTEND";

fn evaluate(m: &Manifest) -> Outcome {
    if !m.built_from_source("vllm") {
        return Outcome::clear();
    }
    // A build for another device (`VLLM_TARGET_DEVICE=cpu`, `rocm`, ...) needs no nvcc.
    let cuda_target =
        m.env("VLLM_TARGET_DEVICE").is_none_or(|d| d.trim().eq_ignore_ascii_case("cuda"));
    // An older vLLM builds without Rust; an unknown version may be the main branch, which needs it.
    let version = m.package_version("vllm");
    let rust_built = match version.as_deref() {
        Some(v) => pep440_lt(v, RUST_SINCE) != Some(true),
        None => true,
    };
    // The Rust extensions are optional: a build without Rust completes
    // without them, which fails only where something needs them. Of
    // those the manifest shows the two switches; MiniMax-M3's tool parser
    // (0.24 to 0.31) and a build without isolation are not judged.
    let required = switched_on(m, REQUIRE_RUST);
    let used = switched_on(m, USE_RUST);
    let rust_needed = rust_built && (required || used);
    let nvcc = tool(m, "nvcc", cuda_target);
    let rustc = tool(m, "rustc", rust_built);
    let (nvcc_absent, rustc_absent) = (nvcc == Tool::Absent, rustc == Tool::Absent);
    let rust_fails = rustc_absent && rust_needed;
    if !(nvcc_absent || rust_fails) {
        let rustc_unknown = rustc == Tool::Unknown && rust_needed;
        if nvcc == Tool::Unknown || rustc_unknown {
            let mut outcome = Outcome::undetermined();
            if nvcc == Tool::Unknown {
                outcome = outcome.missing("build.tools.nvcc");
            }
            if rustc_unknown {
                outcome = outcome.missing("build.tools.rustc");
            }
            return outcome;
        }
        return Outcome::clear();
    }
    let mut tools = String::new();
    let mut failure = String::new();
    let mut outcome = Outcome::matched();
    if nvcc_absent {
        tools.push_str("no CUDA compiler (nvcc)");
        failure
            .push_str("without nvcc the build stops with `AssertionError: CUDA_HOME is not set`");
        outcome = outcome.evidence("build.tools.nvcc");
    }
    if rustc_absent {
        if nvcc_absent {
            tools.push_str(" and ");
            failure.push_str("; and ");
        }
        tools.push_str("no Rust toolchain (rustc)");
        if required {
            failure.push_str(
                "with VLLM_REQUIRE_RUST_FRONTEND set, the build stops with `error: can't find Rust compiler`",
            );
            outcome = outcome.evidence("env.VLLM_REQUIRE_RUST_FRONTEND");
        } else if used {
            failure.push_str(
                "vLLM's Rust extensions are optional, so the build completes without the vllm-rs binary (setuptools-rust prints `can't find Rust compiler` and skips it), and with VLLM_USE_RUST_FRONTEND=1 vLLM stops at start-up with `FileNotFoundError: VLLM_RUST_FRONTEND_PATH=auto but the vllm-rs binary was not found`",
            );
            outcome = outcome.evidence("env.VLLM_USE_RUST_FRONTEND");
        } else {
            failure.push_str(
                "without Rust the build skips vLLM's optional Rust extensions (the vllm-rs binary), and a build without build isolation stops with `ModuleNotFoundError: No module named 'setuptools_rust'` unless setuptools-rust is installed",
            );
        }
        outcome = outcome.evidence("build.tools.rustc");
    }
    outcome = outcome.evidence("build.from_source");
    let mut what = String::from("vLLM");
    if let Some(v) = &version {
        what.push(' ');
        what.push_str(v);
    }
    outcome.param("vllm", &what).param("tools", &tools).param("failure", &failure).remedy(
        match (nvcc_absent, rustc_absent) {
            (true, true) => REMEDY_BOTH,
            (true, false) => REMEDY_NVCC,
            _ => REMEDY_RUST,
        },
    )
}

pitfall_sdk::export_rule!(evaluate);
