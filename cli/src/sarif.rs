//! `pitfall check --format sarif`: the answers as one SARIF 2.1.0 log, the
//! format GitHub code scanning and GitLab read.
//!
//! - One run; each manifest is an artifact, located by the path given on
//!   the command line (as a relative URI reference when it is relative).
//! - One result per finding: `level` from its severity (error → `error`,
//!   warning → `warning`, info → `note`), its message and remedies, and a
//!   location in the manifest at the line of its first evidence field
//!   (code scanning shows a result at a line; line 1 when no evidence
//!   field is in the file).
//! - `tool.driver.rules` holds each rule with a result: its title, summary
//!   (offline, where the rule's metadata is at hand), remedies and
//!   references, and `helpUri`: the server's rule page when checked online,
//!   else the rule's first reference with an address.
//! - Undetermined rules are not results: a rule that could not decide has
//!   not found a breakage, and an alert per missing field would bury the
//!   findings. They are listed in the run's `properties.undetermined`, each
//!   with the fields that would settle it. Rules that failed, and
//!   manifests that could not be checked, are the invocation's
//!   `toolExecutionNotifications`.

mod lines;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pitfall_client::api::types::ErrorBody;
use pitfall_contract::meta::{RuleMeta, Severity};
use pitfall_contract::report::{CheckResponse, Finding};
use serde_json::{Value, json};

use lines::FieldLines;

/// The schema a SARIF 2.1.0 log names (OASIS, errata 01).
const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// One checked (or not) manifest.
pub(crate) struct Checked<'a> {
    /// The path as given (`-` for standard input).
    pub(crate) path: &'a str,
    /// Its text, to place results at lines.
    pub(crate) text: &'a [u8],
    /// Its answer, or why it has none.
    pub(crate) outcome: Result<&'a CheckResponse, &'a ErrorBody>,
}

/// Where rule descriptions come from.
pub(crate) struct RuleInfo<'a> {
    /// The rules' metadata, when checked offline.
    pub(crate) meta: &'a dyn Fn(&str) -> Option<&'a RuleMeta>,
    /// The registry checked with, whose `/rules/{id}` page describes a rule.
    pub(crate) server: Option<&'a str>,
}

/// The SARIF log of `checked`.
pub(crate) fn log(checked: &[Checked<'_>], info: &RuleInfo<'_>) -> Value {
    let mut rules: BTreeMap<String, (usize, Value)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    let mut undetermined = Vec::new();
    let mut revisions: Vec<&str> = Vec::new();
    let artifacts: Vec<Value> = checked.iter().map(|c| artifact(c.path)).collect();
    for (index, c) in checked.iter().enumerate() {
        let answer = match c.outcome {
            Ok(answer) => answer,
            Err(error) => {
                notifications.push(json!({
                    "level": "error",
                    "message": { "text": format!("{}: could not be checked: {}", c.path, error.message) },
                    "locations": [{ "physicalLocation": { "artifactLocation": artifact_location(c.path, index) } }],
                    "properties": { "code": error.code },
                }));
                continue;
            }
        };
        if !revisions.contains(&answer.ruleset_revision.as_str()) {
            revisions.push(&answer.ruleset_revision);
        }
        let lines = FieldLines::of(c.text);
        for finding in &answer.findings {
            let finding: &Finding = finding;
            let next = order.len();
            let rule_index = rules
                .entry(finding.rule_id.clone())
                .or_insert_with(|| {
                    order.push(finding.rule_id.clone());
                    (next, rule(finding, info))
                })
                .0;
            results.push(result(finding, rule_index, c.path, index, &lines));
        }
        for u in &answer.undetermined {
            let mut fields: Vec<&str> = u.named().collect();
            fields.dedup();
            undetermined.push(json!({ "manifest": c.path, "ruleId": u.rule_id, "fields": fields }));
        }
        for e in &answer.rule_errors {
            notifications.push(json!({
                "level": "warning",
                "message": { "text": format!("{}: rule {} failed: {}", c.path, e.rule_id, e.error) },
                "associatedRule": { "id": e.rule_id },
            }));
        }
    }
    let rules: Vec<Value> =
        order.iter().filter_map(|id| rules.remove(id)).map(|(_, r)| r).collect();
    let all_checked = checked.iter().all(|c| c.outcome.is_ok());
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "pitfall",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": all_checked,
                "toolExecutionNotifications": notifications,
            }],
            "artifacts": artifacts,
            "results": results,
            "properties": {
                "rulesetRevisions": revisions,
                "undetermined": undetermined,
            },
        }],
    })
}

