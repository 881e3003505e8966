//! Rule metadata and embedded test cases: what a module carries in its
//! custom sections, readable without running any of its code.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::actions::Action;

/// How bad a finding is. `error` only where the stack fails; estimates and
/// advice are `warning` or `info`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
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
    /// The text users see when they hit the breakage, as templates with
    /// typed holes (`Your {gpu} GPU has compute capability {capability}.`),
    /// each with the real text it was read from.
    #[serde(default)]
    pub error_signatures: Vec<ErrorSignature>,
    /// What fixes it, as text and as machine-applicable actions.
    pub remedies: Vec<Remedy>,
    /// Where the facts come from.
    pub references: Vec<Reference>,
    /// Who wrote the rule.
    pub author: String,
    /// The main component the breakage is in (`vllm`, `torch`,
    /// `nvidia-driver`, ...; [`COMPONENTS`]), for the catalogue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The date (`YYYY-MM-DD`) the rule's version and capability
    /// boundaries were last checked at their sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<String>,
}

/// The components a rule's `component` names.
pub const COMPONENTS: &[&str] = &[
    "vllm",
    "sglang",
    "tgi",
    "ollama",
    "llama.cpp",
    "tensorrt-llm",
    "tensorrt",
    "torch",
    "torchvision",
    "transformers",
    "flash-attn",
    "flashinfer",
    "xformers",
    "bitsandbytes",
    "deepspeed",
    "triton",
    "numpy",
    "onnxruntime",
    "tensorflow",
    "jax",
    "nccl",
    "cuda",
    "nvidia-driver",
    "container-toolkit",
    "fabricmanager",
    "docker",
    "rocm",
    "os",
    "python",
    "hardware",
    "health-check",
];

/// One error text users see: a template with typed holes
/// ([`crate::template`]), the real text it was read from, and where.
/// A plain string (the form before templates) reads as a template that
/// matches that text literally, with the text as its example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorSignature {
    /// The text with holes: `{int}`, `{number}`, `{version}`,
    /// `{capability}`, `{gpu}`, `{path}`, `{hex}`, `{word}`, `{text}`;
    /// `{{` and `}}` are literal braces.
    pub template: String,
    /// The verbatim text a user saw, which the template must reproduce
    /// with its holes filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    /// Where the example was read (a report's or a source file's URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl ErrorSignature {
    /// A signature that is `text` itself, matched literally.
    pub fn literal(text: &str) -> ErrorSignature {
        ErrorSignature {
            template: crate::template::escape(text),
            example: Some(text.to_owned()),
            source: None,
        }
    }

    /// The parsed template.
    pub fn parse(&self) -> Result<crate::template::Template, crate::template::TemplateError> {
        crate::template::Template::parse(&self.template)
    }
}

impl<'de> Deserialize<'de> for ErrorSignature {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            template: String,
            #[serde(default)]
            example: Option<String>,
            #[serde(default)]
            source: Option<String>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Template(Written),
        }
        Ok(match Form::deserialize(d)? {
            Form::Text(text) => ErrorSignature::literal(&text),
            Form::Template(w) => {
                ErrorSignature { template: w.template, example: w.example, source: w.source }
            }
        })
    }
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
    /// What the source establishes for the rule (a boundary, a wording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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
    /// For `undetermined`: the field paths the rule must name (as needed:
    /// the report says whether each is missing or there but unreadable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// For `undetermined`: the field paths that must be reported as
    /// unreadable, there in the manifest but unusable (a version that is
    /// not PEP 440).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    /// For `matched`: text the rendered message must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
    /// The public report this case's manifest was built from (URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
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
        return Err(format!(
            "ABI version {version} is not supported (this host runs {supported:?})"
        ));
    }
    Ok(version)
}

/// Section `pitfall.meta` read as JSON [`RuleMeta`], without the lint;
/// every problem reading it, joined by `; `.
pub fn read_meta_section(data: &[u8]) -> Result<RuleMeta, String> {
    read_json(data).map_err(|e| format!("section `{}`: {e}", sections::META))
}

/// Section `pitfall.tests`: a JSON array of [`TestCase`].
pub fn decode_tests_section(data: &[u8]) -> Result<Vec<TestCase>, String> {
    read_json(data).map_err(|e| format!("section `{}`: {e}", sections::TESTS))
}

/// JSON text read as `T`, or every problem in it joined by `; `
/// ([`super::read::read_all`]).
fn read_json<T: serde::de::DeserializeOwned>(data: &[u8]) -> Result<T, String> {
    let value: Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    super::read::read_all(value)
        .map_err(|issues| issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
}

/// Parses a rule's embedded metadata and cases.
pub fn parse_embedded(
    meta_json: &[u8],
    tests_json: &[u8],
) -> Result<(RuleMeta, Vec<TestCase>), String> {
    let meta: RuleMeta = read_json(meta_json).map_err(|e| format!("rule.json: {e}"))?;
    let cases: Vec<TestCase> = read_json(tests_json).map_err(|e| format!("tests.json: {e}"))?;
    Ok((meta, cases))
}

/// One rule in the catalogue: what it is about, where its facts come
/// from, and when its boundaries were last checked; generated from the
/// rule's own metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogueEntry {
    /// The rule's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// Its title.
    pub title: String,
    /// How bad its finding is.
    pub severity: Severity,
    /// The component the breakage is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// When its boundaries were checked at their sources (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<String>,
    /// Its references' addresses.
    pub sources: Vec<String>,
    /// How many error texts it recognises.
    pub error_signatures: usize,
}

impl CatalogueEntry {
    /// The entry of the rule `meta` describes.
    pub fn of(meta: &RuleMeta) -> CatalogueEntry {
        CatalogueEntry {
            id: meta.id.clone(),
            version: meta.version.clone(),
            title: meta.title.clone(),
            severity: meta.severity,
            component: meta.component.clone(),
            checked: meta.checked.clone(),
            sources: meta.references.iter().filter_map(|r| r.url.clone()).collect(),
            error_signatures: meta.error_signatures.len(),
        }
    }
}

/// The catalogue of a rule set: every rule's entry, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Catalogue {
    /// The rule set it describes.
    pub ruleset_revision: String,
    /// One entry per rule, sorted by id.
    pub rules: Vec<CatalogueEntry>,
}

impl Catalogue {
    /// The catalogue of the rules `metas` describe.
    pub fn of<'m>(revision: &str, metas: impl Iterator<Item = &'m RuleMeta>) -> Catalogue {
        let mut rules: Vec<CatalogueEntry> = metas.map(CatalogueEntry::of).collect();
        rules.sort_by(|a, b| a.id.cmp(&b.id));
        Catalogue { ruleset_revision: revision.to_owned(), rules }
    }
}
