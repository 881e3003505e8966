//! nvcc rejects host GCC releases newer than it supports (crt/host_config.h:
//! "unsupported GNU version! gcc versions later than N are not supported!").
//! N per nvcc release read from NVIDIA's nvcc/crt wheels on PyPI
//! (KNOWLEDGE.md D15; NVlabs/instant-ngp issue 1562).
#![no_std]

use pitfall_sdk::prelude::*;

/// The newest GCC major an nvcc `major.minor` accepts; `None` outside the
/// releases read (11.x, 12.7, 13.3+).
fn max_gcc(major: u64, minor: u64) -> Option<u64> {
    match (major, minor) {
        (12, 0..=3) => Some(12),
        (12, 4..=6) => Some(13),
        (12, 8..=9) => Some(14),
        (13, 0..=2) => Some(15),
        _ => None,
    }
}

/// The first nvcc release that accepts a GCC major.
fn nvcc_for_gcc(gcc_major: u64) -> Option<&'static str> {
    match gcc_major {
        13 => Some("12.4"),
        14 => Some("12.8"),
        15 => Some("13.0"),
        _ => None,
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    // No nvcc (absent or not listed): nothing compiles CUDA here.
    let Some(Some(nvcc)) = m.build_tool("nvcc") else {
        return Outcome::clear();
    };
    let Ok(nvcc) = Dotted::parse(&nvcc) else {
        return Outcome::needs("build.tools.nvcc");
    };
    let Some(max) = max_gcc(nvcc.major(), nvcc.minor()) else {
        return Outcome::clear();
    };
    let gcc = match m.build_tool("gcc") {
        None => return Outcome::needs("build.tools.gcc"),
        Some(None) => return Outcome::clear(),
        Some(Some(text)) => text,
    };
    let Ok(gcc_version) = Dotted::parse(&gcc) else {
        return Outcome::needs("build.tools.gcc");
    };
    let gcc_major = gcc_version.major();
    if gcc_major <= max {
        return Outcome::clear();
    }
    let outcome = Outcome::matched()
        .evidence("build.tools.nvcc")
        .evidence("build.tools.gcc")
        .param_field("nvcc", "build.tools.nvcc")
        .param_field("gcc", "build.tools.gcc")
        .param_int("max", max as i64)
        .param_int("gcc_major", gcc_major as i64)
        .remedy(0);
    match nvcc_for_gcc(gcc_major) {
        Some(nvcc_min) => outcome.param("nvcc_min", nvcc_min).remedy(1),
        None => outcome,
    }
}

pitfall_sdk::export_rule!(evaluate);