/// SARIF's level for a severity.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn artifact(path: &str) -> Value {
    if path == "-" {
        json!({ "location": { "uri": "-" }, "description": { "text": "the manifest read from standard input" }, "mimeType": "application/json" })
    } else {
        json!({ "location": { "uri": uri(path) }, "mimeType": "application/json" })
    }
}

fn artifact_location(path: &str, index: usize) -> Value {
    json!({ "uri": uri(path), "index": index })
}

/// A file path as a URI reference: relative paths stay relative (code
/// scanning resolves them against the repository), absolute ones become
/// `file://` URIs; bytes outside RFC 3986's unreserved set and `/` are
/// percent-encoded.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The reporting descriptor of the rule behind `finding`.
fn rule(finding: &Finding, info: &RuleInfo<'_>) -> Value {
    let meta = (info.meta)(&finding.rule_id);
    let summary = meta.map_or(finding.title.as_str(), |m| m.summary.as_str());
    let page =
        info.server.map(|s| format!("{}/rules/{}", s.trim_end_matches('/'), finding.rule_id));
    let reference = finding
        .references
        .iter()
        .filter_map(|r| r.url.as_deref())
        .find(|u| u.starts_with("https://") || u.starts_with("http://"));
    let help_uri = page.clone().or_else(|| reference.map(str::to_owned));
    let mut text = format!("{summary}\n");
    let mut markdown = format!("{summary}\n");
    if !finding.remedies.is_empty() {
        text.push_str("\nFixes:\n");
        markdown.push_str("\n**Fixes**\n\n");
        for r in &finding.remedies {
            let _ = writeln!(text, "- {}", r.summary);
            let _ = writeln!(markdown, "- {}", r.summary);
        }
    }
    if !finding.references.is_empty() {
        text.push_str("\nSources:\n");
        markdown.push_str("\n**Sources**\n\n");
        for r in &finding.references {
            match &r.url {
                Some(url) => {
                    let _ = writeln!(text, "- {}: {url}", r.title);
                    let _ = writeln!(markdown, "- [{}]({url})", markdown_text(&r.title));
                }
                None => {
                    let _ = writeln!(text, "- {}", r.title);
                    let _ = writeln!(markdown, "- {}", markdown_text(&r.title));
                }
            }
        }
    }
    let mut tags = vec![finding.severity.as_str().to_owned()];
    if let Some(component) = meta.and_then(|m| m.component.clone()) {
        tags.push(component);
    }
    let mut descriptor = json!({
        "id": finding.rule_id,
        "shortDescription": { "text": finding.title },
        "fullDescription": { "text": summary },
        "help": { "text": text, "markdown": markdown },
        "defaultConfiguration": { "level": level(finding.severity) },
        "properties": { "version": finding.rule_version, "tags": tags },
    });
    if let (Some(uri), Value::Object(fields)) = (help_uri, &mut descriptor) {
        fields.insert("helpUri".into(), Value::String(uri));
    }
    descriptor
}

/// `[`, `]` and `*` escaped, so a title is shown as written.
fn markdown_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('[', "\\[").replace(']', "\\]").replace('*', "\\*")
}

/// One finding as a result in `path`, the `index`th artifact.
fn result(
    finding: &Finding,
    rule_index: usize,
    path: &str,
    index: usize,
    lines: &FieldLines,
) -> Value {
    let line = finding.evidence.iter().find_map(|e| lines.line(&e.path)).unwrap_or(1);
    let mut text = finding.message.clone();
    for (i, r) in finding.remedies.iter().enumerate() {
        let _ = write!(text, "\nFix {}: {}", i + 1, r.summary);
    }
    let evidence: Vec<Value> = finding
        .evidence
        .iter()
        .map(|e| json!({ "fullyQualifiedName": e.path, "kind": "member" }))
        .collect();
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": artifact_location(path, index),
            "region": { "startLine": line },
        },
    });
    if !evidence.is_empty()
        && let Value::Object(fields) = &mut location
    {
        fields.insert("logicalLocations".into(), Value::Array(evidence));
    }
    json!({
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "kind": "fail",
        "level": level(finding.severity),
        "message": { "text": text },
        "locations": [location],
        "properties": {
            "ruleVersion": finding.rule_version,
            "evidence": finding.evidence,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri("manifests/g5g.json"), "manifests/g5g.json");
        assert_eq!(uri("/srv/fleet/a b.json"), "file:///srv/fleet/a%20b.json");
        assert_eq!(uri("ops/#1.json"), "ops/%231.json");
    }

    #[test]
    fn severities_map_to_levels() {
        assert_eq!(level(Severity::Error), "error");
        assert_eq!(level(Severity::Warning), "warning");
        assert_eq!(level(Severity::Info), "note");
    }
}
