//! The reviewer's lint: what a maintainer would refuse in a rule's
//! metadata and test cases, before reading its code. One implementation,
//! called by `pitfall rule lint`, by `pitfall rule build`, by the engine at
//! load (metadata only) and by the server's publish pipeline, so the same
//! broken rule gets the same messages everywhere.

use std::fmt;

use super::actions::{Action, ApplyError, apply};
use super::manifest::Manifest;
use super::meta::{
    COMPONENTS, ErrorSignature, Expect, RuleMeta, Severity, TestCase, read_meta_section,
};
use super::normalize::current_package_name;
use super::selector::{Selector, split_package};
use pitfall_version::name::package_key;

/// One problem the lint found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintIssue {
    /// A stable code for tools (`title-length`, `reference-url`, ...).
    pub code: &'static str,
    /// The field it is about (`title`, `remedies[0].actions`, `tests`).
    pub field: String,
    /// What is wrong and how to fix it, for people. Starts with the field.
    pub message: String,
}

impl fmt::Display for LintIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn issue(code: &'static str, field: impl Into<String>, message: String) -> LintIssue {
    LintIssue { code, field: field.into(), message }
}

/// The rule's id format: 3 to 64 of `a-z`, `0-9`, `-`, with no dash at
/// either end (ids appear in URLs and crate names).
pub fn id_is_valid(id: &str) -> bool {
    (3..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
}

/// The example rule `pitfall rule new` writes: its texts are the
/// example's, not a contributor's, so the lint refuses a rule that still
/// has them (the scaffold builds and passes its cases as written, and
/// would otherwise publish as it is).
pub mod scaffold {
    /// The example's title.
    pub const TITLE: &str = "torch before 2.3 fails to import with NumPy 2";
    /// The example's summary.
    pub const SUMMARY: &str = "torch wheels before 2.3 were compiled against the NumPy 1.x C API. NumPy 2.0 changed that ABI, so importing such a torch with NumPy 2 installed prints a warning and then fails (or crashes) as soon as torch touches NumPy arrays.";
    /// The example's message.
    pub const MESSAGE: &str =
        "torch {torch} was built against NumPy 1.x and cannot run with NumPy {numpy}.";
    /// The author `rule new` writes when not given `--author`.
    pub const AUTHOR: &str = "your name";
}

/// The fields of a scaffold not yet made the contributor's own, with what
/// to do about each.
fn lint_scaffold(meta: &RuleMeta, out: &mut Vec<LintIssue>) {
    let untouched = [
        (meta.title == scaffold::TITLE, "title", "say what breaks in your rule, in one line"),
        (
            meta.summary == scaffold::SUMMARY,
            "summary",
            "say what breaks, when and why, from your sources",
        ),
        (
            meta.message == scaffold::MESSAGE,
            "message",
            "write the finding users read, with {placeholders} for the rule's parameters",
        ),
        (
            meta.author.trim() == scaffold::AUTHOR,
            "author",
            "put your name (or pass --author to `pitfall rule new`)",
        ),
    ];
    for (_, field, what) in untouched.into_iter().filter(|(same, _, _)| *same) {
        out.push(issue(
            "scaffold-untouched",
            field,
            format!("{field}: still the example's from `pitfall rule new`; {what}"),
        ));
    }
}

/// Every check: the metadata's, then the test cases'.
///
/// An untouched scaffold is refused here, by `rule lint`, `rule build` and
/// publish, but not by [`lint_meta`]: the example `rule new` writes loads
/// and runs its cases as it is, so a contributor can see it work first.
pub fn lint(meta: &RuleMeta, cases: &[TestCase]) -> Vec<LintIssue> {
    let mut out = lint_meta(meta);
    lint_scaffold(meta, &mut out);
    lint_renamed_packages(meta, &mut out);
    out.extend(lint_cases(cases));
    out
}

/// A package its selectors or reads name by an old name
/// ([`current_package_name`]). The host finds it under either, so this is
/// refused where a rule is written (`rule lint`, `rule build`, publish),
/// not at load: rules that name each package one way can be searched by
/// it, and a rule published before the rename still loads and runs.
fn lint_renamed_packages(meta: &RuleMeta, out: &mut Vec<LintIssue>) {
    let selected = meta.applies_to.iter().enumerate().filter_map(|(i, s)| {
        let value = s.trim().strip_prefix("package:")?;
        Some((format!("applies_to[{i}]"), split_package(value.trim()).0))
    });
    let read = meta.reads.iter().enumerate().filter_map(|(i, path)| {
        let below = path.strip_prefix("packages.")?;
        Some((format!("reads[{i}]"), below.split('.').next().unwrap_or(below)))
    });
    for (field, name) in selected.chain(read) {
        if let Some(current) = current_package_name(&package_key(name)) {
            let message = format!(
                "{field}: {name:?} is the old name of {current:?}; name the package {current:?} (the host files either name under it)"
            );
            out.push(issue("package-renamed", field, message));
        }
    }
}

/// The metadata checks (ABI.md §11). The engine refuses a module with any
/// of these at load.
pub fn lint_meta(meta: &RuleMeta) -> Vec<LintIssue> {
    let mut out = Vec::new();
    if !id_is_valid(&meta.id) {
        out.push(issue(
            "id-format",
            "id",
            format!("id {:?}: use 3 to 64 lowercase letters, digits and inner dashes", meta.id),
        ));
    }
    if semver::Version::parse(&meta.version).is_err() {
        out.push(issue(
            "version-format",
            "version",
            format!("version {:?}: not a semantic version (e.g. 1.0.0)", meta.version),
        ));
    }
    let title_chars = meta.title.chars().count();
    if !(10..=120).contains(&title_chars) {
        out.push(issue(
            "title-length",
            "title",
            format!("title: {title_chars} characters, use 10 to 120"),
        ));
    }
    if meta.summary.trim().len() < 20 {
        out.push(issue(
            "summary-length",
            "summary",
            "summary: say what breaks, when and why (at least 20 characters)".into(),
        ));
    }
    if meta.message.trim().is_empty() {
        out.push(issue("message-empty", "message", "message: empty".into()));
    }
    if meta.author.trim().is_empty() {
        out.push(issue("author-empty", "author", "author: empty".into()));
    }
    for (i, s) in meta.applies_to.iter().enumerate() {
        let field = format!("applies_to[{i}]");
        match Selector::parse(s) {
            Err(e) => out.push(issue("selector-invalid", field, format!("applies_to: {e}"))),
            Ok(selector) if selector.admits_nothing() => out.push(issue(
                "selector-empty-range",
                field,
                format!("applies_to: selector {s:?}: the range admits no version, so the rule never runs"),
            )),
            Ok(_) => {}
        }
    }
    // An error-severity rule is one a user hits as an error: reviewers
    // want the text they would search for.
    if meta.severity == Severity::Error && meta.error_signatures.is_empty() {
        out.push(issue(
            "severity-needs-signature",
            "error_signatures",
            "error_signatures: an error-severity rule names the error text users see".into(),
        ));
    }
    for (i, sig) in meta.error_signatures.iter().enumerate() {
        lint_signature(i, sig, &mut out);
    }
    if let Some(component) = &meta.component
        && !COMPONENTS.contains(&component.as_str())
    {
        out.push(issue(
            "component-unknown",
            "component",
            format!("component {component:?}: use one of {}", COMPONENTS.join(", ")),
        ));
    }
    if let Some(checked) = &meta.checked
        && !is_date(checked)
    {
        out.push(issue(
            "checked-format",
            "checked",
            format!("checked {checked:?}: the date the boundaries were checked, as YYYY-MM-DD"),
        ));
    }
    if meta.remedies.is_empty() {
        out.push(issue("remedies-missing", "remedies", "remedies: at least one".into()));
    }
    for (i, r) in meta.remedies.iter().enumerate() {
        if r.summary.trim().is_empty() {
            out.push(issue(
                "remedy-summary-empty",
                format!("remedies[{i}].summary"),
                format!("remedies[{i}].summary: empty"),
            ));
        }
        if r.actions.is_empty() {
            out.push(issue(
                "remedy-without-action",
                format!("remedies[{i}].actions"),
                format!("remedies[{i}].actions: at least one machine-applicable action"),
            ));
        }
        for (j, action) in r.actions.iter().enumerate() {
            lint_action(&format!("remedies[{i}].actions[{j}]"), action, &mut out);
        }
    }
    if meta.references.is_empty() {
        out.push(issue(
            "references-missing",
            "references",
            "references: cite at least one source".into(),
        ));
    }
    for (i, r) in meta.references.iter().enumerate() {
        if r.title.trim().is_empty() {
            out.push(issue(
                "reference-title-empty",
                format!("references[{i}].title"),
                format!("references[{i}].title: empty"),
            ));
        }
        if let Some(url) = &r.url
            && !url_is_well_formed(url)
        {
            out.push(issue(
                "reference-url",
                format!("references[{i}].url"),
                format!("references[{i}].url {url:?}: use an https:// address"),
            ));
        }
    }
    out
}

/// An action's values are ones it can apply: versions and specifiers
/// parse, flags are flags of a tool the manifest expresses, fields exist
/// in the manifest contract. Checked by applying it to an empty manifest;
/// an action with a `{placeholder}` is filled in only when a finding is
/// rendered, so it is checked then.
fn lint_action(at: &str, action: &Action, out: &mut Vec<LintIssue>) {
    let text = serde_json::to_string(action).unwrap_or_default();
    if text.contains('{') && text.trim_start_matches('{').contains('{') {
        return;
    }
    if let Err(e) = apply(&mut Manifest::default(), action) {
        let field = match (action, &e) {
            (_, ApplyError::UnknownFlag { .. }) => "flag",
            (_, ApplyError::BadFlagValue { .. }) => "value",
            (_, ApplyError::UnknownWorkloadField(_)) => "field",
            (_, ApplyError::BadWorkloadValue { .. } | ApplyError::BadHostValue { .. }) => "value",
            (Action::PinPackage { .. } | Action::ChangeCuda { .. }, _) => "version",
            (Action::UpgradePackage { .. } | Action::UpgradeDriver { .. }, _) => "to",
            _ => "kind",
        };
        out.push(issue("action-invalid", format!("{at}.{field}"), format!("{at}.{field}: {e}")));
    }
}

/// A signature's template parses and reproduces its example; a template
/// with holes needs an example (the text it was read from), so a
/// template cannot drift from what users see.
fn lint_signature(i: usize, sig: &ErrorSignature, out: &mut Vec<LintIssue>) {
    let field = format!("error_signatures[{i}]");
    if sig.template.trim().is_empty() {
        out.push(issue("signature-empty", field, format!("error_signatures[{i}]: empty")));
        return;
    }
    let template = match sig.parse() {
        Ok(t) => t,
        Err(e) => {
            out.push(issue(
                "signature-template",
                field,
                format!("error_signatures[{i}].template: {e}"),
            ));
            return;
        }
    };
    match &sig.example {
        None if template.has_holes() => out.push(issue(
            "signature-example-missing",
            format!("{field}.example"),
            format!(
                "error_signatures[{i}].example: a template with holes needs the verbatim text it was read from"
            ),
        )),
        Some(example) if template.match_exact(example).is_none() => out.push(issue(
            "signature-example-mismatch",
            format!("{field}.example"),
            format!(
                "error_signatures[{i}]: the template does not reproduce its example (fill each hole with the example's own text): {:?}",
                sig.template
            ),
        )),
        _ => {}
    }
    if let Some(source) = &sig.source
        && !url_is_well_formed(source)
    {
        out.push(issue(
            "signature-source",
            format!("{field}.source"),
            format!("error_signatures[{i}].source {source:?}: use an https:// address"),
        ));
    }
}

/// `YYYY-MM-DD` with a plausible month and day.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let number = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok())
    };
    matches!(
        (parts.as_slice(), parts.get(1).and_then(|m| number(m, 2)), parts.get(2).and_then(|d| number(d, 2))),
        ([y, _, _], Some(Some(1..=12)), Some(Some(1..=31))) if number(y, 4).is_some()
    )
}

