//! Reading a rule's metadata and cases so that every problem is reported
//! at once: serde stops at the first, which left a contributor fixing one
//! unknown field, running again, and meeting the next.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::{Path, Segment};

/// One problem found reading a document: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadIssue {
    /// The member at fault (`remedies[0].actions[1]`); `.` for the whole.
    pub path: String,
    /// What serde found there.
    pub message: String,
}

impl std::fmt::Display for ReadIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The most problems one read reports (and so the most times it reads).
const MAX_ISSUES: usize = 64;

/// Deserialises `value`, or lists every problem in it: after each error
/// the member at fault is taken out and the rest read again, until it
/// reads or the fault is the document itself. A problem that only
/// follows from a member taken out (`missing field`) is not reported.
pub fn read_all<T: DeserializeOwned>(mut value: Value) -> Result<T, Vec<ReadIssue>> {
    let mut issues: Vec<ReadIssue> = Vec::new();
    // What was taken out, as paths of the document as given: an element
    // taken out of an array moves the later ones down, and the paths
    // reported are the document's own.
    let mut removed: Vec<Vec<Step>> = Vec::new();
    while issues.len() < MAX_ISSUES {
        let error = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(read) if issues.is_empty() => return Ok(read),
            Ok(_) => return Err(issues),
            Err(error) => error,
        };
        let original = original_path(error.path(), &removed);
        let message = error.inner().to_string();
        let follows_removal = missing_field(&message).is_some_and(|field| {
            let mut taken = original.clone();
            taken.push(Step::Key(field.to_owned()));
            removed.contains(&taken)
        });
        if !follows_removal {
            issues.push(ReadIssue { path: display(&original), message });
        }
        if !remove(&mut value, error.path()) {
            break;
        }
        removed.push(original);
    }
    Err(issues)
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// `path` (into the document with `removed` taken out) as a path into
/// the document as given.
fn original_path(path: &Path, removed: &[Vec<Step>]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for segment in path.iter() {
        let step = match segment {
            Segment::Map { key } => Step::Key(key.clone()),
            Segment::Seq { index } => {
                let mut gone: Vec<usize> = removed
                    .iter()
                    .filter(|r| r.len() == out.len() + 1 && r[..out.len()] == out[..])
                    .filter_map(|r| match r.last() {
                        Some(Step::Index(i)) => Some(*i),
                        _ => None,
                    })
                    .collect();
                gone.sort_unstable();
                let mut index = *index;
                for i in gone {
                    if i <= index {
                        index += 1;
                    }
                }
                Step::Index(index)
            }
            Segment::Enum { variant } => Step::Key(variant.clone()),
            Segment::Unknown => Step::Key("?".into()),
        };
        out.push(step);
    }
    out
}

/// `remedies[0].actions[1]`, or `.` for the document itself.
fn display(path: &[Step]) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The field a `missing field `NAME`` error names.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// Takes the member at `path` out of `value`; false when the path is the
/// document itself or leads nowhere.
fn remove(value: &mut Value, path: &Path) -> bool {
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((last, parents)) = segments.split_last() else { return false };
    let mut at = value;
    for segment in parents {
        let next = match (segment, at) {
            (Segment::Seq { index }, Value::Array(items)) => items.get_mut(*index),
            (Segment::Map { key }, Value::Object(members)) => members.get_mut(key),
            _ => None,
        };
        let Some(next) = next else { return false };
        at = next;
    }
    match (last, at) {
        (Segment::Seq { index }, Value::Array(items)) if *index < items.len() => {
            items.remove(*index);
            true
        }
        (Segment::Map { key }, Value::Object(members)) => members.remove(key).is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::RuleMeta;

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let meta = serde_json::json!({
            "id": "numpy-2-example",
            "version": "1.0.0",
            "title": "A title long enough",
            "severity": "error",
            "summary": "A summary long enough to pass.",
            "message": "m",
            "colour": "blue",
            "remedies": [
                { "summary": "s", "actions": [
                    { "kind": "pin_package", "package": "numpy", "version": "<2", "why": "x" },
                    { "kind": "no_such_action" }
                ] },
                { "summary": "t", "actions": [], "urgency": 3 }
            ],
            "references": [],
            "author": "a"
        });
        let issues = read_all::<RuleMeta>(meta).expect_err("four problems");
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "colour",
                "remedies[0].actions[0]",
                "remedies[0].actions[1].kind",
                "remedies[1].urgency"
            ],
            "{issues:?}"
        );
        assert!(issues[1].message.contains("why"), "{}", issues[1].message);
        assert!(issues[2].message.contains("no_such_action"), "{}", issues[2].message);
    }

    #[test]
    fn a_clean_document_reads_and_a_broken_root_stops() {
        let ok = serde_json::json!({"a": 1});
        assert_eq!(read_all::<serde_json::Map<String, Value>>(ok).map(|m| m.len()), Ok(1));
        let issues = read_all::<RuleMeta>(serde_json::json!("text")).expect_err("not an object");
        assert_eq!(issues.len(), 1, "{issues:?}");
    }
}
