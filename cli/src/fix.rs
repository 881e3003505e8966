//! `pitfall fix MANIFEST [--rules PATH] [--format text|json|patch]
//! [--write-constraints FILE]`: the nearest configuration that passes
//! (`pitfall-fix`), offline with the rules `check` would use offline.
//! Exit 0 when a plan clears every error, 1 when none does (a conflict, or
//! only other hardware would), 2 on bad input.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use pitfall_contract::parse_manifest;
use pitfall_fix::{FixResponse, Plan, Status};

use crate::config::UserConfig;

#[derive(Debug, clap::Args)]
pub(crate) struct FixArgs {
    /// The manifest (JSON, manifest v1), or `-` for standard input.
    manifest: PathBuf,
    /// Fix against these rules: a `.wasm` file, a folder of them, or a
    /// signed bundle (default: the pulled bundle, else the built-in rules).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: FixFormat,
    /// Write the plan's pip constraints file here.
    #[arg(long, value_name = "FILE")]
    write_constraints: Option<PathBuf>,
}

/// Output formats of `fix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FixFormat {
    /// For people: the steps, what they leave, the commands.
    Text,
    /// The /v1/fix answer.
    Json,
    /// The plan as a JSON Merge Patch (RFC 7386) of the manifest.
    Patch,
}

pub(crate) fn run(args: &FixArgs) -> anyhow::Result<ExitCode> {
    let config = UserConfig::load()?;
    let (name, bytes) = crate::check::read_manifest(&args.manifest)?;
    let manifest =
        parse_manifest(&bytes).map_err(|e| anyhow::anyhow!("{name}: invalid manifest: {e}"))?;
    let engine = crate::rules::engine()?;
    let set = crate::check::offline_rules(&engine, args.rules.as_deref(), &config, false)?;
    let answer = pitfall_fix::fix(&engine, &set, &manifest);
    if let Some(path) = &args.write_constraints {
        let plan = answer.plan.as_ref().with_context(|| {
            format!(
                "no plan clears the errors on this hardware, so {} was not written",
                path.display()
            )
        })?;
        let text = plan
            .artefacts
            .pip_constraints
            .clone()
            .unwrap_or_else(|| "# pitfall fix: the plan changes no package\n".to_owned());
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    match args.format {
        FixFormat::Json => outln!("{}", serde_json::to_string_pretty(&answer)?),
        FixFormat::Text => out!("{}", render(&name, &answer)),
        FixFormat::Patch => {
            if let Some(plan) = &answer.plan {
                let before = serde_json::to_value(&manifest)?;
                let after = serde_json::to_value(&plan.patched_manifest)?;
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&pitfall_fix::merge_patch(&before, &after))?
                );
            } else {
                eprintln!(
                    "pitfall: {name}: no plan clears the errors on this hardware (see --format text)"
                );
            }
        }
    }
    Ok(if answer.status.clears_errors() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The text report of a fix.
pub(crate) fn render(name: &str, answer: &FixResponse) -> String {
    let mut out = String::new();
    let headline = match answer.status {
        Status::Clear => "no error to fix",
        Status::Plan => "a plan clears every error",
        Status::Conflict => "no plan on this hardware: remedies collide",
        Status::HardwareOnly => "no plan on this hardware; only other hardware clears the errors",
        Status::NoPlan => "no plan found",
    };
    let _ = writeln!(out, "{name}: {headline}");
    if !answer.errors_before.is_empty() {
        let ids: Vec<&str> = answer.errors_before.iter().map(|r| r.rule_id.as_str()).collect();
        let _ = writeln!(out, "Errors now: {}", ids.join(", "));
    }
    if let Some(plan) = &answer.plan {
        plan_text(&mut out, plan);
    }
    if !answer.conflicts.is_empty() {
        let _ = writeln!(out, "\nConflicts:");
        for c in &answer.conflicts {
            let _ = writeln!(
                out,
                "  {} ({}) brings {} into range: {}",
                c.rule_id, c.remedy, c.brings, c.why
            );
        }
    }
    if let Some(other) = &answer.on_other_hardware {
        let _ = writeln!(out, "\nOr, on other hardware:");
        plan_text(&mut out, other);
    }
    if !answer.unavailable.is_empty() && !answer.status.clears_errors() {
        let _ = writeln!(out, "\nRemedies that cannot be applied here:");
        for u in &answer.unavailable {
            let _ = writeln!(out, "  {} ({}): {}", u.rule_id, u.remedy, u.reason);
        }
    }
    let _ = writeln!(
        out,
        "\n{} of {} evaluations{}",
        answer.evaluations,
        answer.evaluation_bound,
        if answer.may_not_be_minimal {
            "; the bound was reached: a cheaper plan may exist"
        } else {
            ""
        }
    );
    out
}

fn plan_text(out: &mut String, plan: &Plan) {
    if plan.steps.is_empty() {
        let _ = writeln!(out, "\nNo change needed.");
    } else {
        let _ = writeln!(out, "\nSteps ({}):", plan.cost_summary);
        for (i, step) in plan.steps.iter().enumerate() {
            let why = if step.undetermined { "settles" } else { step.answers.severity.as_str() };
            let _ = writeln!(out, "  {}. {}  [{why}: {}]", i + 1, step.text, step.answers.rule_id);
        }
    }
    let leaves = &plan.leaves;
    for (label, rules) in
        [("error", &leaves.errors), ("warning", &leaves.warnings), ("info", &leaves.info)]
    {
        for r in rules {
            let _ = writeln!(out, "  leaves {label}: {} ({})", r.rule_id, r.title);
        }
    }
    if !leaves.undetermined.is_empty() {
        let _ = writeln!(
            out,
            "  undecided: {}",
            leaves.undetermined.iter().map(|u| u.rule_id.as_str()).collect::<Vec<_>>().join(", ")
        );
        let _ = writeln!(
            out,
            "  add to the manifest to settle them: {}",
            leaves.settle_with.join(", ")
        );
    }
    let a = &plan.artefacts;
    if let Some(serve) = &a.vllm_serve {
        let _ = writeln!(out, "\nServe with:\n  {serve}");
    }
    if !a.env.is_empty() {
        let _ = writeln!(out, "\nEnvironment:");
        for e in &a.env {
            match &e.value {
                Some(v) => {
                    let _ = writeln!(out, "  export {}={v}", e.name);
                }
                None => {
                    let _ = writeln!(out, "  unset {}", e.name);
                }
            }
        }
    }
    if let Some(constraints) = &a.pip_constraints {
        let _ = writeln!(out, "\npip constraints (--write-constraints FILE):");
        for line in constraints.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(flags) = &a.docker_run_flags {
        let _ = writeln!(out, "\nContainer:\n  {flags}");
    }
    if let Some(compose) = &a.compose {
        let _ = writeln!(out, "\ncompose:");
        for line in compose.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
}
