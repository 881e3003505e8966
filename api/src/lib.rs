//! # pitfall-api
//!
//! The HTTP API v1 on the wire, once for both ends: the request and answer
//! types the server serialises and the client deserialises ([`types`]; the
//! check answer itself is the SDK's [`CheckResponse`]), and the signed rule
//! bundle that `GET /v1/bundle` serves and `pitfall bundle pull` verifies
//! ([`bundle`], [`key`]).
//!
//! Invariant: no I/O and no HTTP stack here, only shapes and the bundle's
//! bytes; a change to a type is a change to the contract.

pub mod bundle;
pub mod key;
pub mod types;

pub use bundle::{Bundle, BundleError, BundleIndex, BundleSigner, Freshness, SignedBundle};
pub use key::PublicKey;
pub use pitfall_contract::report::CheckResponse;
