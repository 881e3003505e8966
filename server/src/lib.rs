//! # pitfall-server
//!
//! The registry's HTTP side. Invariant: the only crate that knows HTTP (and,
//! with the registry issue, SQL); everything about rules goes through the
//! engine.

mod app;
mod config;
mod error;
pub mod store;

pub use app::{AppState, app};
pub use config::Config;
pub use error::AppError;
