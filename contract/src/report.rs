//! Findings as clients see them, and how a rule's raw output plus its
//! metadata become one. The shapes here are the `findings`, `undetermined`
//! and `rule_errors` entries of the /v1/check answer (DESIGN.md, "The API").

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::actions::Action;
use super::fields::{FieldKind, FieldMap, Source};
use super::meta::{Reference, Remedy, RuleMeta, Severity};
use super::session::{ParamValue, RawOutput};

mod lazy;

pub use lazy::LazyFinding;

/// What one rule concluded about one manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawOutcome {
    /// Nothing to report.
    Clear,
    /// The breakage applies.
    Matched,
    /// A needed field is missing.
    Undetermined,
}

impl RawOutcome {
    /// Decodes `pitfall_evaluate`'s return value.
    pub fn from_code(code: i32) -> Option<RawOutcome> {
        match code {
            0 => Some(RawOutcome::Clear),
            1 => Some(RawOutcome::Matched),
            2 => Some(RawOutcome::Undetermined),
            _ => None,
        }
    }
}

/// One known breakage that applies to the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The rule's id.
    pub rule_id: String,
    /// The rule's version.
    pub rule_version: String,
    /// How bad it is.
    pub severity: Severity,
    /// One line, what breaks.
    pub title: String,
    /// What breaks for this manifest, with its values.
    pub message: String,
    /// The exact text users see.
    pub error_signatures: Vec<String>,
    /// What fixes it.
    pub remedies: Vec<Remedy>,
    /// The manifest values that triggered it.
    pub evidence: Vec<Evidence>,
    /// Where the facts come from.
    pub references: Vec<Reference>,
}

/// One manifest value behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// Field path, e.g. `accelerators.0.compute_capability`.
    pub path: String,
    /// The value.
    pub value: Value,
    /// `manifest` or `enriched` (filled in from the registry's tables).
    pub source: EvidenceSource,
}

/// Where an evidence value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceSource {
    /// The client sent it.
    Manifest,
    /// One of the registry's tables supplied it.
    Enriched,
}

impl From<Source> for EvidenceSource {
    fn from(source: Source) -> EvidenceSource {
        match source {
            Source::Manifest => EvidenceSource::Manifest,
            Source::Enriched => EvidenceSource::Enriched,
        }
    }
}

/// A rule that could not decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Undetermined {
    /// The rule's id.
    pub rule_id: String,
    /// Field paths to collect so that it can: those the manifest lacks.
    pub missing: Vec<String>,
    /// Fields the rule named that the manifest has, in a form the rule
    /// cannot use (a version that is not PEP 440, an object where a value
    /// belongs): to correct, not to collect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// A field a rule needed that is there but unusable, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Unreadable {
    /// The field's path.
    pub path: String,
    /// Its value as text (a scalar's text, else its kind).
    pub value: String,
    /// Why a rule cannot use it (`not a PEP 440 version`).
    pub reason: String,
}

impl Undetermined {
    /// The answer for a rule that named `named` (through the ABI's
    /// `missing` call) on the manifest behind `fields`: each path the
    /// manifest lacks is missing, each it has is unreadable, with its value
    /// and why. The rule reports both the same way (the ABI has one call,
    /// and rules written before the distinction name unparseable fields
    /// too), so the host tells them apart and every module gets the
    /// right report.
    pub fn explain(rule_id: String, named: Vec<String>, fields: &FieldMap) -> Undetermined {
        let mut missing = Vec::new();
        let mut unreadable = Vec::new();
        for path in named {
            match fields.get(&path) {
                Some(field) if !matches!(field.kind, FieldKind::Missing) => {
                    let (value, reason) = why_unreadable(&path, &field);
                    if !unreadable.iter().any(|u: &Unreadable| u.path == path) {
                        unreadable.push(Unreadable { path, value, reason });
                    }
                }
                _ => missing.push(path),
            }
        }
        Undetermined { rule_id, missing, unreadable }
    }

