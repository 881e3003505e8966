//! What a manifest says of a rule that explains a log: the check's
//! outcome for it, the finding to show either way, and the ranked causes
//! as `POST /v1/explain` and `pitfall explain` answer them.

use pitfall_api::types::{ExplainedCause, ExplainedHole};
use pitfall_contract::manifest::Manifest;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::{CheckResponse, Finding};
use pitfall_contract::selector::{ManifestFacts, Selector};
use pitfall_contract::template::unfilled;

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
    /// The rule's outcome in `check`, which ran on `manifest`.
    ///
    /// A rule the check did not run because its `applies_to` names facts
    /// the manifest does not state (a package it does not list, a GPU
    /// where it lists none, the CPU architecture or the serving engine
    /// left out) is undetermined, those facts named: a manifest read from
    /// a log, or typed by hand, lists only what it knows, and a log
    /// explained by a torch rule is not cleared by a manifest that does not
    /// say whether torch is installed. A selector the manifest's own facts
    /// make false still clears it.
    pub fn of(check: &CheckResponse, manifest: &Manifest, meta: &RuleMeta) -> Outcome {
        let rule_id = meta.id.as_str();
        if let Some(f) = check.findings.iter().find(|f| f.rule_id() == rule_id) {
            return Outcome::Matched(f.finding().clone());
        }
        if let Some(u) = check.undetermined.iter().find(|u| u.rule_id == rule_id) {
            return Outcome::Undetermined(u.missing.clone());
        }
        if let Some(e) = check.rule_errors.iter().find(|e| e.rule_id == rule_id) {
            return Outcome::Error(e.error.clone());
        }
        match unstated(manifest, meta) {
            Some(missing) => Outcome::Undetermined(missing),
            None => Outcome::Clear,
        }
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

/// The facts `meta`'s selectors read that `manifest` does not state, when
/// every selector it can decide holds; `None` when it states them all or
/// one of them rules the rule out.
fn unstated(manifest: &Manifest, meta: &RuleMeta) -> Option<Vec<String>> {
    let facts = ManifestFacts::new(manifest);
    let mut missing = Vec::new();
    for text in &meta.applies_to {
        let Ok(selector) = Selector::parse(text) else { continue };
        let unless = |stated: bool, field: &str| (!stated).then(|| field.to_owned());
        let unstated = match &selector {
            Selector::Package { name, .. } => {
                facts.package_versions(name).is_none().then(|| format!("packages.{name}.version"))
            }
            Selector::Accelerator(_) | Selector::Capability(_) => {
                unless(!manifest.accelerators.is_empty(), "accelerators")
            }
            Selector::Arch(_) => {
                unless(manifest.host.as_ref().is_some_and(|h| h.arch.is_some()), "host.arch")
            }
            Selector::Engine(_) => unless(
                manifest.workload.as_ref().is_some_and(|w| w.engine.is_some()),
                "workload.engine",
            ),
            // No container is a fact: the stack runs on the host.
            Selector::Container => None,
        };
        match unstated {
            Some(field) => missing.push(field),
            None if !selector.holds_in(&facts) => return None,
            None => {}
        }
    }
    (!missing.is_empty()).then_some(missing)
}

/// The rule's finding as no manifest has filled it: its summary as the
/// message, its remedies as written, each placeholder shown as `<name>`
/// for the reader to fill in (a doubled brace read as one). An action
/// holding a placeholder is left out: with no value for it, it is not
/// one a tool can apply.
pub fn general_finding(meta: &RuleMeta) -> Finding {
    let mut remedies = meta.remedies.clone();
    for remedy in &mut remedies {
        remedy.summary = unfilled(&remedy.summary);
        remedy.actions.retain(|action| !action.has_placeholder());
    }
    Finding {
        rule_id: meta.id.clone(),
        rule_version: meta.version.clone(),
        severity: meta.severity,
        title: meta.title.clone(),
        message: meta.summary.clone(),
        error_signatures: meta.error_signatures.iter().map(|s| s.template.clone()).collect(),
        remedies,
        evidence: Vec::new(),
        references: meta.references.clone(),
    }
}

/// The causes as the API answers them: each with its outcome on `check`
/// and the manifest it ran on (when one came with the log) and the
/// finding to show, a matched
/// rule first, then undetermined or failed ones, then cleared ones, the
/// explainer's order kept within each. `meta_of` gives the rule of a
/// cause's [`Cause::rule`] position.
pub fn explained_causes<'m>(
    causes: &[Cause],
    meta_of: impl Fn(usize) -> &'m RuleMeta,
    check: Option<&(CheckResponse, Manifest)>,
) -> Vec<ExplainedCause> {
    let mut ranked: Vec<(u8, ExplainedCause)> = causes
        .iter()
        .map(|cause| {
            let outcome = check.map(|(c, m)| Outcome::of(c, m, meta_of(cause.rule)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(applies_to: &[&str]) -> RuleMeta {
        serde_json::from_value(serde_json::json!({
            "id": "r", "version": "1.0.0", "title": "t", "severity": "error",
            "summary": "s", "message": "m", "remedies": [], "references": [], "author": "a",
            "applies_to": applies_to,
        }))
        .expect("a rule")
    }

    fn manifest(json: serde_json::Value) -> Manifest {
        serde_json::from_value(json).expect("a manifest")
    }

    fn nothing_found() -> CheckResponse {
        serde_json::from_value(serde_json::json!({
            "findings": [], "undetermined": [], "rule_errors": [], "ruleset_revision": "1",
            "stats": {"rules_total": 1, "rules_evaluated": 0, "elapsed_us": 1},
        }))
        .expect("a check response")
    }

    #[test]
    fn a_rule_whose_package_the_manifest_does_not_list_is_undetermined() {
        let rule = meta(&["package:torch", "accelerator:nvidia"]);
        let from_log = manifest(serde_json::json!({
            "manifest_version": 1,
            "accelerators": [{"vendor": "nvidia", "model": "GTX 1070 Ti", "count": 1}],
        }));
        assert_eq!(
            Outcome::of(&nothing_found(), &from_log, &rule),
            Outcome::Undetermined(vec!["packages.torch.version".to_owned()])
        );
        let empty = manifest(serde_json::json!({"manifest_version": 1}));
        assert_eq!(
            Outcome::of(&nothing_found(), &empty, &rule),
            Outcome::Undetermined(vec![
                "packages.torch.version".to_owned(),
                "accelerators".to_owned()
            ])
        );
    }

    #[test]
    fn a_selector_the_manifests_own_facts_make_false_clears_it() {
        let rule = meta(&["package:torch", "accelerator:nvidia"]);
        let amd = manifest(serde_json::json!({
            "manifest_version": 1,
            "accelerators": [{"vendor": "amd", "model": "MI300X", "count": 1}],
        }));
        assert_eq!(Outcome::of(&nothing_found(), &amd, &rule), Outcome::Clear);
        let listed = manifest(serde_json::json!({
            "manifest_version": 1,
            "accelerators": [{"vendor": "nvidia", "model": "A100", "count": 1}],
            "packages": [{"name": "torch", "version": "2.4.0"}],
        }));
        assert_eq!(Outcome::of(&nothing_found(), &listed, &rule), Outcome::Clear);
        let old = meta(&["package:torch<2.0"]);
        assert_eq!(Outcome::of(&nothing_found(), &listed, &old), Outcome::Clear);
    }

    #[test]
    fn a_general_finding_marks_placeholders_and_keeps_only_applicable_actions() {
        let rule: RuleMeta = serde_json::from_value(serde_json::json!({
            "id": "r", "version": "1.0.0", "title": "t", "severity": "error",
            "summary": "s", "message": "m", "references": [], "author": "a",
            "remedies": [{
                "summary": "Use {version}, e.g. '{{\"dtype\":\"int8\"}}'",
                "actions": [
                    {"kind": "pin_package", "package": "torch", "version": "{version}"},
                    {"kind": "build_from_source", "package": "k2"},
                ],
            }],
        }))
        .expect("a rule");
        let finding = general_finding(&rule);
        assert_eq!(finding.remedies[0].summary, "Use <version>, e.g. '{\"dtype\":\"int8\"}'");
        let kinds: Vec<String> = finding.remedies[0]
            .actions
            .iter()
            .map(|a| serde_json::to_value(a).expect("json")["kind"].to_string())
            .collect();
        assert_eq!(kinds, ["\"build_from_source\""]);
    }
}
