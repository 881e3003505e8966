//! cargo-fuzz target `abi_output`: see `../targets.rs` and `../README.md`.
#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::abi_output(data));
