//! What a manifest says of a rule that explains a log: the check's
//! outcome for it, the finding to show either way, and the ranked causes
//! as `POST /v1/explain` and `pitfall explain` answer them.

use pitfall_api::types::{ExplainedCause, ExplainedHole};
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::{CheckResponse, Finding};

use crate::Cause;

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

/// The causes as the API answers them: each with its outcome on `check`
/// (when a manifest came with the log) and the finding to show, a matched
/// rule first, then undetermined or failed ones, then cleared ones, the
/// explainer's order kept within each. `meta_of` gives the rule of a
/// cause's [`Cause::rule`] position.
pub fn explained_causes<'m>(
    causes: &[Cause],
    meta_of: impl Fn(usize) -> &'m RuleMeta,
    check: Option<&CheckResponse>,
) -> Vec<ExplainedCause> {
    let mut ranked: Vec<(u8, ExplainedCause)> = causes
        .iter()
        .map(|cause| {
            let outcome = check.map(|c| Outcome::of(c, &cause.rule_id));
            let (finding, missing) = match &outcome {
                Some(Outcome::Matched(f)) => (f.clone(), Vec::new()),
                Some(Outcome::Undetermined(m)) => (general_finding(meta_of(cause.rule)), m.clone()),
                _ => (general_finding(meta_of(cause.rule)), Vec::new()),
            };
            let explained = ExplainedCause {
                rule_id: cause.rule_id.clone(),
                // Four decimals: enough to rank, short on the wire.
                score: (cause.score * 10_000.0).round() / 10_000.0,
                signature: cause.signature.clone(),
                matched: cause.filled.clone(),
                holes: cause
                    .holes
                    .iter()
                    .map(|(kind, value)| ExplainedHole {
                        kind: (*kind).to_owned(),
                        value: value.clone(),
                    })
                    .collect(),
                lines: cause.lines.clone(),
                line: cause.line_text.clone(),
                described: cause.described,
                outcome: outcome.as_ref().map(|o| o.name().to_owned()),
                missing,
                finding,
            };
            (outcome.as_ref().map_or(0, Outcome::rank), explained)
        })
        .collect();
    // Stable: the explainer's order within each outcome.
    ranked.sort_by_key(|(rank, _)| *rank);
    ranked.into_iter().map(|(_, cause)| cause).collect()
}
