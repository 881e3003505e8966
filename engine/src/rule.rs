//! A loaded rule: its metadata and cases, its digest, and the pre-linked
//! module that each evaluation instantiates afresh.

use pitfall_sdk::model::meta::RuleMeta;
use pitfall_sdk::model::selector::Selector;
use wasmtime::{InstancePre, ModuleExport};

use crate::error::LoadError;
use crate::host::HostState;
use crate::inspect::ModuleInfo;

/// A rule ready to evaluate.
pub struct Rule {
    /// What the module says about itself.
    pub info: ModuleInfo,
    /// The sha256 of the module's bytes, in hex.
    pub sha256: String,
    /// The module's size in bytes.
    pub size: usize,
    /// The parsed `applies_to` selectors.
    pub selectors: Vec<Selector>,
    pub(crate) pre: InstancePre<HostState>,
    pub(crate) evaluate_export: ModuleExport,
    pub(crate) memory_export: ModuleExport,
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
    pub(crate) fn new(
        info: ModuleInfo,
        sha256: String,
        size: usize,
        pre: InstancePre<HostState>,
        evaluate_export: ModuleExport,
        memory_export: ModuleExport,
    ) -> Result<Rule, LoadError> {
        let selectors = info
            .meta
            .applies_to
            .iter()
            .map(|s| Selector::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| LoadError::Metadata(format!("applies_to: {e}")))?;
        Ok(Rule { info, sha256, size, selectors, pre, evaluate_export, memory_export })
    }

    /// The rule's metadata.
    pub fn meta(&self) -> &RuleMeta {
        &self.info.meta
    }

    /// The rule's id.
    pub fn id(&self) -> &str {
        &self.info.meta.id
    }
}
