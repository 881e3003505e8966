//! # pitfall-engine
//!
//! The wasmtime host of Pitfall: it loads rule modules (checking size,
//! ABI, imports, exports, metadata; compiling with a time bound; caching
//! compiled code it produced itself), indexes them by their `applies_to`
//! selectors, and evaluates them against manifests, each evaluation
//! limited and from a fresh instance's state (a new instance, or the same
//! rule's last one reset, `reset.rs`).
//!
//! Invariant: a rule can never crash or stall the host, and never sees
//! anything but the manifest; a failing rule becomes that rule's entry in
//! `rule_errors` and changes nothing else. The engine knows nothing of HTTP
//! or SQL.

pub mod abi;
mod cache;
pub mod check;
pub mod engine;
pub mod error;
mod gate;
pub mod guest;
mod host;
pub mod index;
pub mod inspect;
mod interval;
pub mod limits;
pub mod memo;
mod memo_image;
mod observe;
mod render;
mod reset;
pub mod rule;
mod tuning;

pub use check::RuleSet;
pub use engine::{CheckGuard, Engine, Evaluator, InstanceStats, Sandboxed};
pub use error::{EngineError, LoadError, PastDeadline};
pub use inspect::ModuleInfo;
pub use limits::Limits;
pub use memo::MemoStats;
pub use rule::Rule;
pub use tuning::Tuning;
