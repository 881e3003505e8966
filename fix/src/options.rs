//! From a finding's remedies to concrete options: each remedy's actions
//! with every choice made (which version, which checkpoint), applied to a
//! manifest to see what they change and what that costs.
//!
//! Versions are real: a remedy's own version (a rule's boundary), or a
//! release of the release table above it; a specifier takes the releases
//! the table has that it admits, else the version it names itself. A
//! quantization remedy for a model the model table knows takes a quantized
//! checkpoint of that model from the table, or is not offered when the
//! table has none.

use pitfall_contract::Manifest;
use pitfall_contract::actions::{self, Action, is_specifier};
use pitfall_contract::meta::Remedy;
use pitfall_facts::models::{self, Model};
use pitfall_version::{Specifier, Version};
use serde_json::Value;

use crate::cost::tier;
use pitfall_api::fix::{Cost, Tier};

/// How many releases of a package one version choice may try, lowest
/// first: enough to step over a release another rule flags, few enough to
/// keep a search within its evaluations.
pub const VERSION_CHOICES: usize = 4;

/// How many concrete options one remedy may become.
const OPTIONS_PER_REMEDY: usize = 8;

/// One remedy of one finding with every choice made.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The rule whose finding offered it.
    pub rule_id: String,
    /// The rule's title.
    pub rule_title: String,
    /// The finding's severity.
    pub severity: pitfall_contract::meta::Severity,
    /// The remedy's summary.
    pub remedy: String,
    /// The actions, concrete.
    pub actions: Vec<Action>,
    /// Release steps above the lowest version the remedy names.
    pub version_steps: u32,
}

/// One action of a candidate as applied: what it changed and its tier.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    pub action: Action,
    pub tier: Tier,
}

/// A remedy that cannot be offered here, and why.
#[derive(Debug, Clone)]
pub(crate) struct Unavailable {
    pub rule_id: String,
    pub remedy: String,
    pub reason: String,
}

/// Every concrete option of `remedies` (a finding of `rule_id`) for
/// `manifest`, and the remedies that cannot be offered.
pub(crate) fn expand(
    finding: &pitfall_contract::report::Finding,
    manifest: &Manifest,
) -> (Vec<Candidate>, Vec<Unavailable>) {
    let mut out = Vec::new();
    let mut unavailable = Vec::new();
    for remedy in &finding.remedies {
        match choices(remedy, manifest) {
            Ok(variants) => {
                out.extend(variants.into_iter().map(|(actions, version_steps)| Candidate {
                    rule_id: finding.rule_id.clone(),
                    rule_title: finding.title.clone(),
                    severity: finding.severity,
                    remedy: remedy.summary.clone(),
                    actions,
                    version_steps,
                }))
            }
            Err(reason) => unavailable.push(Unavailable {
                rule_id: finding.rule_id.clone(),
                remedy: remedy.summary.clone(),
                reason,
            }),
        }
    }
    (out, unavailable)
}

/// The remedy's actions with each choice made, with their version steps.
fn choices(remedy: &Remedy, manifest: &Manifest) -> Result<Vec<(Vec<Action>, u32)>, String> {
    if remedy.actions.is_empty() {
        return Err("it names no action to apply".to_owned());
    }
    let mut combos: Vec<(Vec<Action>, u32)> = vec![(Vec::new(), 0)];
    for action in &remedy.actions {
        let variants = variants(action, manifest)?;
        let mut next = Vec::new();
        for (prefix, steps) in &combos {
            for (i, variant) in variants.iter().enumerate() {
                let mut actions = prefix.clone();
                actions.extend(variant.iter().cloned());
                next.push((actions, steps + i as u32));
            }
        }
        next.sort_by_key(|(_, steps)| *steps);
        next.truncate(OPTIONS_PER_REMEDY);
        combos = next;
    }
    Ok(combos)
}