    /// Every path the rule named, missing or unreadable.
    pub fn named(&self) -> impl Iterator<Item = &str> {
        self.missing
            .iter()
            .map(String::as_str)
            .chain(self.unreadable.iter().map(|u| u.path.as_str()))
    }
}

impl std::fmt::Display for Undetermined {
    /// `missing a, b; unreadable c = "banana" (not a PEP 440 version)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.missing.is_empty() || self.unreadable.is_empty() {
            write!(f, "missing {}", self.missing.join(", "))?;
        }
        for (i, u) in self.unreadable.iter().enumerate() {
            let sep = if i == 0 && self.missing.is_empty() { "" } else { "; " };
            write!(f, "{sep}unreadable {} = {:?} ({})", u.path, u.value, u.reason)?;
        }
        Ok(())
    }
}

/// A present field's value as text, and why a rule could not use it: what
/// the field's path says it should be, where it is not that.
fn why_unreadable(path: &str, field: &crate::fields::Field<'_>) -> (String, String) {
    use pitfall_version::{ComputeCapability, Dotted, Version};
    let kind = match field.kind {
        FieldKind::Null => Some("null"),
        FieldKind::Array => Some("an array"),
        FieldKind::Object => Some("an object"),
        _ => None,
    };
    if let Some(kind) = kind {
        return (kind.to_owned(), format!("{kind}, where the rule reads a value"));
    }
    let text = field.text.as_deref().unwrap_or_default();
    let last = path.rsplit('.').next().unwrap_or(path);
    let reason = if path.starts_with("packages.") && last == "version" {
        Version::parse(text).err().map(|_| "not a PEP 440 version")
    } else if last == "compute_capability" {
        ComputeCapability::parse(text).err().map(|_| "not a compute capability")
    } else if path.starts_with("drivers.") {
        Dotted::parse(text).err().map(|_| "not a dotted version such as 570.124.06")
    } else {
        None
    };
    let reason = reason.unwrap_or("there, but not in a form the rule can decide on");
    (text.to_owned(), reason.to_owned())
}

/// A rule that failed (trap, timeout, malformed output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuleError {
    /// The rule's id.
    pub rule_id: String,
    /// What went wrong, for people.
    pub error: String,
}

/// Why a matched rule's output could not become a finding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// Evidence that names a field the manifest does not have.
    #[error("evidence names field `{0}`, which the manifest does not have")]
    EvidenceMissing(String),
    /// A `{name}` placeholder with no parameter.
    #[error("placeholder `{{{0}}}` has no parameter")]
    UnknownParam(String),
    /// A parameter bound to a field (`param_field`) the manifest does not
    /// have as a scalar.
    #[error(
        "parameter `{key}` is bound to field `{path}`, which the manifest does not have as a scalar"
    )]
    ParamFieldMissing {
        /// The parameter.
        key: String,
        /// The field's path.
        path: String,
    },
    /// A remedy index past the metadata's remedies.
    #[error("remedy {index} selected, but the rule has {count}")]
    NoSuchRemedy {
        /// The index.
        index: u32,
        /// How many remedies the metadata has.
        count: usize,
    },
}

/// The value of a field as evidence (its JSON value and its source).
pub fn evidence_for(fields: &FieldMap, path: &str) -> Option<Evidence> {
    let field = fields.get(path)?;
    let value = match (fields.composite(path), field.kind, field.text.as_deref()) {
        (Some(v), _, _) => v.clone(),
        // Numbers keep the client's spelling (`64`, not `64.0`).
        (None, FieldKind::Number, Some(t)) => serde_json::from_str(t).unwrap_or(Value::Null),
        (None, FieldKind::Bool, Some(t)) => Value::Bool(t == "true"),
        (None, _, Some(t)) => Value::String(t.to_owned()),
        (None, _, None) => Value::Null,
    };
    Some(Evidence { path: path.to_owned(), value, source: field.source.into() })
}

