//! # pitfall-api
//!
//! The HTTP API v1 on the wire, once for both ends: the request and answer
//! types the server serialises and the client deserialises ([`types`]; the
//! check answer itself is the contract's [`CheckResponse`], the fix answer
//! [`fix::FixResponse`]), the JSON Schemas of the CLI's `--format json`
//! outputs that the server publishes ([`schemas`]), and the signed rule
//! bundle that `GET /v1/bundle` serves and `pitfall bundle pull` verifies
//! ([`bundle`], [`key`]).
//!
//! Invariant: no I/O and no HTTP stack here, only shapes and the bundle's
//! bytes; a change to a type is a change to the contract.

pub mod bundle;
pub mod fix;
pub mod key;
pub mod schemas;
pub mod types;
pub mod watch;

pub use bundle::{Bundle, BundleError, BundleIndex, BundleSigner, Freshness, SignedBundle};
pub use key::PublicKey;
pub use pitfall_contract::report::CheckResponse;

/// Stands for a secret in `Debug` output: tokens never reach a log line or
/// a panic message through a derived `Debug`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `Some(<redacted>)` or `None`: whether a secret is there, never what it is.
pub fn redacted<T>(secret: &Option<T>) -> Option<Redacted> {
    secret.as_ref().map(|_| Redacted)
}