/// The concrete forms of one action, preferred first; each form is one or
/// more actions (a checkpoint is a model and its quantization).
fn variants(action: &Action, manifest: &Manifest) -> Result<Vec<Vec<Action>>, String> {
    if let Some(text) = unfilled(action) {
        return Err(format!("its action still has a placeholder ({text})"));
    }
    Ok(match action {
        Action::UpgradePackage { package, to } => versions(package, to, true)
            .into_iter()
            .map(|v| vec![Action::UpgradePackage { package: package.clone(), to: v }])
            .collect(),
        Action::PinPackage { package, version } => versions(package, version, false)
            .into_iter()
            .map(|v| vec![Action::PinPackage { package: package.clone(), version: v }])
            .collect(),
        Action::SetWorkload { field, value } if field == "quantization" => {
            checkpoints(manifest, value)?
        }
        other => vec![vec![other.clone()]],
    })
}

/// A `{name}` left in an action's text: the rule could not fill it here.
fn unfilled(action: &Action) -> Option<String> {
    fn walk(value: &Value) -> Option<String> {
        match value {
            Value::String(text) => placeholder(text),
            Value::Array(items) => items.iter().find_map(walk),
            Value::Object(map) => map.values().find_map(walk),
            _ => None,
        }
    }
    walk(&serde_json::to_value(action).ok()?)
}

/// The first `{identifier}` in `text`.
fn placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
        if name_len > 0 && after[name_len..].starts_with('}') {
            return Some(format!("{{{}}}", &after[..name_len]));
        }
        rest = after;
    }
    None
}

/// The versions to try for `wanted` (a version or a specifier), lowest
/// first for an upgrade (the nearest above) and highest first for a
/// specifier's pin (the nearest below an upper bound); never a version
/// that neither the table nor the rule names.
fn versions(package: &str, wanted: &str, upgrade: bool) -> Vec<String> {
    let mut table: Vec<Version> = pitfall_facts::releases::versions(package)
        .filter_map(|v| Version::parse(v).ok())
        .filter(|v| !v.is_prerelease())
        .collect();
    table.sort();
    if !is_specifier(wanted) {
        // The rule's own version, then the releases above it.
        let Ok(floor) = Version::parse(wanted) else { return vec![wanted.to_owned()] };
        let mut out = vec![wanted.to_owned()];
        if upgrade {
            out.extend(table.iter().filter(|v| **v > floor).map(|v| v.as_str().to_owned()));
        }
        out.truncate(VERSION_CHOICES);
        return out;
    }
    let Ok(spec) = Specifier::parse(wanted) else { return vec![wanted.to_owned()] };
    let mut admitted: Vec<String> =
        table.iter().filter(|v| spec.contains(v)).map(|v| v.as_str().to_owned()).collect();
    if !upgrade {
        admitted.reverse();
    }
    admitted.truncate(VERSION_CHOICES);
    if admitted.is_empty() {
        // `apply` installs the version the specifier names, or refuses.
        vec![wanted.to_owned()]
    } else {
        admitted
    }
}

/// Bits per weight of a quantization method, as the model table counts them.
fn method_bits(method: &str) -> Option<u32> {
    match method.to_ascii_lowercase().as_str() {
        "awq" | "gptq" | "bitsandbytes" | "mxfp4" | "nvfp4" | "gguf" => Some(4),
        "fp8" | "int8" | "w8a8" => Some(8),
        _ => None,
    }
}

/// `set_workload quantization=Q` for the manifest's model: the model
/// table's quantized checkpoints of the same model (family, size, and
/// instruct or not) at no more bits than Q, fewest bits last; the action
/// as it is for a model the table does not know (the user quantizes their
/// own); nothing for a known model the table has no checkpoint of.
fn checkpoints(manifest: &Manifest, value: &Value) -> Result<Vec<Vec<Action>>, String> {
    let as_is =
        vec![vec![Action::SetWorkload { field: "quantization".into(), value: value.clone() }]];
    let Some(model_id) = manifest.workload.as_ref().and_then(|w| w.model.as_deref()) else {
        return Ok(as_is);
    };
    let Some(model) = models::lookup(model_id) else { return Ok(as_is) };
    if model.quantization.is_some() {
        return Err(format!("{} is already a quantized checkpoint", model.id));
    }
    let wanted_bits = value.as_str().and_then(method_bits).unwrap_or(4);
    let mut found: Vec<&Model> = models::table()
        .iter()
        .filter(|m| {
            is_checkpoint_of(m, model) && m.quantization_bits.is_some_and(|b| b <= wanted_bits)
        })
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.quantization_bits));
    if found.is_empty() {
        return Err(format!(
            "the model table has no quantized checkpoint of {} (at {wanted_bits} bits or fewer)",
            model.id
        ));
    }
    Ok(found
        .into_iter()
        .map(|m| {
            vec![
                Action::SetWorkload { field: "model".into(), value: Value::String(m.id.clone()) },
                Action::SetWorkload {
                    field: "quantization".into(),
                    value: Value::String(m.quantization.clone().unwrap_or_default()),
                },
            ]
        })
        .collect())
}

