//! # pitfall-sdk
//!
//! Write [Pitfall](../README.md) rules: small WebAssembly modules that read
//! a manifest of a machine and its ML stack and report a known breakage.
//!
//! - [`view::Manifest`]: the typed manifest view (packages by name,
//!   accelerators, drivers, container, workload, env, build);
//! - [`Outcome`]: clear, matched (with evidence, parameters, remedies) or
//!   undetermined (with the missing fields);
//! - [`floor`]: the finding of a GPU below a quantization's compute
//!   capability floor;
//! - [`image`]: container image references, the release an image's tag
//!   names;
//! - [`torch_cuda`]: the CUDA release a torch build was made for;
//! - [`version`]: PEP 440, dotted driver/CUDA versions, compute
//!   capabilities, semver;
//! - [`export_rule!`]: exports a rule with its metadata and test cases.
//!
//! On `wasm32` the crate is `no_std` + `alloc` and provides the allocator
//! and panic handler; natively, with the `testing` feature (on by
//! default), it carries the test harness (`testing`) so `cargo test` runs
//! a rule's embedded cases through the host's own semantics. The ABI
//! itself is specified in `sdk/ABI.md`.

#![cfg_attr(target_arch = "wasm32", no_std)]
#![warn(missing_docs)]

extern crate alloc;

pub mod abi;
pub mod cudnn;
pub mod floor;
pub mod image;
mod macros;
pub mod outcome;
pub mod p2p;
pub mod text;
pub mod torch_cuda;
pub mod view;

/// Versions: PEP 440, dotted, compute capability, semver, specifiers
/// (the `pitfall-version` crate, which the host shares).
pub use pitfall_version as version;

#[cfg(target_arch = "wasm32")]
mod wasm_rt;

#[cfg(all(feature = "testing", not(target_arch = "wasm32")))]
pub mod testing;

pub use outcome::{IntoOutcome, Outcome};
pub use view::Manifest;

/// Everything a rule usually needs.
pub mod prelude {
    pub use crate::floor::below_capability_floor;
    pub use crate::outcome::{IntoOutcome, Outcome};
    pub use crate::text::CapabilityText;
    pub use crate::version::{
        ArchEntry, ComputeCapability, Dotted, Version, dotted_ge, dotted_lt, pep440_ge, pep440_lt,
    };
    pub use crate::view::{
        Accelerator, ArchList, ContainerShm, Manifest, Package, Path, Unanswered, Workload,
    };
    pub use alloc::string::String;
    pub use alloc::vec::Vec;
}

#[doc(hidden)]
pub mod __private {
    use crate::outcome::IntoOutcome;
    use crate::view::Manifest;

    /// Whether byte `i` of `json` is a blank outside its strings: the
    /// indentation and line ends an author's `rule.json` and `tests.json`
    /// carry, which the custom sections need not (a quarter of a
    /// pretty-printed `tests.json`, embedded in every module).
    const fn blank_outside_strings(json: &[u8], i: usize, in_string: bool) -> bool {
        !in_string && matches!(json[i], b' ' | b'\t' | b'\n' | b'\r')
    }

    /// Where the string state stands after byte `i`: `(in_string,
    /// escaped)`, given the state before it.
    const fn step(json: &[u8], i: usize, in_string: bool, escaped: bool) -> (bool, bool) {
        match (in_string, escaped, json[i]) {
            (true, true, _) => (true, false),
            (true, false, b'\\') => (true, true),
            (true, false, b'"') => (false, false),
            (false, _, b'"') => (true, false),
            (state, _, _) => (state, false),
        }
    }

    /// The length of `json` without its blanks outside strings.
    pub const fn compact_len(json: &[u8]) -> usize {
        let (mut i, mut n, mut in_string, mut escaped) = (0, 0, false, false);
        while i < json.len() {
            if !blank_outside_strings(json, i, in_string) {
                n += 1;
            }
            (in_string, escaped) = step(json, i, in_string, escaped);
            i += 1;
        }
        n
    }

    /// `json` without its blanks outside strings, at compile time (`N` is
    /// [`compact_len`]); the same JSON value.
    pub const fn compact<const N: usize>(json: &[u8]) -> [u8; N] {
        let mut out = [0u8; N];
        let (mut i, mut n, mut in_string, mut escaped) = (0, 0, false, false);
        while i < json.len() {
            if !blank_outside_strings(json, i, in_string) {
                out[n] = json[i];
                n += 1;
            }
            (in_string, escaped) = step(json, i, in_string, escaped);
            i += 1;
        }
        out
    }

    /// Runs a rule's evaluate function and returns the ABI code.
    pub fn run<R: IntoOutcome>(evaluate: fn(&Manifest) -> R) -> i32 {
        static MANIFEST: Manifest = Manifest::__new();
        evaluate(&MANIFEST).into_outcome().code()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn compact_drops_blanks_outside_strings_only() {
            const JSON: &[u8] =
                b"{\n  \"a b\": [1, 2],\n  \"q\": \"x \\\" y\\\\\", \"t\": \"\\t \"\n}\n";
            let out: [u8; compact_len(JSON)] = compact(JSON);
            assert_eq!(&out[..], &b"{\"a b\":[1,2],\"q\":\"x \\\" y\\\\\",\"t\":\"\\t \"}"[..]);
        }
    }
}
