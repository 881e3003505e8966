//! The engine's speed-ups, each turned off in turn (`--ablate`): what an
//! engine and its rule sets are built with when one is off. Each off
//! state is the plain way of doing the same work (`pitfall_engine::Tuning`),
//! so the figures beside the all-on engine's are what the mechanism buys.

use pitfall_engine::{Limits, Tuning};

/// A mechanism that `--ablate` turns off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// The memo of evaluations (`memo_bytes: 0`: every candidate in the sandbox).
    Memo,
    /// Fingerprint tables in the memo's images.
    MemoFingerprints,
    /// Rewriting a memo image's chains of blocks into one block per node.
    MemoCompaction,
    /// Selectors compiled into integer tests.
    Gates,
    /// The index's interval trees (off: a linear scan of a bucket's ranges).
    IntervalTree,
    /// The trees' packed integer layout (off: the nodes of `Version`s).
    PackedTree,
    /// The per-thread cache of parsed specifiers.
    SpecifierCache,
    /// A rule's instance reset and reused within an evaluator.
    InstanceReuse,
}

impl Mechanism {
    /// Every mechanism `--ablate` prices, in the order it runs them.
    pub const ALL: [Mechanism; 8] = [
        Mechanism::Memo,
        Mechanism::MemoFingerprints,
        Mechanism::MemoCompaction,
        Mechanism::Gates,
        Mechanism::IntervalTree,
        Mechanism::PackedTree,
        Mechanism::SpecifierCache,
        Mechanism::InstanceReuse,
    ];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Memo => "memo",
            Mechanism::MemoFingerprints => "memo_fingerprints",
            Mechanism::MemoCompaction => "memo_compaction",
            Mechanism::Gates => "gates",
            Mechanism::IntervalTree => "interval_tree",
            Mechanism::PackedTree => "packed_tree",
            Mechanism::SpecifierCache => "specifier_cache",
            Mechanism::InstanceReuse => "instance_reuse",
        }
    }

    /// The mechanism of that name.
    pub fn parse(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What an engine is built with: everything on but `off`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration {
    /// The engine's limits (the memo's budget, instance reuse).
    pub limits: Limits,
    /// The engine's and its rule sets' tuning.
    pub tuning: Tuning,
    /// Whether the contract's specifier cache is on (process-wide).
    pub specifier_cache: bool,
}

impl Configuration {
    /// Every mechanism on but those in `off`.
    pub fn without(off: &[Mechanism]) -> Configuration {
        let mut c = Configuration {
            limits: Limits::default(),
            tuning: Tuning::default(),
            specifier_cache: true,
        };
        for m in off {
            match m {
                Mechanism::Memo => c.limits.memo_bytes = 0,
                Mechanism::MemoFingerprints => c.tuning.memo_fingerprints = false,
                Mechanism::MemoCompaction => c.tuning.memo_compaction = false,
                Mechanism::Gates => c.tuning.gates = false,
                Mechanism::IntervalTree => c.tuning.interval_tree = false,
                Mechanism::PackedTree => c.tuning.packed_tree = false,
                Mechanism::SpecifierCache => c.specifier_cache = false,
                Mechanism::InstanceReuse => c.limits.reuse_instances = false,
            }
        }
        c
    }

    /// Sets what is process-wide (the specifier cache) as this configuration has it.
    pub fn apply_process_wide(&self) {
        pitfall_contract::session::set_specifier_cache(self.specifier_cache);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each mechanism changes exactly one thing, and its name reads back.
    #[test]
    fn each_mechanism_turns_one_thing_off() {
        let on = Configuration::without(&[]);
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::parse(m.name()), Some(m));
            let off = Configuration::without(&[m]);
            let changed = usize::from(off.limits != on.limits)
                + [
                    off.tuning.memo_fingerprints != on.tuning.memo_fingerprints,
                    off.tuning.memo_compaction != on.tuning.memo_compaction,
                    off.tuning.gates != on.tuning.gates,
                    off.tuning.interval_tree != on.tuning.interval_tree,
                    off.tuning.packed_tree != on.tuning.packed_tree,
                    off.specifier_cache != on.specifier_cache,
                ]
                .into_iter()
                .filter(|&c| c)
                .count();
            assert_eq!(changed, 1, "{}", m.name());
        }
        assert_eq!(Mechanism::parse("nothing"), None);
    }
}
