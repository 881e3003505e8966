//! `pitfall explain [FILE|-]`: a pasted log in, the known breakages that
//! explain it out, with the matched lines and the fix; offline, with the
//! same rules `check` would use (`--rules`, the pulled bundle, the built-in
//! set). With `--manifest` or `--scan`, each cause is also evaluated on
//! that setup, and the ones it has rank first.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use pitfall_client::api::types::{ExplainResponse, ExplainedCause};
use pitfall_contract::parse_manifest;
use pitfall_explain::outcome::explained_causes;
use pitfall_explain::{Explainer, SCORE_THRESHOLD};

use crate::Format;
use crate::config::UserConfig;

/// The longest log read, as the server's `POST /v1/explain` takes: a
/// longer one is cut to its last this-many bytes (the error is at the end).
const MAX_LOG_BYTES: usize = 256 << 10;

#[derive(Debug, clap::Args)]
pub(crate) struct ExplainArgs {
    /// The log (a traceback, a server log, `docker logs` output), or `-`
    /// for standard input (`vllm serve ... 2>&1 | pitfall explain -`).
    #[arg(default_value = "-")]
    log: PathBuf,
    /// Also evaluate each cause on this manifest (JSON, manifest v1).
    #[arg(long, value_name = "FILE", conflicts_with = "scan")]
    manifest: Option<PathBuf>,
    /// Also evaluate each cause on a scan of this machine.
    #[arg(long)]
    scan: bool,
    /// Explain with these rules: a `.wasm` file, a folder of them, or a
    /// signed bundle (default: the pulled bundle, else the built-in rules).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Runs `pitfall explain`: exit 1 when a known breakage explains the log,
/// 0 when none does, 2 (through the caller) on bad input.
pub(crate) fn run(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let log = read_log(&args.log)?;
    let manifest = match (&args.manifest, args.scan) {
        (Some(path), _) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            Some(
                parse_manifest(&bytes)
                    .map_err(|e| anyhow::anyhow!("{}: invalid manifest: {e}", path.display()))?,
            )
        }
        (None, true) => Some(crate::scan::this_machine()?),
        (None, false) => None,
    };
    let config = UserConfig::load()?;
    let engine = crate::rules::engine()?;
    let set = crate::check::offline_rules(&engine, args.rules.as_deref(), &config, false)?;
    let explainer = Explainer::new(set.rules().iter().map(|r| r.meta()));
    let explanation = explainer.explain(&log);
    let check = match manifest {
        Some(m) if !explanation.causes.is_empty() => {
            let kept = m.clone();
            Some((set.check(&engine, m), kept))
        }
        _ => None,
    };
    let causes =
        explained_causes(&explanation.causes, |rule| set.rules()[rule].meta(), check.as_ref());
    // The answer `POST /v1/explain` gives, less the text search's leads
    // (a registry's search; offline there is none).
    let answer = ExplainResponse {
        causes,
        threshold: SCORE_THRESHOLD,
        lines_total: explanation.lines_total,
        related: Vec::new(),
        manifest_checked: check.is_some(),
        ruleset_revision: set.revision().to_owned(),
    };
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&answer)?),
        Format::Text => out!("{}", render(&answer.causes, answer.lines_total, check.is_some())),
    }
    Ok(if answer.causes.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The log from a file or standard input, bytes that are not UTF-8
/// replaced, cut to its last [`MAX_LOG_BYTES`].
fn read_log(path: &Path) -> anyhow::Result<String> {
    let bytes = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("reading the log from standard input")?;
        buf
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
    };
    let tail = &bytes[bytes.len().saturating_sub(MAX_LOG_BYTES)..];
    let log = String::from_utf8_lossy(tail).into_owned();
    if log.trim().is_empty() {
        anyhow::bail!(
            "the log is empty: give a file with the error, or pipe it to `pitfall explain -`"
        );
    }
    Ok(log)
}

fn render(causes: &[ExplainedCause], lines_total: usize, checked: bool) -> String {
    let mut out = String::new();
    if causes.is_empty() {
        let _ = writeln!(
            out,
            "No known breakage matches this log ({lines_total} lines; nothing scored {SCORE_THRESHOLD} or more)."
        );
        return out;
    }
    for (i, c) in causes.iter().enumerate() {
        let f = &c.finding;
        let _ = writeln!(
            out,
            "{}. {}  [{} {}]  score {:.2}",
            i + 1,
            f.title,
            f.rule_id,
            f.rule_version,
            c.score
        );
        let lines: Vec<String> = c.lines.iter().map(usize::to_string).collect();
        let _ = writeln!(out, "   line {}: {}", lines.join(", "), c.line);
        if c.described {
            let _ = writeln!(out, "   describes: {}", c.matched);
        } else {
            let _ = writeln!(out, "   matches: {}", c.matched);
        }
        if checked {
            let verdict = match c.outcome.as_deref() {
                Some("matched") => "your setup has this breakage".to_owned(),
                Some("clear") => "your setup does not have this breakage".to_owned(),
                Some("undetermined") => {
                    format!("cannot tell from your setup (add: {})", c.missing.join(", "))
                }
                _ => "the rule failed on your setup".to_owned(),
            };
            let _ = writeln!(out, "   setup: {verdict}");
        }
        let _ = writeln!(out, "   cause: {}", f.message);
        for (n, r) in f.remedies.iter().enumerate() {
            let _ = writeln!(out, "   fix {}: {}", n + 1, r.summary);
        }
        if let Some(url) = f.references.iter().find_map(|r| r.url.as_deref()) {
            let _ = writeln!(out, "   see: {url}");
        }
        out.push('\n');
    }
    out
}