/// `https://` and a host: at least one character after the scheme that is
/// not `/`, and no whitespace anywhere.
fn url_is_well_formed(url: &str) -> bool {
    url.len() > 10
        && !url.contains(char::is_whitespace)
        && url
            .strip_prefix("https://")
            .is_some_and(|rest| !rest.starts_with('/') && !rest.is_empty())
}

/// The test-case checks: a case for every outcome a reviewer needs to see
/// (`matched`, `clear` and a `fixed` one proving a remedy works), and each
/// case complete enough to run.
pub fn lint_cases(cases: &[TestCase]) -> Vec<LintIssue> {
    let mut out = Vec::new();
    for (kind, label, why) in [
        (Expect::Matched, "matched", "the breakage detected"),
        (Expect::Clear, "clear", "a stack it does not apply to"),
        (Expect::Fixed, "fixed", "a remedy that clears a matched case"),
    ] {
        if !cases.iter().any(|c| c.expect == kind) {
            out.push(issue(
                "case-missing",
                "tests",
                format!("tests: no case expects `{label}` (add one showing {why})"),
            ));
        }
    }
    for (i, case) in cases.iter().enumerate() {
        match case.expect {
            Expect::Fixed => {
                let from_matched = cases
                    .iter()
                    .any(|c| c.expect == Expect::Matched && Some(&c.name) == case.from.as_ref());
                if !from_matched {
                    out.push(issue(
                        "case-fixed-from",
                        format!("tests[{i}].from"),
                        format!("tests[{i}] {:?}: `from` must name a `matched` case", case.name),
                    ));
                }
            }
            _ if case.manifest.is_none() => out.push(issue(
                "case-without-manifest",
                format!("tests[{i}].manifest"),
                format!(
                    "tests[{i}] {:?}: a `{}` case needs a manifest",
                    case.name,
                    expect_name(case.expect)
                ),
            )),
            _ => {}
        }
    }
    out
}