/// Whether [`evidence_for`] would give `evidence` again on `fields`:
/// the same comparison, without building the value (a replayed finding's
/// evidence is checked on every manifest it is replayed on).
pub fn evidence_holds(fields: &FieldMap, evidence: &Evidence) -> bool {
    let Some(field) = fields.get(&evidence.path) else {
        return false;
    };
    if EvidenceSource::from(field.source) != evidence.source {
        return false;
    }
    let value = &evidence.value;
    // Only an array or an object has a composite value: a scalar's kind
    // says so without a second lookup of its path (most evidence is a
    // version or a capability, checked on every replay of a finding).
    let composite = match field.kind {
        FieldKind::Array | FieldKind::Object => fields.composite(&evidence.path),
        _ => None,
    };
    match (composite, field.kind, field.text.as_deref()) {
        (Some(v), _, _) => v == value,
        (None, FieldKind::Number, Some(t)) => match t.parse::<serde_json::Number>() {
            Ok(n) => matches!(value, Value::Number(m) if *m == n),
            Err(_) => value.is_null(),
        },
        (None, FieldKind::Bool, Some(t)) => *value == Value::Bool(t == "true"),
        (None, _, Some(t)) => value.as_str() == Some(t),
        (None, _, None) => value.is_null(),
    }
}

