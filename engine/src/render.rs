//! A rule's raw output turned into its finding: shared by a fresh
//! evaluation (`engine.rs`) and a replay from the memo (`memo.rs`), so the
//! two render alike and neither imports the other.

use pitfall_contract::cases::Evaluation;
use pitfall_contract::fields::FieldMap;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::render;
use pitfall_contract::session::RawOutput;

/// A matched rule's output rendered into its finding (also what the memo
/// does when a recorded output's evidence differs on a new manifest).
pub(crate) fn rendered(meta: &RuleMeta, raw: &RawOutput, fields: &FieldMap) -> Evaluation {
    match render(meta, raw, fields) {
        Ok(finding) => Evaluation::Matched(Box::new(finding.into())),
        // The rule ran but its output is malformed: its own error,
        // not the host's (the inner of the two failure levels).
        Err(e) => Evaluation::Failed(format!("malformed output: {e}")),
    }
}
