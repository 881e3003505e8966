//! Building vLLM from source needs the CUDA compiler (`nvcc`) and, since
//! vLLM 0.22, a Rust toolchain (`setuptools-rust` builds the `vllm-rs`
//! module). The AWS Deep Learning ARM64 AMI has neither (KNOWLEDGE.md A3).
#![no_std]

use pitfall_sdk::prelude::*;

/// The first vLLM version whose build needs Rust (its development builds included).
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

fn evaluate(m: &Manifest) -> Outcome {
    if !m.built_from_source("vllm") {
        return Outcome::clear();
    }
    // A build for another device (`VLLM_TARGET_DEVICE=cpu`, `rocm`, ...) needs no nvcc.
    let cuda_target =
        m.env("VLLM_TARGET_DEVICE").is_none_or(|d| d.trim().eq_ignore_ascii_case("cuda"));
    // An older vLLM builds without Rust; an unknown version may be the main branch, which needs it.
    let version = m.package_version("vllm");
    let rust_needed = match version.as_deref() {
        Some(v) => pep440_lt(v, RUST_SINCE) != Some(true),
        None => true,
    };
    let nvcc = tool(m, "nvcc", cuda_target);
    let rustc = tool(m, "rustc", rust_needed);
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
        failure.push_str("`AssertionError: CUDA_HOME is not set`");
        outcome = outcome.evidence("build.tools.nvcc");
    }
    if rustc_absent {
        if nvcc_absent {
            tools.push_str(" and ");
            failure.push_str(" and ");
        }
        tools.push_str(
            "no Rust toolchain (rustc), which setuptools-rust needs for the vllm-rs module",
        );
        failure.push_str("`ModuleNotFoundError: No module named 'setuptools_rust'`");
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
