//! # pitfall-server
//!
//! The registry: the v1 HTTP API over the store (SQLite or PostgreSQL)
//! and the engine. Invariant: the only crate that knows HTTP and SQL;
//! everything about running rules goes through the engine, and what is
//! served is exactly the approved versions in the store.

mod access_log;
mod admission;
pub mod allocator;
pub mod answer;
pub mod api;
mod app;
pub mod as_of;
pub mod auth;
pub mod bundle;
pub mod config;
pub mod config_file;
mod error;
pub mod extract;
pub mod key_file;
pub mod listen;
pub mod manifest;
pub mod metrics;
pub mod modules;
pub mod openapi;
pub mod probe;
pub mod publish;
pub mod rate_limit;
pub mod registry;
pub mod result_cache;
pub mod runtime;
pub mod secret_box;
pub mod secret_key;
pub mod server;
pub mod signing;
mod state;
pub mod store;
pub mod watch;
pub mod web;

pub use app::app;
pub use config::{Config, LogFormat, ServerLimits};
pub use error::AppError;
pub use registry::Registry;
pub use state::AppState;