fn expect_name(e: Expect) -> &'static str {
    match e {
        Expect::Matched => "matched",
        Expect::Clear => "clear",
        Expect::Undetermined => "undetermined",
        Expect::Fixed => "fixed",
    }
}

/// The issues as one line, as the engine and the server report them:
/// the messages joined by `; `.
pub fn summary(issues: &[LintIssue]) -> String {
    issues.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("; ")
}

/// Section `pitfall.meta`: JSON [`RuleMeta`] with no lint problem
/// ([`RuleMeta::problems`]), whose selectors therefore all parse.
pub fn decode_meta_section(data: &[u8]) -> Result<RuleMeta, String> {
    let meta = read_meta_section(data)?;
    // The reviewer's lint, with the messages `pitfall rule lint` prints.
    let issues = lint_meta(&meta);
    if !issues.is_empty() {
        return Err(summary(&issues));
    }
    Ok(meta)
}

impl RuleMeta {
    /// What a reviewer would refuse in this metadata, one message per
    /// problem; empty when it is well-formed. The messages of
    /// [`lint_meta`], which also gives each a code and a field.
    pub fn problems(&self) -> Vec<String> {
        lint_meta(self).into_iter().map(|i| i.message).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_year_month_day() {
        assert!(is_date("2026-12-06"));
        for bad in ["2026-13-01", "2026-12-32", "26-12-06", "2026/12/06", "2026-12-6", ""] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn urls_need_https_and_a_host() {
        assert!(url_is_well_formed("https://github.com/vllm-project/vllm/issues/1"));
        for bad in [
            "http://github.com/x/y",
            "https:///etc/passwd",
            "https://a b.org/x",
            "ftp://x.org/abc",
            "https://x",
        ] {
            assert!(!url_is_well_formed(bad), "{bad}");
        }
    }
}
