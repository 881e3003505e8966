//! A finding as a check's answer carries it: the finding, its JSON text,
//! or both, each made from the other the first time it is asked for. A
//! check replays most of its findings from the memo (`pitfall-engine`'s
//! `memo`), which keeps each as the text it was written as once; copying
//! the finding's parts out of the leaf and the rule's metadata, then
//! writing them as JSON again for every answer, was a tenth of a loaded
//! server's check. A replayed finding is now its shared text, which the
//! server copies into the answer; a caller that reads its fields (the CLI,
//! the web page, tests) has it parsed, once, for that answer alone.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Finding;
use crate::meta::Severity;

/// A [`Finding`] that reads as one, kept as the finding, its JSON text, or
/// both. What a check sorts by (severity, rule id) is kept apart for one
/// that came as text, so sorting never needs it parsed.
pub struct LazyFinding {
    severity: Severity,
    /// Empty for one made from a finding, which has its own.
    rule_id: String,
    finding: OnceLock<Finding>,
    json: OnceLock<Arc<str>>,
}

impl LazyFinding {
    /// A finding, its text still to be written.
    pub fn new(finding: Finding) -> LazyFinding {
        LazyFinding {
            severity: finding.severity,
            rule_id: String::new(),
            finding: OnceLock::from(finding),
            json: OnceLock::new(),
        }
    }

    /// A finding known by its text: `json` must be what [`LazyFinding::json`]
    /// gave for a finding of this severity and rule id.
    pub fn from_json(severity: Severity, rule_id: String, json: Arc<str>) -> LazyFinding {
        LazyFinding { severity, rule_id, finding: OnceLock::new(), json: OnceLock::from(json) }
    }

    /// The finding as JSON, as `serde_json::to_string` writes it; written
    /// once, then shared.
    pub fn json(&self) -> &Arc<str> {
        self.json.get_or_init(|| {
            // Plain data always serialises.
            serde_json::to_string(self.finding()).unwrap_or_else(|_| "null".to_owned()).into()
        })
    }

    /// How bad it is.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The rule that reported it.
    pub fn rule_id(&self) -> &str {
        match self.finding.get() {
            Some(finding) => &finding.rule_id,
            None => &self.rule_id,
        }
    }

    /// The finding, read from its text the first time if it came as text.
    pub fn finding(&self) -> &Finding {
        self.finding.get_or_init(|| {
            let text = self.json.get().map_or("", |t| &t[..]);
            serde_json::from_str(text)
                .unwrap_or_else(|e| unreadable(&self.rule_id, self.severity, &e))
        })
    }

    /// The finding, taken out.
    pub fn into_finding(self) -> Finding {
        self.finding();
        let (rule_id, severity) = (self.rule_id, self.severity);
        self.finding.into_inner().unwrap_or_else(|| unreadable(&rule_id, severity, &"no finding"))
    }
}

/// A finding whose text does not read back. `from_json` is only given
/// text `json` wrote, so this is a bug; it is reported in the finding's
/// place rather than taking the process down.
fn unreadable(rule_id: &str, severity: Severity, error: &dyn fmt::Display) -> Finding {
    Finding {
        rule_id: rule_id.to_owned(),
        rule_version: String::new(),
        severity,
        title: "internal: a kept finding did not read back".to_owned(),
        message: format!("internal: the kept text of this finding did not read back: {error}"),
        error_signatures: Vec::new(),
        remedies: Vec::new(),
        evidence: Vec::new(),
        references: Vec::new(),
    }
}

impl From<Finding> for LazyFinding {
    fn from(finding: Finding) -> LazyFinding {
        LazyFinding::new(finding)
    }
}

impl Deref for LazyFinding {
    type Target = Finding;

    fn deref(&self) -> &Finding {
        self.finding()
    }
}

impl Clone for LazyFinding {
    fn clone(&self) -> LazyFinding {
        LazyFinding {
            severity: self.severity,
            rule_id: self.rule_id.clone(),
            finding: self.finding.clone(),
            json: self.json.clone(),
        }
    }
}

impl PartialEq for LazyFinding {
    fn eq(&self, other: &LazyFinding) -> bool {
        self.finding() == other.finding()
    }
}

impl fmt::Debug for LazyFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.finding().fmt(f)
    }
}

/// Serialises as the finding (any format, read from its text if it came
/// as text); writers of JSON that want the kept text ask for it
/// ([`LazyFinding::json`]), as the server's answers do.
impl Serialize for LazyFinding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.finding().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LazyFinding {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Finding::deserialize(deserializer).map(LazyFinding::new)
    }
}

impl JsonSchema for LazyFinding {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Finding::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        Finding::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Finding::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding() -> Finding {
        serde_json::from_value(serde_json::json!({
            "rule_id": "demo-rule", "rule_version": "1.0.0", "severity": "warning",
            "title": "t", "message": "m \"quoted\"", "error_signatures": ["E"],
            "evidence": [{"path": "host.arch", "value": "aarch64", "source": "manifest"}],
            "remedies": [], "references": []
        }))
        .unwrap_or_else(|e| panic!("finding: {e}"))
    }

    #[test]
    fn the_text_is_the_findings_json_and_reads_back_as_it() {
        let lazy = LazyFinding::new(finding());
        let text = lazy.json().clone();
        assert_eq!(&text[..], serde_json::to_string(&finding()).unwrap_or_default());
        let from_text = LazyFinding::from_json(Severity::Warning, "demo-rule".into(), text.clone());
        assert_eq!((from_text.severity(), from_text.rule_id()), (Severity::Warning, "demo-rule"));
        assert!(from_text.finding.get().is_none(), "nothing parsed before it is read");
        assert_eq!(from_text.message, "m \"quoted\"", "reads as the finding");
        assert_eq!(from_text, lazy);
        assert!(Arc::ptr_eq(from_text.json(), &text), "the text is shared, not copied");
        assert_eq!(from_text.into_finding(), finding());
        assert_eq!(
            (lazy.severity(), lazy.rule_id()),
            (Severity::Warning, "demo-rule"),
            "made from a finding: its own"
        );
    }

    #[test]
    fn it_serialises_as_the_finding() {
        let from_text = LazyFinding::from_json(
            Severity::Warning,
            "demo-rule".into(),
            LazyFinding::new(finding()).json().clone(),
        );
        assert_eq!(serde_json::to_string(&from_text).ok(), serde_json::to_string(&finding()).ok());
        let value = serde_json::to_value(&from_text).unwrap_or_default();
        assert_eq!(value, serde_json::to_value(finding()).unwrap_or_default());
        let pretty = serde_json::to_string_pretty(&from_text).unwrap_or_default();
        assert_eq!(serde_json::from_str::<Finding>(&pretty).ok(), Some(finding()));
    }

    #[test]
    fn its_schema_is_the_findings() {
        let lazy =
            serde_json::to_value(schemars::schema_for!(Vec<LazyFinding>)).unwrap_or_default();
        let plain = serde_json::to_value(schemars::schema_for!(Vec<Finding>)).unwrap_or_default();
        assert_eq!(lazy, plain);
    }
}