/// Whether `candidate` is a quantized checkpoint of `model`: the same
/// family and size, and both tuned for chat or both not.
fn is_checkpoint_of(candidate: &Model, model: &Model) -> bool {
    fn tuned(id: &str) -> bool {
        let id = id.to_ascii_lowercase();
        ["instruct", "-chat", "-it"].iter().any(|t| id.contains(t))
    }
    candidate.quantization.is_some()
        && candidate.family == model.family
        && candidate.parameters_b.is_some()
        && candidate.parameters_b == model.parameters_b
        && tuned(&candidate.id) == tuned(&model.id)
}

/// `candidate` applied to `manifest`: the new manifest, the actions that
/// changed it with their tiers, and their cost; an error names the action
/// that could not be applied.
pub(crate) fn apply(
    candidate: &Candidate,
    manifest: &Manifest,
) -> Result<(Manifest, Vec<Applied>, Cost), String> {
    let mut current = manifest.clone();
    let mut applied = Vec::new();
    let mut cost = Cost { version_steps: candidate.version_steps, ..Cost::default() };
    for action in &candidate.actions {
        let mut next = current.clone();
        actions::apply(&mut next, action).map_err(|e| format!("{action}: {e}"))?;
        if next != current {
            let tier = tier(action, &current, &next);
            cost.add(tier);
            applied.push(Applied { action: action.clone(), tier });
            current = next;
        }
    }
    Ok((current, applied, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrades_try_the_rules_version_then_real_releases_above_it() {
        let v = versions("vllm", "0.27.2rc0", true);
        assert_eq!(v[0], "0.27.2rc0", "the rule's own boundary comes first");
        assert_eq!(v[1], "0.28.0", "then the nearest release the table knows");
        for version in &v[1..] {
            assert!(pitfall_facts::releases::release("vllm", version).is_some());
        }
    }

    #[test]
    fn a_specifier_takes_only_admitted_releases() {
        let v = versions("torch", "<2.6", false);
        assert_eq!(v.first().map(String::as_str), Some("2.5.0"));
        let bound = Version::parse("2.6").expect("parses");
        assert!(v.iter().all(|x| Version::parse(x).is_ok_and(|x| x < bound)));
    }

    #[test]
    fn placeholders_left_unfilled_are_seen() {
        let a = Action::SetWorkload { field: "tensor_parallel_size".into(), value: "{tp}".into() };
        assert_eq!(unfilled(&a).as_deref(), Some("{tp}"));
        let b = Action::SetWorkload { field: "dtype".into(), value: "half".into() };
        assert_eq!(unfilled(&b), None);
    }

    #[test]
    fn quantization_takes_a_checkpoint_the_model_table_lists() {
        let m: Manifest = serde_json::from_str(
            r#"{"manifest_version":1,"workload":{"model":"meta-llama/Llama-3.1-70B-Instruct"}}"#,
        )
        .expect("parses");
        let options = checkpoints(&m, &Value::String("awq".into())).expect("has a checkpoint");
        let ids: Vec<String> = options
            .iter()
            .filter_map(|o| match &o[0] {
                Action::SetWorkload { value, .. } => value.as_str().map(str::to_owned),
                _ => None,
            })
            .collect();
        assert!(ids.iter().any(|id| id.contains("AWQ")), "{ids:?}");
        let llama2: Manifest = serde_json::from_str(
            r#"{"manifest_version":1,"workload":{"model":"meta-llama/Llama-2-70b-chat-hf"}}"#,
        )
        .expect("parses");
        assert!(checkpoints(&llama2, &Value::String("awq".into())).is_err());
    }
}
