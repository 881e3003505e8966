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
use pitfall_client::api::schemas::{
    CheckBatchEntry, CheckBatchOutput, CheckedManifest, UncheckedManifest,
};
use pitfall_client::api::types::{BatchItem, ErrorBody};
use pitfall_contract::meta::{RuleMeta, Severity};
use pitfall_contract::report::CheckResponse;
use pitfall_contract::{Manifest, parse_manifest};
use pitfall_engine::{Engine, RuleSet};

use crate::config::UserConfig;
use crate::progress::Progress;
use crate::{CheckArgs, CheckFormat, FailOn, bundle, rules, sarif, text};

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
            let client = builder.build()?.at_revision(args.revision);
            crate::config::warn_about_token(&client, crate::config::TokenSource::Settings);
            return Ok(Source::Online(client));
        }
        if let Some(revision) = args.revision {
            // Local rules have no history: answering with them would pass
            // today's rules off as revision N's.
            anyhow::bail!(
                "--revision {revision} asks a registry how it answered then; offline rules have no history (name one with --server or PITFALL_SERVER)"
            );
        }
        let engine = rules::engine()?;
        let set = offline_rules(&engine, args.rules.as_deref(), config, args.require_fresh)?;
        Ok(Source::Offline(engine, Box::new(set)))
    }

    /// A rule's metadata, when the rules are at hand (offline).
    fn meta(&self, id: &str) -> Option<&RuleMeta> {
        match self {
            Source::Online(_) => None,
            Source::Offline(_, set) => set.rules().iter().find(|r| r.id() == id).map(|r| r.meta()),
        }
    }

    /// The registry's address, when checking online.
    fn server(&self) -> Option<&str> {
        match self {
            Source::Online(client) => Some(client.base_url()),
            Source::Offline(..) => None,
        }
    }
}

/// The rules of an offline check: `rules` (a `.wasm`, a folder of them, or
/// a signed bundle, verified first), else the pulled bundle, else the rules
/// built into this binary.
pub(crate) fn offline_rules(
    engine: &Engine,
    rules: Option<&Path>,
    config: &UserConfig,
    require_fresh: bool,
) -> anyhow::Result<RuleSet> {
    match rules {
        Some(path) => {
            let start = read_start(path);
            if pitfall_client::api::bundle::looks_like_bundle(&start) {
                let bytes =
                    std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                rules::from_bundle(
                    engine,
                    &path.display().to_string(),
                    &bytes,
                    &config.public_keys(&[])?,
                    require_fresh,
                )
            } else {
                rules::from_path(engine, path)
            }
        }
        None => match bundle::bundle_path().filter(|p| p.is_file()) {
            Some(path) => {
                let keys = config.public_keys(&[]).with_context(|| {
                    format!("checking with the pulled bundle {}", path.display())
                })?;
                let bytes =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                rules::from_bundle(
                    engine,
                    &format!("the pulled bundle {}", path.display()),
                    &bytes,
                    &keys,
                    require_fresh,
                )
            }
            None => rules::bundled(engine),
        },
    }
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
pub(crate) fn read_manifest(path: &Path) -> anyhow::Result<(String, Vec<u8>)> {
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
    let source = Source::resolve(args, config)?;
    let answer = match &source {
        Source::Online(client) => client.check_json(&bytes)?,
        Source::Offline(engine, set) => set.check(engine, manifest),
    };
    if !args.quiet {
        match args.format {
            CheckFormat::Json => outln!("{}", serde_json::to_string_pretty(&answer)?),
            CheckFormat::Text => out!("{}", text::render(&name, &answer)),
            CheckFormat::Sarif => {
                let path = path.to_string_lossy();
                let checked = [sarif::Checked { path: &path, text: &bytes, outcome: Ok(&answer) }];
                print_sarif(&checked, &source)?;
            }
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
    let mut texts: Vec<Vec<u8>> = Vec::with_capacity(files.len());
    for (i, path) in files.iter().enumerate() {
        let read = read_manifest(path).map_err(|e| format!("{e:#}"));
        texts.push(read.as_ref().map(|(_, bytes)| bytes.clone()).unwrap_or_default());
        let parsed = read.and_then(|(_, bytes)| {
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
    match &source {
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
                outcomes[i] = Some(Ok(set.check(engine, manifest)));
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
    if args.format == CheckFormat::Sarif && !args.quiet {
        let paths: Vec<String> = files.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let checked: Vec<sarif::Checked<'_>> = paths
            .iter()
            .zip(&texts)
            .zip(&outcomes)
            .map(|((path, text), outcome)| sarif::Checked { path, text, outcome: outcome.as_ref() })
            .collect();
        print_sarif(&checked, &source)?;
        // The log says it too, but a CI job's output should.
        for (name, outcome) in names.iter().zip(&outcomes) {
            if let Err(e) = outcome {
                eprintln!("pitfall: {name}: {}", e.message);
            }
        }
    } else {
        report(args, &names, &outcomes)?;
    }
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
        CheckFormat::Json => {
            let results = names
                .iter()
                .zip(outcomes)
                .map(|(name, outcome)| match outcome {
                    Ok(answer) => CheckBatchEntry::Answer(Box::new(CheckedManifest {
                        manifest: name.clone(),
                        answer: answer.clone(),
                    })),
                    Err(error) => CheckBatchEntry::Error(UncheckedManifest {
                        manifest: name.clone(),
                        error: error.clone(),
                    }),
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&CheckBatchOutput { results })?);
        }
        CheckFormat::Sarif | CheckFormat::Text => {
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

/// Prints the SARIF log of `checked`, with rule descriptions from `source`.
fn print_sarif(checked: &[sarif::Checked<'_>], source: &Source) -> anyhow::Result<()> {
    let meta = |id: &str| source.meta(id);
    let info = sarif::RuleInfo { meta: &meta, server: source.server() };
    outln!("{}", serde_json::to_string_pretty(&sarif::log(checked, &info))?);
    Ok(())
}
