//! Building SGLang from source needs a Rust toolchain from 0.5.11: the
//! `sglang` wheel carries a PyO3 extension (`sglang/srt/grpc/_core`, the
//! `rust/sglang-grpc` crate, PR 22736) built by setuptools-rust, which stops
//! with "error: can't find Rust compiler" without `rustc`/`cargo`. 0.5.10.post1
//! is the last release built without Rust (its sdist's build-system needs
//! setuptools, setuptools-scm and wheel only; py3-none-any wheel), and 0.5.11
//! is the first with platform wheels and no sdist.
//!
//! Only a build from source (`build.from_source` lists `sglang`) is judged;
//! the tool is `build.tools.rustc`.
#![no_std]

use pitfall_sdk::prelude::*;

/// Releases whose build compiles the Rust extension (development builds of
/// 0.5.11 included).
const NEEDS_RUST: &str = ">=0.5.11.dev0";
const RUSTC: &str = "build.tools.rustc";

fn evaluate(m: &Manifest) -> Outcome {
    if !m.built_from_source("sglang") {
        return Outcome::clear();
    }
    // Listed in `build.from_source` only: the selector `package:sglang`
    // promises clear.
    let Some(sglang) = m.package("sglang") else {
        return Outcome::clear();
    };
    match sglang.need_version_in(NEEDS_RUST) {
        Ok(true) => {}
        Ok(false) => return Outcome::clear(),
        Err(outcome) => return outcome,
    }
    match m.build_tool("rustc") {
        None => Outcome::needs(RUSTC),
        Some(Some(_)) => Outcome::clear(),
        Some(None) => Outcome::matched()
            .evidence("build.from_source")
            .evidence(RUSTC)
            .evidence(sglang.version_path().as_str())
            .param_field("sglang", sglang.version_path().as_str()),
    }
}

pitfall_sdk::export_rule!(evaluate);
