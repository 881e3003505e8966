//! Building vLLM from source needs the CUDA compiler (`nvcc`): without it
//! setup.py finds no CUDA_HOME and stops (KNOWLEDGE.md A3). Since vLLM 0.22
//! it also builds Rust artifacts through setuptools-rust (the `vllm-rs`
//! binary; from 0.24.0 to 0.31.x the PyO3 module `vllm._rust_tool_parser`),
//! but setup.py declares them optional unless `VLLM_REQUIRE_RUST_FRONTEND`
//! is set, and setuptools-rust skips optional extensions when it finds no
//! Rust compiler (read in the vLLM sdists and setuptools-rust's command.py).
//! A build without Rust therefore completes, and the missing artifacts fail
//! at run time (`VLLM_USE_RUST_FRONTEND=1`, MiniMax-M3 tool calls).
#![no_std]

use pitfall_sdk::prelude::*;

/// The first vLLM version whose build compiles Rust (its development builds included).
const RUST_SINCE: &str = "0.22.0.dev0";
/// The releases that also build the `vllm._rust_tool_parser` PyO3 module.
const PARSER_SINCE: &str = "0.24.0.dev0";
const PARSER_UNTIL: &str = "0.32.0.dev0";

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

/// setup.py's `should_require_rust_frontend`: set, and not `0`, `false` or `no`.
fn rust_required(m: &Manifest) -> bool {
    m.env("VLLM_REQUIRE_RUST_FRONTEND").is_some_and(|v| {
        let v = v.trim();
        !(v.is_empty()
            || v == "0"
            || v.eq_ignore_ascii_case("false")
            || v.eq_ignore_ascii_case("no"))
    })
}

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
    let parser = version.as_deref().is_some_and(|v| {
        pep440_lt(v, PARSER_SINCE) == Some(false) && pep440_lt(v, PARSER_UNTIL) == Some(true)
    });
    let nvcc = tool(m, "nvcc", cuda_target);
    let rustc = tool(m, "rustc", rust_built);
    let (nvcc_absent, rustc_absent) = (nvcc == Tool::Absent, rustc == Tool::Absent);
    if !nvcc_absent && !rustc_absent {
        if nvcc == Tool::Unknown || rustc == Tool::Unknown {
            let mut outcome = Outcome::undetermined();
            if nvcc == Tool::Unknown {
                outcome = outcome.missing("build.tools.nvcc");
            }
            if rustc == Tool::Unknown {
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
        if rust_required(m) {
            failure.push_str(
                "with VLLM_REQUIRE_RUST_FRONTEND set, the build stops with `error: can't find Rust compiler`",
            );
            outcome = outcome.evidence("env.VLLM_REQUIRE_RUST_FRONTEND");
        } else {
            failure.push_str(
                "vLLM's Rust extensions are optional, so the build does not stop for lack of Rust (setuptools-rust prints `can't find Rust compiler` and skips them) but installs vLLM without the vllm-rs binary",
            );
            if parser {
                failure.push_str(" and the vllm._rust_tool_parser extension");
            }
            failure.push_str(if parser { ", which fail" } else { ", which fails" });
            failure.push_str(
                " at run time: VLLM_USE_RUST_FRONTEND=1 stops with `FileNotFoundError: VLLM_RUST_FRONTEND_PATH=auto but the vllm-rs binary was not found`",
            );
            if parser {
                failure.push_str(
                    ", and MiniMax-M3 tool calls (`--tool-call-parser minimax_m3`) fail with `No module named 'vllm._rust_tool_parser'`",
                );
            }
            failure.push_str(
                " (a build without build isolation stops earlier, with `ModuleNotFoundError: No module named 'setuptools_rust'`, when setuptools-rust is not installed)",
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
