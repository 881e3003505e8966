//! # pitfall-client
//!
//! A typed client of the Pitfall registry's HTTP API v1, for the `pitfall`
//! CLI and any Rust provisioning tool: checks (one, a batch, or a fleet in
//! batches that fit the server's limits), explain a log, fix a manifest
//! (the nearest configuration that passes), rule search and details, module
//! bytes, publish, review (approve, reject, yank), whoami, and the signed
//! bundle with conditional fetch.
//!
//! ```no_run
//! let client = pitfall_client::Client::new("http://127.0.0.1:8080")?;
//! let manifest = pitfall_contract::parse_manifest(br#"{"manifest_version": 1}"#).expect("manifest");
//! let answer = client.check(&manifest)?;
//! println!("{} finding(s) from ruleset {}", answer.findings.len(), answer.ruleset_revision);
//! # Ok::<(), pitfall_client::Error>(())
//! ```
//!
//! Design: blocking (the CLI has no async runtime and makes one request at
//! a time), on ureq with rustls for https; connect and total timeouts per
//! try; retries with exponential backoff and jitter on connection failures,
//! timeouts, 5xx and 429, honouring `Retry-After`, but a write (publish,
//! review) only when the first try provably did nothing ([`retry`]).
//! Errors carry the server's envelope (`code`, `message`, `step`). The
//! wire types are `pitfall-api`'s, the same the server serialises.
//!
//! Invariant: every request is bounded in time and in the bytes read, and
//! no write is ever sent twice unless the first provably did nothing.

mod client;
mod error;
pub mod retry;
mod transport;

pub use client::{
    BundleFetch, Client, ClientBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_BINARY_BYTES,
    DEFAULT_MAX_JSON_BYTES, DEFAULT_TIMEOUT, Progress,
};
pub use error::{Error, TransportKind};
pub use pitfall_api as api;
pub use retry::RetryPolicy;
