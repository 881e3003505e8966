//! A loaded rule: its metadata and cases, its digest, and the pre-linked
//! module that each evaluation instantiates afresh. The module is linked
//! at load ([`crate::Engine::load`]) or on first use
//! ([`crate::Engine::load_deferred`]): a registry of thousands of rules
//! starts on their metadata and compiles each when it is first a
//! candidate, or when a background warm-up gets to it.

use std::sync::{Arc, Mutex, OnceLock};

use pitfall_contract::meta::RuleMeta;
use pitfall_contract::selector::Selector;
use wasmtime::{InstancePre, ModuleExport};

use crate::error::LoadError;
use crate::host::HostState;
use crate::inspect::ModuleInfo;
use crate::memo::Memo;
use crate::reset::ResetPlan;

/// A rule ready to evaluate.
///
/// Laid out for a check, which touches each candidate once among
/// thousands of rules, out of the caches: its selectors (the list's
/// header) and its memo (the lock and the image a replay reads) come
/// first, on the rule's first cache line, so admitting and replaying a
/// candidate costs one line of the rule, not two.
#[repr(C, align(64))]
pub struct Rule {
    /// The parsed `applies_to` selectors.
    pub selectors: Vec<Selector>,
    /// Its evaluations by what it read (`crate::memo`).
    pub(crate) memo: Memo,
    /// What the module says about itself.
    pub info: ModuleInfo,
    /// The sha256 of the module's bytes, in hex.
    pub sha256: String,
    /// The module's size in bytes.
    pub size: usize,
    /// The module, linked at most once (an error is kept, not retried:
    /// the same bytes fail the same way).
    pub(crate) linked: OnceLock<Result<Linked, String>>,
    /// The bytes, until linked (a deferred rule compiles from them).
    pub(crate) bytes: Mutex<Option<Arc<[u8]>>>,
}

/// A module pre-linked against the host, with its two exports resolved.
pub(crate) struct Linked {
    pub(crate) pre: InstancePre<HostState>,
    pub(crate) evaluate_export: ModuleExport,
    pub(crate) memory_export: ModuleExport,
    /// How an instance is returned to its fresh state, when it can be
    /// (`crate::reset`): then an evaluator reuses one instance for the
    /// rule's evaluations instead of instantiating it for each.
    pub(crate) reset: Option<ResetPlan>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("id", &self.info.meta.id)
            .field("version", &self.info.meta.version)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl Rule {
    pub(crate) fn new(info: ModuleInfo, sha256: String, size: usize) -> Result<Rule, LoadError> {
        let selectors = info
            .meta
            .applies_to
            .iter()
            .map(|s| Selector::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LoadError::Metadata(format!("applies_to: {e}")))?;
        Ok(Rule {
            info,
            sha256,
            size,
            selectors,
            linked: OnceLock::new(),
            bytes: Mutex::new(None),
            memo: Memo::default(),
        })
    }

    /// Whether the module is compiled and linked (or failed to be).
    pub fn is_linked(&self) -> bool {
        self.linked.get().is_some()
    }

    /// The rule's metadata.
    pub fn meta(&self) -> &RuleMeta {
        &self.info.meta
    }

    /// The rule's id.
    pub fn id(&self) -> &str {
        &self.info.meta.id
    }

    /// The rule's embedded test cases.
    pub fn tests(&self) -> &[pitfall_contract::meta::TestCase] {
        &self.info.tests
    }
}
