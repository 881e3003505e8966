//! `pitfall rule new NAME [--dir DIR] [--sdk PATH] [--author A]
//! [--from-report URL] [--error TEXT]`: a rule crate that builds
//! anywhere, not only inside this repo: its own workspace and `rule`
//! profile, the wasm link arguments in `.cargo/config.toml`, the SDK by
//! path (where this binary was built from, unless `--sdk` or
//! `PITFALL_SDK` says otherwise), and a documented example rule written
//! as the SDK README advises (a selector for each package it reads,
//! `version_in`, `param_field`) with matched, fixed, clear and
//! undetermined cases. The example passes its cases as written; the lint
//! refuses its texts (`lint::scaffold`) until they are the contributor's.
//! A report's address becomes the reference, an error text the first
//! signature (a template with holes, checked against the text).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_contract::lint::{id_is_valid, scaffold};

#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The rule's id (3 to 64 of a-z, 0-9 and inner dashes); the crate is `rule-<id>`.
    name: String,
    /// The folder to create (default: ./<NAME>); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The pitfall-sdk folder to depend on.
    #[arg(long, value_name = "PATH", env = "PITFALL_SDK")]
    sdk: Option<PathBuf>,
    /// The rule's author, for rule.json (the lint refuses the default).
    #[arg(long, default_value = scaffold::AUTHOR)]
    author: String,
    /// The public bug report the rule is about (an https:// address): it
    /// becomes the rule's reference, and the source of `--error`'s signature.
    #[arg(long, value_name = "URL")]
    from_report: Option<String>,
    /// The error text users see (as pasted from the report): its first
    /// line becomes the first error signature, with holes where versions,
    /// numbers, paths and addresses are.
    #[arg(long, value_name = "TEXT")]
    error: Option<String>,
}

/// The example's error signature and reference, used when `--error` and
/// `--from-report` do not give the rule its own.
const EXAMPLE_SIGNATURE: &str = r#"    {
      "template": "NumPy {version} as it may crash. To support both 1.x and 2.x",
      "example": "NumPy 2.0.0 as it may crash. To support both 1.x and 2.x",
      "source": "https://github.com/TorchIO-project/torchio/pull/1183"
    }"#;
const EXAMPLE_REFERENCE: &str = r#"    { "title": "TorchIO-project/torchio pull request 1183", "url": "https://github.com/TorchIO-project/torchio/pull/1183", "note": "NumPy 2.0.0 with torch 2.2: import torch fails" }"#;

/// Where the SDK was when this binary was built.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

/// The files of a new rule crate: path, template.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml.tmpl")),
    (".cargo/config.toml", include_str!("template/cargo-config.toml.tmpl")),
    (".gitignore", include_str!("template/gitignore.tmpl")),
    ("src/lib.rs", include_str!("template/lib.rs.tmpl")),
    ("rule.json", include_str!("template/rule.json.tmpl")),
    ("tests.json", include_str!("template/tests.json.tmpl")),
];