/// Turns a matched rule's raw output into a finding.
pub fn render(meta: &RuleMeta, raw: &RawOutput, fields: &FieldMap) -> Result<Finding, RenderError> {
    let params = Params::resolve(&raw.params, fields)?;
    let evidence = raw
        .evidence
        .iter()
        .map(|path| {
            evidence_for(fields, path).ok_or_else(|| RenderError::EvidenceMissing(path.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let selected: Vec<&Remedy> = if raw.remedies.is_empty() {
        meta.remedies.iter().collect()
    } else {
        let mut seen = Vec::with_capacity(raw.remedies.len());
        for &i in &raw.remedies {
            let r = meta
                .remedies
                .get(i as usize)
                .ok_or(RenderError::NoSuchRemedy { index: i, count: meta.remedies.len() })?;
            if !seen.iter().any(|s: &&Remedy| std::ptr::eq(*s, r)) {
                seen.push(r);
            }
        }
        seen
    };
    let remedies = selected
        .into_iter()
        .map(|r| {
            Ok(Remedy {
                summary: params.substitute(&r.summary)?,
                actions: r
                    .actions
                    .iter()
                    .map(|a| params.substitute_action(a))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect::<Result<Vec<_>, RenderError>>()?;
    Ok(Finding::of(meta, params.substitute(&meta.message)?, remedies, evidence))
}

impl Finding {
    /// A finding of the rule `meta` describes: its rendered message,
    /// remedies and evidence, and the rest as the metadata has it.
    pub fn of(
        meta: &RuleMeta,
        message: String,
        remedies: Vec<Remedy>,
        evidence: Vec<Evidence>,
    ) -> Finding {
        Finding {
            rule_id: meta.id.clone(),
            rule_version: meta.version.clone(),
            severity: meta.severity,
            title: meta.title.clone(),
            message,
            error_signatures: meta.error_signatures.iter().map(|s| s.template.clone()).collect(),
            remedies,
            evidence,
            references: meta.references.clone(),
        }
    }
}

/// A matched rule's parameters with their values: text as the rule set
/// it, a bound field's text as `fields` has it.
struct Params<'a>(Vec<(&'a str, Cow<'a, str>)>);

impl<'a> Params<'a> {
    fn resolve(
        params: &'a [(String, ParamValue)],
        fields: &'a FieldMap,
    ) -> Result<Params<'a>, RenderError> {
        let value = |key: &str, value: &'a ParamValue| match value {
            ParamValue::Text(text) => Ok(Cow::Borrowed(text.as_str())),
            ParamValue::Field(path) => fields.get(path).and_then(|f| f.text).ok_or_else(|| {
                RenderError::ParamFieldMissing { key: key.to_owned(), path: path.clone() }
            }),
        };
        params
            .iter()
            .map(|(k, v)| Ok((k.as_str(), value(k, v)?)))
            .collect::<Result<_, _>>()
            .map(Params)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| v.as_ref())
    }

    /// Replaces `{name}` by its parameter; `{{` and `}}` are literal braces.
    fn substitute(&self, template: &str) -> Result<String, RenderError> {
        crate::template::fill_placeholders(template, |name| {
            self.get(name)
                .map(Cow::Borrowed)
                .ok_or_else(|| RenderError::UnknownParam(name.to_owned()))
        })
    }

    /// An action with every text field's placeholders substituted. One arm
    /// per variant, so a new action kind must say here which of its fields
    /// are text (the compiler refuses a missing arm); a render used to go
    /// through a JSON value and back, which was most of a matched rule's
    /// render time.
    fn substitute_action(&self, action: &Action) -> Result<Action, RenderError> {
        let text = |t: &str| self.substitute(t);
        let optional = |t: &Option<String>| t.as_deref().map(text).transpose();
        Ok(match action {
            Action::UpgradePackage { package, to } => {
                Action::UpgradePackage { package: text(package)?, to: text(to)? }
            }
            Action::PinPackage { package, version } => {
                Action::PinPackage { package: text(package)?, version: text(version)? }
            }
            Action::RemovePackage { package } => Action::RemovePackage { package: text(package)? },
            Action::SetEnv { name, value } => {
                Action::SetEnv { name: text(name)?, value: text(value)? }
            }
            Action::UnsetEnv { name } => Action::UnsetEnv { name: text(name)? },
            Action::AddFlag { tool, flag, value } => {
                Action::AddFlag { tool: text(tool)?, flag: text(flag)?, value: optional(value)? }
            }
            Action::ChangeImage { image } => Action::ChangeImage { image: text(image)? },
            Action::UpgradeDriver { to } => Action::UpgradeDriver { to: text(to)? },
            Action::ChangeCuda { version } => Action::ChangeCuda { version: text(version)? },
            Action::BuildFromSource { package, torch_cuda_arch_list } => Action::BuildFromSource {
                package: text(package)?,
                torch_cuda_arch_list: torch_cuda_arch_list
                    .iter()
                    .map(|a| text(a))
                    .collect::<Result<_, _>>()?,
            },
            Action::InstallTool { tool, version } => {
                Action::InstallTool { tool: text(tool)?, version: optional(version)? }
            }
            Action::SetWorkload { field, value } => {
                Action::SetWorkload { field: text(field)?, value: self.workload_value(value)? }
            }
            Action::SetHost { field, value } => {
                Action::SetHost { field: text(field)?, value: self.workload_value(value)? }
            }
            Action::ChangeAccelerator { model, count } => {
                Action::ChangeAccelerator { model: text(model)?, count: *count }
            }
            Action::ChangeHealthCheck { endpoint, verifies_output } => Action::ChangeHealthCheck {
                endpoint: text(endpoint)?,
                verifies_output: *verifies_output,
            },
        })
    }

    /// `set_workload.value`, the one JSON-typed action field: a
    /// whole-string placeholder whose parameter is a number or boolean
    /// becomes that value (`"{tp}"` → `4`); any other string inside it is
    /// text with placeholders.
    fn workload_value(&self, value: &Value) -> Result<Value, RenderError> {
        if let Value::String(s) = value {
            let whole = s
                .strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .filter(|n| !n.contains(['{', '}']));
            if let Some(p) = whole.and_then(|name| self.get(name))
                && let Ok(v @ (Value::Number(_) | Value::Bool(_))) =
                    serde_json::from_str::<Value>(p)
            {
                return Ok(v);
            }
        }
        let mut value = value.clone();
        self.substitute_value(&mut value)?;
        Ok(value)
    }

    fn substitute_value(&self, value: &mut Value) -> Result<(), RenderError> {
        match value {
            Value::String(s) => *s = self.substitute(s)?,
            Value::Array(items) => items.iter_mut().try_for_each(|v| self.substitute_value(v))?,
            Value::Object(members) => {
                members.values_mut().try_for_each(|v| self.substitute_value(v))?
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameters set with `param` only.
    fn text_params(params: &[(String, String)]) -> Params<'_> {
        Params(params.iter().map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str()))).collect())
    }

    #[test]
    fn a_bound_parameter_renders_the_fields_text_and_the_last_setting_wins() {
        let m = crate::parse_manifest(
            br#"{"manifest_version":1,"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let fields = crate::Prepared::new(m).fields;
        let params = vec![
            ("v".to_owned(), ParamValue::Text("typed".to_owned())),
            ("v".to_owned(), ParamValue::Field("packages.vllm.version".to_owned())),
            ("w".to_owned(), ParamValue::Field("packages.vllm.version".to_owned())),
            ("w".to_owned(), ParamValue::Text("typed".to_owned())),
        ];
        let p = Params::resolve(&params, &fields).expect("every field is there");
        assert_eq!(p.substitute("{v} {w}").as_deref(), Ok("0.27.1 typed"));
        let missing =
            vec![("v".to_owned(), ParamValue::Field("packages.torch.version".to_owned()))];
        assert_eq!(
            Params::resolve(&missing, &fields).err(),
            Some(RenderError::ParamFieldMissing {
                key: "v".into(),
                path: "packages.torch.version".into()
            })
        );
        let composite = vec![("v".to_owned(), ParamValue::Field("packages".to_owned()))];
        assert!(Params::resolve(&composite, &fields).is_err(), "an object has no text");
    }

    #[test]
    fn placeholders_are_substituted_and_braces_escaped() {
        let params =
            vec![("cc".to_owned(), "7.5".to_owned()), ("gpu".to_owned(), "T4G".to_owned())];
        let p = text_params(&params);
        assert_eq!(
            p.substitute("{gpu} has {cc} {{literal}}").as_deref(),
            Ok("T4G has 7.5 {literal}")
        );
        assert_eq!(p.substitute("{nope}"), Err(RenderError::UnknownParam("nope".into())));
    }

    #[test]
    fn numeric_parameters_stay_text_in_text_fields() {
        let params = vec![("v".to_owned(), "0.28".to_owned()), ("tp".to_owned(), "4".to_owned())];
        let p = text_params(&params);
        let up = Action::UpgradePackage { package: "vllm".into(), to: "{v}".into() };
        assert_eq!(
            p.substitute_action(&up),
            Ok(Action::UpgradePackage { package: "vllm".into(), to: "0.28".into() })
        );
        let flag = Action::AddFlag {
            tool: "vllm".into(),
            flag: "--tensor-parallel-size".into(),
            value: Some("{tp}".into()),
        };
        assert!(p.substitute_action(&flag).is_ok());
    }

    #[test]
    fn evidence_holds_exactly_where_evidence_for_gives_it_again() {
        use crate::{Prepared, parse_manifest};
        let prepared = |text: &str| Prepared::new(parse_manifest(text.as_bytes()).expect("valid"));
        let a = prepared(
            r#"{"manifest_version":1,"accelerators":[{"vendor":"nvidia","model":"NVIDIA T4G","memory_mib":15360}],
                "host":{"arch":"aarch64","memory_mib":65536},"workload":{"head_dims":[256,512],"dtype":"bfloat16"},
                "env":{"FLAG":"1"},"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        );
        let paths = [
            "accelerators.0.compute_capability",
            "accelerators.0.memory_mib",
            "host.memory_mib",
            "workload.head_dims",
            "workload.head_dims.1",
            "workload.dtype",
            "env.FLAG",
            "packages.vllm",
            "packages.vllm.version",
            "accelerators",
        ];
        for path in paths {
            let e = evidence_for(&a.fields, path).unwrap_or_else(|| panic!("{path}"));
            assert!(evidence_holds(&a.fields, &e), "{path}: {e:?}");
        }
        // Another machine: each value changed, or the same value from another source.
        let b = prepared(
            r#"{"manifest_version":1,"accelerators":[{"vendor":"nvidia","model":"NVIDIA T4G","compute_capability":"7.5","memory_mib":15361}],
                "host":{"arch":"aarch64","memory_mib":131072},"workload":{"head_dims":[256,256],"dtype":"float16"},
                "env":{"FLAG":"2"},"packages":[{"name":"vllm","version":"0.27.2"}]}"#,
        );
        for path in paths {
            let e = evidence_for(&a.fields, path).expect("present");
            let again = evidence_for(&b.fields, path);
            assert_eq!(
                evidence_holds(&b.fields, &e),
                again.as_ref() == Some(&e),
                "{path}: {again:?}"
            );
            assert!(!evidence_holds(&b.fields, &e), "{path} should differ on the second machine");
        }
    }

    /// The direct substitution gives what the JSON round trip it replaced
    /// gave (substitute every string of the action's JSON form, then read
    /// it back), for every action kind, with placeholders in every text
    /// field, escaped braces, and a whole-placeholder workload value.
    #[test]
    fn action_substitution_equals_the_json_round_trip() {
        fn round_trip(p: &Params<'_>, action: &Action) -> Result<Action, RenderError> {
            // The code this replaced, as it was.
            if let Action::SetWorkload { field, value: Value::String(s) } = action {
                let whole = s
                    .strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .filter(|n| !n.contains(['{', '}']));
                if let Some(param) = whole.and_then(|name| p.get(name))
                    && let Ok(v @ (Value::Number(_) | Value::Bool(_))) =
                        serde_json::from_str::<Value>(param)
                {
                    return Ok(Action::SetWorkload { field: p.substitute(field)?, value: v });
                }
            }
            let mut value = serde_json::to_value(action).expect("serialises");
            p.substitute_value(&mut value)?;
            Ok(serde_json::from_value(value).expect("reads back"))
        }
        let params = vec![
            ("pkg".to_owned(), "vllm".to_owned()),
            ("v".to_owned(), "0.28.1".to_owned()),
            ("tp".to_owned(), "4".to_owned()),
            ("on".to_owned(), "true".to_owned()),
            ("cc".to_owned(), "7.5".to_owned()),
        ];
        let p = text_params(&params);
        let t = |s: &str| s.to_owned();
        let actions = [
            Action::UpgradePackage { package: t("{pkg}"), to: t("{v}") },
            Action::PinPackage { package: t("{pkg}"), version: t("=={v} {{x}}") },
            Action::RemovePackage { package: t("{pkg}-ext") },
            Action::SetEnv { name: t("VAR_{tp}"), value: t("{cc};{on}") },
            Action::UnsetEnv { name: t("{pkg}") },
            Action::AddFlag { tool: t("vllm"), flag: t("--tp"), value: Some(t("{tp}")) },
            Action::AddFlag { tool: t("{pkg}"), flag: t("--x"), value: None },
            Action::ChangeImage { image: t("img:{v}") },
            Action::UpgradeDriver { to: t("{v}") },
            Action::ChangeCuda { version: t("12.{tp}") },
            Action::BuildFromSource {
                package: t("{pkg}"),
                torch_cuda_arch_list: vec![t("{cc}"), t("8.0")],
            },
            Action::BuildFromSource { package: t("{pkg}"), torch_cuda_arch_list: vec![] },
            Action::InstallTool { tool: t("nvcc"), version: Some(t("{v}")) },
            Action::InstallTool { tool: t("{pkg}"), version: None },
            Action::SetWorkload {
                field: t("tensor_parallel_size"),
                value: Value::String(t("{tp}")),
            },
            Action::SetWorkload { field: t("enforce_eager"), value: Value::String(t("{on}")) },
            Action::SetWorkload { field: t("dtype"), value: Value::String(t("{pkg}-{cc}")) },
            Action::SetWorkload {
                field: t("{pkg}"),
                value: serde_json::json!({"a": ["{v}", 1, {"b": "{cc}"}], "c": null}),
            },
            Action::ChangeAccelerator { model: t("{pkg}"), count: Some(2) },
            Action::ChangeAccelerator { model: t("A10G"), count: None },
            Action::ChangeHealthCheck { endpoint: t("/v{tp}/health"), verifies_output: true },
        ];
        for action in &actions {
            let direct = p.substitute_action(action);
            assert_eq!(direct, round_trip(&p, action), "{action:?}");
            assert!(direct.is_ok(), "{action:?}");
        }
        // An unknown placeholder is refused in every text field alike.
        for action in [
            Action::AddFlag { tool: t("vllm"), flag: t("--tp"), value: Some(t("{nope}")) },
            Action::SetWorkload { field: t("x"), value: serde_json::json!(["{nope}"]) },
            Action::BuildFromSource { package: t("p"), torch_cuda_arch_list: vec![t("{nope}")] },
        ] {
            assert_eq!(p.substitute_action(&action), Err(RenderError::UnknownParam(t("nope"))));
            assert_eq!(round_trip(&p, &action), Err(RenderError::UnknownParam(t("nope"))));
        }
    }

    #[test]
    fn whole_placeholder_becomes_a_number_in_actions() {
        let params = vec![("tp".to_owned(), "4".to_owned())];
        let a = Action::SetWorkload {
            field: "tensor_parallel_size".into(),
            value: Value::String("{tp}".into()),
        };
        let out = text_params(&params).substitute_action(&a).expect("substitutes");
        assert_eq!(
            out,
            Action::SetWorkload { field: "tensor_parallel_size".into(), value: Value::from(4) }
        );
    }
}

/// The answer to one check (the body of `POST /v1/check`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckResponse {
    /// Breakages that apply, worst first (a replayed one kept as the text
    /// the memo holds, which the server copies into its answer).
    pub findings: Vec<LazyFinding>,
    /// Rules that need more of the manifest to decide.
    pub undetermined: Vec<Undetermined>,
    /// Rules that failed; nothing else was affected.
    pub rule_errors: Vec<RuleError>,
    /// The rule set that answered.
    pub ruleset_revision: String,
    /// Counts and time.
    pub stats: CheckStats,
    /// Values the registry filled in from its tables, each with the table,
    /// what it was asked and the source of the value (an addition to the
    /// v1 answer: clients that do not know it ignore it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enriched: Vec<Enriched>,
    /// Values the tables could not resolve (a GPU name, a model id): the
    /// rules saw nothing filled from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<crate::enrich::Unresolved>,
    /// True when the check was asked as of a revision (`?revision=N`)
    /// other than the one the server serves (an older one, or one this
    /// replica has not loaded yet): `ruleset_revision` is that revision,
    /// and the answer is the one the registry gave at it. Left out when
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_of: bool,
}

/// A value a table filled in: the field and its value, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Enriched {
    /// The field, its value, and `source: "enriched"`.
    #[serde(flatten)]
    pub evidence: Evidence,
    /// `gpus`, `instances`, `models` or `releases`.
    pub table: String,
    /// What the table was asked: the GPU name, model id or release.
    pub key: String,
    /// Where the table's value was read.
    pub reference: String,
}

impl Enriched {
    /// The answer's record of every value `enrichment` filled in `fields`.
    pub fn all(fields: &FieldMap, enrichment: &crate::enrich::Enrichment) -> Vec<Enriched> {
        enrichment
            .entries
            .iter()
            .filter_map(|e| {
                Some(Enriched {
                    evidence: evidence_for(fields, &e.path)?,
                    table: e.table.clone(),
                    key: e.key.clone(),
                    reference: e.reference.clone(),
                })
            })
            .collect()
    }
}

/// How much work a check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckStats {
    /// Rules in the rule set.
    pub rules_total: u32,
    /// Rules evaluated (the candidates whose selectors held).
    pub rules_evaluated: u32,
    /// Time spent, in microseconds.
    pub elapsed_us: u64,
}

impl CheckResponse {
    /// Whether any finding has error severity (the CLI exits 1 then).
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity() == Severity::Error)
    }
}
