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
mod macros;
pub mod outcome;
pub mod p2p;
pub mod text;
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

    /// Copies a byte string into an array at compile time (for the custom
    /// sections: a static initialised this way holds no reference to the
    /// original bytes, so they are not also emitted as data).
    pub const fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
        let mut out = [0u8; N];
        let mut i = 0;
        while i < N {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }

    /// Runs a rule's evaluate function and returns the ABI code.
    pub fn run<R: IntoOutcome>(evaluate: fn(&Manifest) -> R) -> i32 {
        static MANIFEST: Manifest = Manifest::__new();
        evaluate(&MANIFEST).into_outcome().code()
    }
}