pub(crate) fn run(args: &NewArgs) -> anyhow::Result<ExitCode> {
    if !id_is_valid(&args.name) {
        bail!(
            "{:?} is not a rule id: use 3 to 64 lowercase letters, digits and inner dashes",
            args.name
        );
    }
    let sdk = args.sdk.clone().unwrap_or_else(|| PathBuf::from(BUILT_SDK));
    let sdk = sdk.canonicalize().with_context(|| {
        format!("the SDK folder {} (give --sdk PATH or PITFALL_SDK)", sdk.display())
    })?;
    if !sdk.join("Cargo.toml").is_file() || !sdk.join("src/lib.rs").is_file() {
        bail!("{}: not the pitfall-sdk folder (give --sdk PATH or PITFALL_SDK)", sdk.display());
    }
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: already exists and is not empty", dir.display());
    }
    if let Some(url) = &args.from_report
        && !url.starts_with("https://")
    {
        bail!("--from-report {url:?}: give the report's https:// address");
    }
    if args.error.as_deref().is_some_and(|e| e.trim().is_empty()) {
        bail!("--error: give the error text users see");
    }
    let sdk_text = sdk.display().to_string();
    let signatures = match &args.error {
        Some(text) => signature_json(text, args.from_report.as_deref()),
        None => EXAMPLE_SIGNATURE.to_owned(),
    };
    let references = match &args.from_report {
        Some(url) => format!(
            "    {{ \"title\": \"{}\", \"url\": \"{}\" }}",
            json_escape(&report_title(url)),
            json_escape(url)
        ),
        None => EXAMPLE_REFERENCE.to_owned(),
    };
    for (path, template) in FILES {
        // The error text and the report are filled in last, so braces in
        // them are never read as a placeholder.
        let text = template
            .replace("{{id}}", &args.name)
            .replace("{{crate}}", &format!("rule-{}", args.name))
            .replace("{{sdk}}", &toml_escape(&sdk_text))
            .replace("{{title}}", &json_escape(scaffold::TITLE))
            .replace("{{summary}}", &json_escape(scaffold::SUMMARY))
            .replace("{{message}}", &json_escape(scaffold::MESSAGE))
            .replace("{{author}}", &json_escape(&args.author))
            .replace("{{error_signatures}}", &signatures)
            .replace("{{references}}", &references);
        write(&dir.join(path), &text)?;
    }
    // The SDK's workspace lock file: the new crate resolves to the same
    // dependency versions the SDK is built and tested with (cargo drops
    // the entries it does not need).
    if let Some(lock) = sdk.parent().map(|root| root.join("Cargo.lock")).filter(|l| l.is_file()) {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .with_context(|| format!("copying {}", lock.display()))?;
    }
    outln!("created rule crate rule-{} in {} (SDK: {})", args.name, dir.display(), sdk.display());
    outln!("it holds a working example (torch before 2.3 with NumPy 2); make it yours:");
    outln!("  rule.json: the title, summary, message and author (the lint refuses the example's),");
    outln!("             the selectors, error signatures, remedies and references");
    outln!("  src/lib.rs: what the rule asks of the manifest; tests.json: its cases");
    outln!(
        "next: cd {} && pitfall rule lint && pitfall rule test && pitfall rule build",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The error signature for `text`: a template suggested from its first
/// line, the line itself as the example the lint checks it against.
fn signature_json(text: &str, source: Option<&str>) -> String {
    let example = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let template = pitfall_contract::template::suggest(example);
    let mut out = format!(
        "    {{\n      \"template\": \"{}\",\n      \"example\": \"{}\"",
        json_escape(&template),
        json_escape(example)
    );
    if let Some(url) = source {
        out.push_str(&format!(",\n      \"source\": \"{}\"", json_escape(url)));
    }
    out.push_str("\n    }");
    out
}

/// A reference's title for a report's address: `owner/repo issue N` for
/// GitHub's issues, pull requests and discussions, else the address
/// without its scheme.
fn report_title(url: &str) -> String {
    let rest = url.trim_start_matches("https://").trim_end_matches('/');
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["github.com", owner, repo, kind, number, ..] => {
            let kind = match *kind {
                "issues" => "issue",
                "pull" => "pull request",
                "discussions" => "discussion",
                other => other,
            };
            format!("{owner}/{repo} {kind} {number}")
        }
        _ => rest.to_owned(),
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn toml_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The inside of a JSON string literal.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into());
    quoted[1..quoted.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_titles_name_the_repository_and_number() {
        assert_eq!(
            report_title("https://github.com/vllm-project/vllm/issues/1157"),
            "vllm-project/vllm issue 1157"
        );
        assert_eq!(
            report_title("https://github.com/TorchIO-project/torchio/pull/1183/files"),
            "TorchIO-project/torchio pull request 1183"
        );
        assert_eq!(
            report_title("https://discuss.pytorch.org/t/x/42"),
            "discuss.pytorch.org/t/x/42"
        );
    }

    #[test]
    fn a_signature_from_error_text_passes_the_lint() {
        let json = signature_json(
            "\n  A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash.\nTraceback",
            Some("https://github.com/o/r/issues/1"),
        );
        let sig: pitfall_contract::meta::ErrorSignature =
            serde_json::from_str(&json).expect("a signature");
        assert_eq!(
            sig.template,
            "A module that was compiled using NumPy 1.x cannot be run in NumPy {version} as it may crash."
        );
        let template = sig.parse().expect("parses");
        assert!(template.match_exact(sig.example.as_deref().unwrap_or_default()).is_some());
    }
}
