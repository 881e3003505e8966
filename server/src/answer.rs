//! A check answer serialised once. The result cache keeps this form and
//! every response is written from it: no deep copy of the findings into
//! the cache, none out of it on a hit, and no second serialisation. Only
//! `stats` is written per response, since its `elapsed_us` is the time of
//! the request being answered, not of the evaluation that filled the cache.
//! The findings are copied in as the text each keeps (`LazyFinding`): one
//! the memo replayed was written once, when its rule's trace was recorded.

use pitfall_contract::enrich::Unresolved;
use pitfall_contract::report::{CheckResponse, CheckStats, Enriched, RuleError, Undetermined};
use serde::Serialize;

/// An answer as JSON text, all but its `stats`.
#[derive(Debug)]
pub struct SerializedAnswer {
    /// The JSON object without `stats` and without its closing brace.
    head: String,
    stats: CheckStats,
}

/// `CheckResponse` without `findings` (written first, from their text)
/// and `stats`, borrowed: the rest of the head. The round-trip test below
/// fails if `CheckResponse` gains a field this lacks.
#[derive(Serialize)]
struct Rest<'a> {
    undetermined: &'a [Undetermined],
    rule_errors: &'a [RuleError],
    ruleset_revision: &'a str,
    #[serde(skip_serializing_if = "<[Enriched]>::is_empty")]
    enriched: &'a [Enriched],
    #[serde(skip_serializing_if = "<[Unresolved]>::is_empty")]
    unresolved: &'a [Unresolved],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    as_of: bool,
}

impl SerializedAnswer {
    /// Serialises `answer` (its `stats` are kept apart).
    pub fn new(answer: &CheckResponse) -> SerializedAnswer {
        let rest = Rest {
            undetermined: &answer.undetermined,
            rule_errors: &answer.rule_errors,
            ruleset_revision: &answer.ruleset_revision,
            enriched: &answer.enriched,
            unresolved: &answer.unresolved,
            as_of: answer.as_of,
        };
        // Serialising plain data into a String cannot fail.
        let rest = serde_json::to_string(&rest).unwrap_or_else(|_| "{}".to_owned());
        // Each finding's text is written once and kept, so asking for it
        // twice (its length, then its bytes) costs nothing more.
        let findings: usize = answer.findings.iter().map(|f| f.json().len() + 1).sum();
        let mut head = String::with_capacity(16 + findings + rest.len());
        head.push_str("{\"findings\":[");
        for (i, finding) in answer.findings.iter().enumerate() {
            if i > 0 {
                head.push(',');
            }
            head.push_str(finding.json());
        }
        head.push(']');
        // The rest's members after the findings, its closing brace left
        // off: `stats` goes before it.
        let members = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).unwrap_or("");
        if !members.is_empty() {
            head.push(',');
            head.push_str(members);
        }
        SerializedAnswer { head, stats: answer.stats }
    }

    /// The answer's JSON with `elapsed_us` set to this request's time.
    pub fn json(&self, elapsed_us: u64) -> String {
        let mut out = String::with_capacity(self.head.len() + 96);
        self.write(elapsed_us, &mut out);
        out
    }

    /// Appends the answer's JSON to `out`.
    pub fn write(&self, elapsed_us: u64, out: &mut String) {
        let stats = CheckStats { elapsed_us, ..self.stats };
        out.push_str(&self.head);
        // The head always holds `findings` and the rest; the check keeps
        // the text one object even if it did not.
        if self.head.len() > 1 {
            out.push(',');
        }
        out.push_str("\"stats\":");
        out.push_str(&serde_json::to_string(&stats).unwrap_or_else(|_| "{}".to_owned()));
        out.push('}');
    }

    /// What it costs to keep: its text and its allocation's bookkeeping.
    pub fn weight(&self) -> usize {
        self.head.capacity() + std::mem::size_of::<SerializedAnswer>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_contract::meta::Severity;
    use pitfall_contract::report::{Evidence, EvidenceSource, LazyFinding, Unreadable};

    fn answer() -> CheckResponse {
        let finding: pitfall_contract::report::Finding =
            serde_json::from_value(serde_json::json!({
                "rule_id": "demo-rule", "rule_version": "1.0.0", "severity": "error",
                "title": "t", "message": "m", "error_signatures": ["E \"quoted\""],
                "evidence": [], "remedies": [], "references": []
            }))
            .unwrap_or_else(|e| panic!("finding: {e}"));
        CheckResponse {
            // One as the sandbox gives it, one as the memo replays it.
            findings: vec![
                finding.clone().into(),
                LazyFinding::from_json(
                    Severity::Error,
                    "demo-rule".into(),
                    LazyFinding::new(finding).json().clone(),
                ),
            ],
            undetermined: vec![Undetermined {
                rule_id: "u".into(),
                missing: vec!["host.arch".into()],
                unreadable: vec![Unreadable {
                    path: "packages.numpy.version".into(),
                    value: "banana".into(),
                    reason: "not a PEP 440 version".into(),
                }],
            }],
            rule_errors: vec![RuleError { rule_id: "e".into(), error: "trap".into() }],
            ruleset_revision: "42".into(),
            stats: CheckStats { rules_total: 10, rules_evaluated: 3, elapsed_us: 999 },
            enriched: vec![Enriched {
                evidence: Evidence {
                    path: "accelerators.0.compute_capability".into(),
                    value: serde_json::json!("8.6"),
                    source: EvidenceSource::Enriched,
                },
                table: "gpus".into(),
                key: "RTX A6000".into(),
                reference: "https://developer.nvidia.com/cuda-gpus".into(),
            }],
            unresolved: vec![Unresolved {
                path: "workload.model".into(),
                value: "org/unknown".into(),
                table: "models".into(),
                reason: "not in the model table".into(),
            }],
            as_of: true,
        }
    }

    #[test]
    fn the_text_reads_back_as_the_answer_with_this_requests_time() {
        let original = answer();
        assert_eq!(original.findings[0].severity, Severity::Error);
        let serialized = SerializedAnswer::new(&original);
        let back: CheckResponse =
            serde_json::from_str(&serialized.json(7)).unwrap_or_else(|e| panic!("json: {e}"));
        let mut expected = original.clone();
        expected.stats.elapsed_us = 7;
        assert_eq!(back, expected);
        assert_eq!(serialized.stats.elapsed_us, 999, "the cached stats keep the evaluation's time");
    }

    #[test]
    fn an_empty_answer_is_still_one_object() {
        let mut empty = answer();
        empty.findings.clear();
        empty.undetermined.clear();
        empty.rule_errors.clear();
        empty.enriched.clear();
        empty.unresolved.clear();
        empty.as_of = false;
        let text = SerializedAnswer::new(&empty).json(1);
        let back: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(back["stats"]["elapsed_us"], 1);
        assert!(back.get("enriched").is_none(), "empty enrichment is left out, as before");
        assert!(back.get("as_of").is_none(), "a live answer carries no as_of");
    }
}
