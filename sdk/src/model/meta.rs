//! Rule metadata and embedded test cases: what a module carries in its
//! custom sections, readable without running any of its code.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::actions::Action;

/// How bad a finding is. `error` only where the stack fails; estimates and
/// advice are `warning` or `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Advice or an estimate; nothing fails.
    Info,
    /// Degraded, slow or fragile; may fail under some conditions.
    Warning,
    /// The stack fails.
    Error,
}

impl Severity {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A rule's self-description (custom section `pitfall.meta`, JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleMeta {
    /// Stable id: lowercase ASCII letters, digits and `-`, 3 to 64 characters.
    pub id: String,
    /// Semantic version of this rule.
    pub version: String,
    /// One line, what breaks.
    pub title: String,
    /// How bad it is.
    pub severity: Severity,
    /// A paragraph: what breaks, when, and why.
    pub summary: String,
    /// The finding's message; `{name}` is replaced by the rule's parameter `name`.
    pub message: String,
    /// Selectors that must all hold for the rule to be evaluated
    /// (`package:vllm`, `accelerator:nvidia`, `arch:aarch64`, `engine:vllm`, `container`).
    #[serde(default)]
    pub applies_to: Vec<String>,
    /// Manifest field paths the rule reads (documentation and review).
    #[serde(default)]
    pub reads: Vec<String>,
    /// The exact text users see when they hit the breakage.
    #[serde(default)]
    pub error_signatures: Vec<String>,
    /// What fixes it, as text and as machine-applicable actions.
    pub remedies: Vec<Remedy>,
    /// Where the facts come from.
    pub references: Vec<Reference>,
    /// Who wrote the rule.
    pub author: String,
}

/// One way to fix a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remedy {
    /// What to do, for people; `{name}` placeholders allowed.
    pub summary: String,
    /// The same, for machines; string values may hold `{name}` placeholders.
    #[serde(default)]
    pub actions: Vec<Action>,
}

/// A source for the rule's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// What it is, e.g. `vllm-project/vllm issue 1157`.
    pub title: String,
    /// Where to read it (`https://...`), when it has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// What a test case expects of the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// The rule reports its finding.
    Matched,
    /// The rule reports nothing.
    Clear,
    /// The rule cannot decide; `missing` lists the fields it needs.
    Undetermined,
    /// The manifest of case `from` with remedy `remedy` applied must be clear.
    Fixed,
}

/// One embedded test case (custom section `pitfall.tests`, a JSON array).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Short description, unique within the rule.
    pub name: String,
    /// The expected outcome.
    pub expect: Expect,
    /// The manifest; not used by `fixed` cases, which take their case's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Value>,
    /// For `fixed`: the name of the `matched` case to repair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// For `fixed`: which remedy (index into the finding's remedies) to apply; 0 by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<usize>,
    /// For `undetermined`: the field paths the rule must name as missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// For `matched`: text the rendered message must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
}

/// The names of the custom sections of ABI v1.
pub mod sections {
    /// The ABI version, as ASCII decimal digits (`1`).
    pub const ABI: &str = "pitfall.abi";
    /// [`super::RuleMeta`] as JSON.
    pub const META: &str = "pitfall.meta";
    /// `[`[`super::TestCase`]`]` as JSON.
    pub const TESTS: &str = "pitfall.tests";
}

/// Section `pitfall.abi`: the ABI version as ASCII decimal digits, which
/// must be one of `supported`. The error is the message, for people.
pub fn decode_abi_section(data: &[u8], supported: &[u32]) -> Result<u32, String> {
    let version: u32 = std::str::from_utf8(data)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("section `{}` must hold a decimal version", sections::ABI))?;
    if !supported.contains(&version) {
        return Err(format!("ABI version {version} is not supported (this host runs {supported:?})"));
    }
    Ok(version)
}

/// Section `pitfall.meta`: JSON [`RuleMeta`] with no lint problem
/// ([`RuleMeta::problems`]), whose selectors therefore all parse.
pub fn decode_meta_section(data: &[u8]) -> Result<RuleMeta, String> {
    let meta: RuleMeta = serde_json::from_slice(data).map_err(|e| format!("section `{}`: {e}", sections::META))?;
    let problems = meta.problems();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(meta)
}

/// Section `pitfall.tests`: a JSON array of [`TestCase`].
pub fn decode_tests_section(data: &[u8]) -> Result<Vec<TestCase>, String> {
    serde_json::from_slice(data).map_err(|e| format!("section `{}`: {e}", sections::TESTS))
}

impl RuleMeta {
    /// What a reviewer would refuse in this metadata, one message per
    /// problem; empty when it is well-formed. The engine refuses modules
    /// with problems at load, and the CLI's lint shows the same messages.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let id_ok = (3..=64).contains(&self.id.len())
            && self.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !self.id.starts_with('-')
            && !self.id.ends_with('-');
        if !id_ok {
            out.push(format!(
                "id {:?}: use 3 to 64 lowercase letters, digits and inner dashes",
                self.id
            ));
        }
        if semver::Version::parse(&self.version).is_err() {
            out.push(format!("version {:?}: not a semantic version (e.g. 1.0.0)", self.version));
        }
        if !(10..=120).contains(&self.title.chars().count()) {
            out.push(format!("title: {} characters, use 10 to 120", self.title.chars().count()));
        }
        if self.summary.trim().len() < 20 {
            out.push("summary: say what breaks, when and why (at least 20 characters)".into());
        }
        if self.message.trim().is_empty() {
            out.push("message: empty".into());
        }
        if self.author.trim().is_empty() {
            out.push("author: empty".into());
        }
        for s in &self.applies_to {
            match super::selector::Selector::parse(s) {
                Err(e) => out.push(format!("applies_to: {e}")),
                Ok(selector) if selector.admits_nothing() => {
                    out.push(format!("applies_to: selector {s:?}: the range admits no version, so the rule never runs"));
                }
                Ok(_) => {}
            }
        }
        if self.severity == Severity::Error && self.error_signatures.is_empty() {
            out.push("error_signatures: an error-severity rule names the error text users see".into());
        }
        if self.error_signatures.iter().any(|s| s.trim().is_empty()) {
            out.push("error_signatures: an entry is empty".into());
        }
        if self.remedies.is_empty() {
            out.push("remedies: at least one".into());
        }
        for (i, r) in self.remedies.iter().enumerate() {
            if r.summary.trim().is_empty() {
                out.push(format!("remedies[{i}].summary: empty"));
            }
            if r.actions.is_empty() {
                out.push(format!("remedies[{i}].actions: at least one machine-applicable action"));
            }
        }
        if self.references.is_empty() {
            out.push("references: cite at least one source".into());
        }
        for (i, r) in self.references.iter().enumerate() {
            if r.title.trim().is_empty() {
                out.push(format!("references[{i}].title: empty"));
            }
            if let Some(url) = &r.url {
                let ok = url.starts_with("https://") && url.len() > 10 && !url.contains(char::is_whitespace);
                if !ok {
                    out.push(format!("references[{i}].url {url:?}: use an https:// address"));
                }
            }
        }
        out
    }
}
