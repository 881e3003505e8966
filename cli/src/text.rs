//! The text report: findings grouped by severity, each with the error text
//! the user would see, the evidence, and the remedies.

use std::fmt::Write as _;

use pitfall_contract::meta::Severity;
use pitfall_contract::report::{CheckResponse, EvidenceSource, Finding};

pub(crate) fn render(name: &str, answer: &CheckResponse) -> String {
    let count = |s: Severity| answer.findings.iter().filter(|f| f.severity == s).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: {} error(s), {} warning(s), {} info ({} of {} rules evaluated, rule set {}{}, {} µs)",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
        answer.stats.rules_evaluated,
        answer.stats.rules_total,
        answer.ruleset_revision,
        if answer.as_of { " (a past revision)" } else { "" },
        answer.stats.elapsed_us
    );
    for severity in [Severity::Error, Severity::Warning, Severity::Info] {
        for f in answer.findings.iter().filter(|f| f.severity == severity) {
            finding(&mut out, f);
        }
    }
    if !answer.enriched.is_empty() {
        let _ = writeln!(out, "\nAssumed from the tables (not in the manifest):");
        for e in &answer.enriched {
            let _ = writeln!(
                out,
                "  {} = {}  ({} table, for {}: {})",
                e.evidence.path, e.evidence.value, e.table, e.key, e.reference
            );
        }
    }
    if !answer.unresolved.is_empty() {
        let _ = writeln!(out, "\nNot resolved (nothing was assumed from these):");
        for u in &answer.unresolved {
            let _ = writeln!(out, "  {} = {:?}: {} ({} table)", u.path, u.value, u.reason, u.table);
        }
    }
    if !answer.undetermined.is_empty() {
        let _ = writeln!(out, "\nCould not decide (add or correct these fields of the manifest):");
        for u in &answer.undetermined {
            let _ = writeln!(out, "  {}: {u}", u.rule_id);
        }
    }
    if !answer.rule_errors.is_empty() {
        let _ = writeln!(out, "\nRules that failed (their findings are missing):");
        for e in &answer.rule_errors {
            let _ = writeln!(out, "  {}: {}", e.rule_id, e.error);
        }
    }
    if answer.findings.is_empty() {
        let _ = writeln!(out, "\nNo known breakage applies.");
    }
    out
}

fn finding(out: &mut String, f: &Finding) {
    let label = match f.severity {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    };
    let _ = writeln!(out, "\n{label}  {}  [{} {}]", f.title, f.rule_id, f.rule_version);
    let _ = writeln!(out, "  {}", f.message);
    if !f.error_signatures.is_empty() {
        let _ = writeln!(out, "  What you would see:");
        for s in &f.error_signatures {
            let _ = writeln!(out, "    {s}");
        }
    }
    if !f.evidence.is_empty() {
        let items: Vec<String> = f
            .evidence
            .iter()
            .map(|e| {
                let from = if e.source == EvidenceSource::Enriched {
                    " (from the hardware table)"
                } else {
                    ""
                };
                format!("{} = {}{from}", e.path, e.value)
            })
            .collect();
        let _ = writeln!(out, "  Because: {}", items.join("; "));
    }
    for (i, r) in f.remedies.iter().enumerate() {
        let _ = writeln!(out, "  Fix {}: {}", i + 1, r.summary);
        for a in &r.actions {
            let _ = writeln!(out, "    -> {a}");
        }
    }
    for r in &f.references {
        match &r.url {
            Some(url) => {
                let _ = writeln!(out, "  See: {} <{url}>", r.title);
            }
            None => {
                let _ = writeln!(out, "  See: {}", r.title);
            }
        }
    }
}
