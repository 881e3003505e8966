//! `pitfall check`: one manifest, or a fleet with `--batch`, online through
//! a registry (`--server` or `PITFALL_SERVER`) or offline with local rules:
//! `--rules` (a `.wasm`, a folder of them, or a signed bundle), else the
//! pulled bundle (`pitfall bundle pull`), else the rules built into this
//! binary.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use pitfall_client::Client;
use pitfall_client::api::types::{BatchItem, ErrorBody};
use pitfall_contract::meta::Severity;
use pitfall_contract::report::CheckResponse;
use pitfall_contract::{Manifest, parse_manifest};
use pitfall_engine::{Engine, RuleSet};
use serde_json::Value;

use crate::config::UserConfig;
use crate::progress::Progress;
use crate::{CheckArgs, FailOn, Format, bundle, rules, text};

/// Where the answers come from.
enum Source {
    Online(Client),
    /// Boxed: a rule set (its index and gates) is several times the size
    /// of a client.
    Offline(Engine, Box<RuleSet>),
}

impl Source {
    fn resolve(args: &CheckArgs, config: &UserConfig) -> anyhow::Result<Source> {
        // Explicit rules win over the environment's server.
        let server = args.server.clone().or_else(|| {
            args.rules
                .is_none()
                .then(|| std::env::var("PITFALL_SERVER").ok())
                .flatten()
                .filter(|s| !s.trim().is_empty())
        });
        if let Some(server) = server {
            let mut builder = Client::builder(&server);
            if let Some(token) = &config.token {
                builder = builder.token(token);
            }
            return Ok(Source::Online(builder.build()?));
        }
        let (engine, set) = offline_rules(args.rules.as_deref(), config)?;
        Ok(Source::Offline(engine, Box::new(set)))
    }
}

/// The local rules: `rules_path` (a `.wasm`, a folder, or a signed bundle
/// verified with the pinned key), else the pulled bundle, else the rules
/// built into this binary.
pub(crate) fn offline_rules(
    rules_path: Option<&Path>,
    config: &UserConfig,
) -> anyhow::Result<(Engine, RuleSet)> {
    let engine = rules::engine()?;
    let set = match rules_path {
        Some(path) => {
            let start = read_start(path);
            if pitfall_client::api::bundle::looks_like_bundle(&start) {
                let bytes =
                    std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                rules::from_bundle(
                    &engine,
                    &path.display().to_string(),
                    &bytes,
                    &config.public_key(None)?,
                )?
            } else {
                rules::from_path(&engine, path)?
            }
        }
        None => match bundle::bundle_path().filter(|p| p.is_file()) {
            Some(path) => {
                let key = config.public_key(None).with_context(|| {
                    format!("checking with the pulled bundle {}", path.display())
                })?;
                let bytes =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                rules::from_bundle(
                    &engine,
                    &format!("the pulled bundle {}", path.display()),
                    &bytes,
                    &key,
                )?
            }
            None => rules::bundled(&engine)?,
        },
    };
    Ok((engine, set))
}

/// The first bytes of a file (empty for a folder or an unreadable file:
/// `from_path` then says what is wrong).
fn read_start(path: &Path) -> Vec<u8> {
    let mut start = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(8).read_to_end(&mut start);
    }
    start
}

/// How a manifest file (or `-`) is named in messages and reports.
fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" { "<stdin>".to_owned() } else { path.display().to_string() }
}

/// A manifest file (or `-`): its display name and bytes.
fn read_manifest(path: &Path) -> anyhow::Result<(String, Vec<u8>)> {
    let name = display_name(path);
    let bytes = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading the manifest from standard input")?;
        buf
    } else {
        std::fs::read(path).with_context(|| format!("reading {name}"))?
    };
    Ok((name, bytes))
}

fn fails(answer: &CheckResponse, fail_on: FailOn) -> bool {
    let threshold = match fail_on {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
    };
    answer.findings.iter().any(|f| f.severity >= threshold)
}

pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let config = UserConfig::load()?;
    match &args.manifest {
        Some(path) if args.batch.is_empty() => one(args, &config, path),
        _ => batch(args, &config),
    }
}

