//! `pitfall rule lint [PATH]`: the reviewer's checks (the SDK's
//! `model::lint`), one line per issue: `rule.json: [CODE] MESSAGE`. The
//! registry refuses the same rule with the same messages joined by `; `.

use std::path::Path;
use std::process::ExitCode;

use pitfall_contract::lint::{self, LintIssue};

use super::source::Source;

pub(crate) fn run(path: &Path) -> anyhow::Result<ExitCode> {
    let (meta, cases) = Source::of(path)?.embedded()?;
    let issues = lint::lint(&meta, &cases);
    if issues.is_empty() {
        outln!("{} {}: lint passed ({} cases)", meta.id, meta.version, cases.len());
        return Ok(ExitCode::SUCCESS);
    }
    print_issues(&issues);
    eprintln!(
        "{} {}: {} lint issue(s); the registry would refuse it",
        meta.id,
        meta.version,
        issues.len()
    );
    Ok(ExitCode::from(2))
}

/// Prints each issue on stderr, with the file it is about.
pub(crate) fn print_issues(issues: &[LintIssue]) {
    for issue in issues {
        let file = if issue.field.starts_with("tests") { "tests.json" } else { "rule.json" };
        eprintln!("{file}: [{}] {}", issue.code, issue.message);
    }
}
