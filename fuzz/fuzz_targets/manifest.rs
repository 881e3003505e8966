//! cargo-fuzz target `manifest`: see `../targets.rs` and `../README.md`.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::manifest(data));
