//! What a manifest says of a rule that explains a log: the check's
//! outcome for it, and the finding to show either way.

use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::{CheckResponse, Finding};

/// A ranked rule's outcome on the manifest that came with the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The manifest has the breakage: its finding, values filled in.
    Matched(Finding),
    /// The rule needs these fields to decide.
    Undetermined(Vec<String>),
    /// The rule failed on the manifest.
    Error(String),
    /// The manifest does not have the breakage (or the rule does not apply
    /// to it at all).
    Clear,
}

impl Outcome {
    /// The rule's outcome in `check`.
    pub fn of(check: &CheckResponse, rule_id: &str) -> Outcome {
        if let Some(f) = check.findings.iter().find(|f| f.rule_id() == rule_id) {
            return Outcome::Matched(f.finding().clone());
        }
        if let Some(u) = check.undetermined.iter().find(|u| u.rule_id == rule_id) {
            return Outcome::Undetermined(u.missing.clone());
        }
        if let Some(e) = check.rule_errors.iter().find(|e| e.rule_id == rule_id) {
            return Outcome::Error(e.error.clone());
        }
        Outcome::Clear
    }

    /// Its wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Matched(_) => "matched",
            Outcome::Undetermined(_) => "undetermined",
            Outcome::Error(_) => "error",
            Outcome::Clear => "clear",
        }
    }

    /// Its place in a ranking: a rule the manifest matches explains the
    /// log better than one it may match, and that better than one it
    /// clears.
    pub fn rank(&self) -> u8 {
        match self {
            Outcome::Matched(_) => 0,
            Outcome::Undetermined(_) | Outcome::Error(_) => 1,
            Outcome::Clear => 2,
        }
    }
}

/// The rule's finding as no manifest has filled it: its summary as the
/// message, its remedies as written.
pub fn general_finding(meta: &RuleMeta) -> Finding {
    Finding {
        rule_id: meta.id.clone(),
        rule_version: meta.version.clone(),
        severity: meta.severity,
        title: meta.title.clone(),
        message: meta.summary.clone(),
        error_signatures: meta.error_signatures.iter().map(|s| s.template.clone()).collect(),
        remedies: meta.remedies.clone(),
        evidence: Vec::new(),
        references: meta.references.clone(),
    }
}