fn one(args: &CheckArgs, config: &UserConfig, path: &Path) -> anyhow::Result<ExitCode> {
    let (name, bytes) = read_manifest(path)?;
    let manifest =
        parse_manifest(&bytes).map_err(|e| anyhow::anyhow!("{name}: invalid manifest: {e}"))?;
    let answer = match Source::resolve(args, config)? {
        Source::Online(client) => client.check_json(&bytes)?,
        Source::Offline(engine, set) => set.check(&engine, manifest),
    };
    if !args.quiet {
        match args.format {
            Format::Json => outln!("{}", serde_json::to_string_pretty(&answer)?),
            Format::Text => out!("{}", text::render(&name, &answer)),
        }
    }
    Ok(if fails(&answer, args.fail_on) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// One manifest's outcome in a batch.
type Outcome = Result<CheckResponse, ErrorBody>;

fn batch(args: &CheckArgs, config: &UserConfig) -> anyhow::Result<ExitCode> {
    let files: Vec<&PathBuf> = args.manifest.iter().chain(&args.batch).collect();
    if files.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        anyhow::bail!("standard input (`-`) can be read once");
    }
    // Every file is read and parsed first: one that fails gets its own
    // error and the others are still checked.
    let names: Vec<String> = files.iter().map(|p| display_name(p)).collect();
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(files.len());
    let mut manifests: Vec<(usize, Manifest)> = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let parsed = read_manifest(path).map_err(|e| format!("{e:#}")).and_then(|(_, bytes)| {
            parse_manifest(&bytes).map_err(|e| format!("invalid manifest: {e}"))
        });
        match parsed {
            Ok(manifest) => {
                manifests.push((i, manifest));
                outcomes.push(None);
            }
            Err(message) => outcomes.push(Some(Err(ErrorBody {
                code: "invalid_manifest".into(),
                message,
                step: None,
                retry_after_s: None,
            }))),
        }
    }
    let source = Source::resolve(args, config)?;
    let mut progress = Progress::new(args.progress, args.quiet, files.len());
    let unreadable = files.len() - manifests.len();
    progress.update(unreadable);
    match source {
        Source::Online(client) => {
            let only: Vec<Manifest> = manifests.iter().map(|(_, m)| m.clone()).collect();
            let items = client.check_all(&only, |p| progress.update(unreadable + p.done))?;
            for ((i, _), item) in manifests.iter().zip(items) {
                outcomes[*i] = Some(match item {
                    BatchItem::Answer(answer) => Ok(*answer),
                    BatchItem::Error { error } => Err(error),
                });
            }
        }
        Source::Offline(engine, set) => {
            for (done, (i, manifest)) in manifests.into_iter().enumerate() {
                outcomes[i] = Some(Ok(set.check(&engine, manifest)));
                progress.update(unreadable + done + 1);
            }
        }
    }
    let outcomes: Vec<Outcome> = outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or_else(|| {
                Err(ErrorBody {
                    code: "internal".into(),
                    message: "no answer".into(),
                    step: None,
                    retry_after_s: None,
                })
            })
        })
        .collect();
    report(args, &names, &outcomes)?;
    let failed = outcomes.iter().any(Result::is_err);
    let hit = outcomes.iter().any(|o| o.as_ref().is_ok_and(|a| fails(a, args.fail_on)));
    Ok(ExitCode::from(if failed { 2 } else { u8::from(hit) }))
}

fn report(args: &CheckArgs, names: &[String], outcomes: &[Outcome]) -> anyhow::Result<()> {
    if args.quiet {
        for (name, outcome) in names.iter().zip(outcomes) {
            if let Err(e) = outcome {
                eprintln!("pitfall: {name}: {}", e.message);
            }
        }
        return Ok(());
    }
    match args.format {
        Format::Json => {
            let results = names
                .iter()
                .zip(outcomes)
                .map(|(name, outcome)| {
                    let mut value = match outcome {
                        Ok(answer) => serde_json::to_value(answer)?,
                        Err(error) => serde_json::json!({ "error": error }),
                    };
                    if let Value::Object(fields) = &mut value {
                        fields.insert("manifest".into(), Value::String(name.clone()));
                    }
                    Ok(value)
                })
                .collect::<anyhow::Result<Vec<Value>>>()?;
            outln!("{}", serde_json::to_string_pretty(&serde_json::json!({ "results": results }))?);
        }
        Format::Text => {
            for (name, outcome) in names.iter().zip(outcomes) {
                match outcome {
                    Ok(answer) => out!("{}", text::render(name, answer)),
                    Err(e) => outln!("{name}: could not be checked: {}", e.message),
                }
                outln!();
            }
            let failing = outcomes
                .iter()
                .filter(|o| o.as_ref().is_ok_and(|a| fails(a, args.fail_on)))
                .count();
            let failed = outcomes.iter().filter(|o| o.is_err()).count();
            outln!(
                "{} manifests: {failing} fail at --fail-on {}, {failed} could not be checked",
                outcomes.len(),
                args.fail_on.as_str()
            );
        }
    }
    Ok(())
}
