//! Which of the engine's speed-ups are on: all of them, unless a benchmark
//! turns one off to price it (`pitfall-bench --ablate`). Each switch's off
//! state is the plain way of doing the same work, so a check answers the
//! same with any of them off (`--test memo`).
//!
//! Two more are [`crate::Limits`]' own: `memo_bytes: 0` (every candidate
//! in the sandbox) and `reuse_instances: false` (a new instance per
//! evaluation); the per-thread cache of parsed specifiers is the
//! contract's (`pitfall_contract::session::set_specifier_cache`).

/// The engine's switchable speed-ups; [`Tuning::default`] has all on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// A memo replay skips the keys whose fingerprint differs from the
    /// field's (`memo_image`); off, it compares every key of a node.
    pub memo_fingerprints: bool,
    /// A rule's memo image is rewritten with each node's branches in one
    /// block now and then (`memo_image::compact`); off, they stay a chain.
    pub memo_compaction: bool,
    /// Candidates are admitted by their selectors compiled into integer
    /// tests (`gate.rs`); off, by the selectors themselves.
    pub gates: bool,
    /// The index keeps a bucket's version ranges in an interval tree
    /// (`interval.rs`); off, it scans them one by one.
    pub interval_tree: bool,
    /// The interval tree is also laid out over packed integer keys; off,
    /// a stab walks its nodes of `Version`s.
    pub packed_tree: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            memo_fingerprints: true,
            memo_compaction: true,
            gates: true,
            interval_tree: true,
            packed_tree: true,
        }
    }
}
