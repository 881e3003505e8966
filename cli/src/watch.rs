//! `pitfall watch add|list|show|rm|deliveries|test`: a registry's watches
//! over `pitfall-client`. `add` reads the manifests here (each file's
//! name, without `.json`, is its label) so a bad file is a message and
//! exit 2 before anything is sent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_client::api::watch::{CreateWatchRequest, LabelledManifests};

use crate::rule::Registry;

/// The watch commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum WatchCommand {
    /// Watch a manifest, or a fleet with --batch: the registry re-checks
    /// them whenever its ruleset changes and POSTs the findings that are
    /// new or gone to the webhook, signed.
    Add(AddArgs),
    /// Your watches (an admin's: everyone's).
    List(RegistryArgs),
    /// A watch, with each label's findings at its last evaluation.
    Show(IdArgs),
    /// Delete a watch, its manifests and its deliveries.
    Rm(IdArgs),
    /// A watch's deliveries, newest first: state, tries, statuses, errors.
    Deliveries(DeliveriesArgs),
    /// Send a signed ping to the watch's webhook.
    Test(IdArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// Its name, unique among your watches.
    name: String,
    /// Where notifications are POSTed (https).
    #[arg(long, value_name = "URL")]
    webhook: String,
    /// One manifest (a file).
    #[arg(long, value_name = "FILE", conflicts_with = "batch", required_unless_present = "batch")]
    manifest: Option<PathBuf>,
    /// A fleet: manifest files, each labelled by its file name.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    batch: Vec<PathBuf>,
    /// The least severity notified: info, warning or error (default warning).
    #[arg(long, value_name = "SEVERITY")]
    min_severity: Option<String>,
    /// The HMAC key of the signatures (default: the registry makes one and
    /// this prints it once). Prefer PITFALL_WATCH_SECRET: a flag shows in
    /// the process list.
    #[arg(long, env = "PITFALL_WATCH_SECRET", hide_env_values = true, value_name = "SECRET")]
    secret: Option<String>,
    #[command(flatten)]
    registry: Registry,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RegistryArgs {
    #[command(flatten)]
    registry: Registry,
}

#[derive(Debug, clap::Args)]
pub(crate) struct IdArgs {
    /// The watch's id (`pitfall watch list`).
    id: i64,
    #[command(flatten)]
    registry: Registry,
}

#[derive(Debug, clap::Args)]
pub(crate) struct DeliveriesArgs {
    /// The watch's id.
    id: i64,
    /// At most this many, newest first (1 to 200).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=200))]
    limit: u32,
    #[command(flatten)]
    registry: Registry,
}

pub(crate) fn run(command: &WatchCommand) -> anyhow::Result<ExitCode> {
    match command {
        WatchCommand::Add(args) => add(args),
        WatchCommand::List(args) => list(&args.registry),
        WatchCommand::Show(args) => show(args),
        WatchCommand::Rm(args) => {
            let (client, _) = args.registry.client()?;
            let gone = client.delete_watch(args.id).context("deleting the watch")?;
            outln!("deleted watch {} ({})", gone.id, gone.name);
            Ok(ExitCode::SUCCESS)
        }
        WatchCommand::Deliveries(args) => deliveries(args),
        WatchCommand::Test(args) => {
            let (client, _) = args.registry.client()?;
            let ping = client.test_watch(args.id).context("sending a ping")?;
            outln!(
                "ping {} queued: `pitfall watch deliveries {}` shows how it went",
                ping.event_id,
                args.id
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A manifest file read as JSON, with its label (its file name).
fn labelled(path: &Path) -> anyhow::Result<(String, serde_json::Value)> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let label = path
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".json").to_owned())
        .filter(|l| !l.is_empty())
        .with_context(|| format!("{} has no file name to label it", path.display()))?;
    Ok((label, manifest))
}

fn add(args: &AddArgs) -> anyhow::Result<ExitCode> {
    let files: Vec<&PathBuf> = args.manifest.iter().chain(&args.batch).collect();
    let mut manifests = LabelledManifests::new();
    for path in files {
        let (label, manifest) = labelled(path)?;
        if manifests.insert(label.clone(), manifest).is_some() {
            bail!("two files are labelled {label:?}: rename one");
        }
    }
    let request = CreateWatchRequest {
        name: args.name.clone(),
        webhook_url: args.webhook.clone(),
        secret: args.secret.clone(),
        min_severity: args.min_severity.clone(),
        manifests,
    };
    let (client, _) = args.registry.client()?;
    let detail = client.create_watch(&request).context("creating the watch")?;
    let w = &detail.watch;
    outln!(
        "watch {} ({}): {} manifests, evaluated at revision {}",
        w.id,
        w.name,
        w.manifests,
        w.evaluated_revision
    );
    for label in detail.labels.iter().filter(|l| !l.findings.is_empty()) {
        let ids: Vec<&str> = label.findings.iter().map(|f| f.rule_id.as_str()).collect();
        outln!("  {}: {}", label.label, ids.join(", "));
    }
    if let Some(secret) = &detail.secret {
        outln!("secret (shown once; verify Pitfall-Signature with it): {secret}");
    }
    Ok(ExitCode::SUCCESS)
}

fn list(registry: &Registry) -> anyhow::Result<ExitCode> {
    let (client, _) = registry.client()?;
    let watches = client.watches().context("listing watches")?;
    if watches.is_empty() {
        outln!("no watches");
    }
    for w in watches {
        let state = if w.failing { "FAILING" } else { "ok" };
        outln!(
            "{:>5}  {:<24} {:>6} manifests  revision {:<6} {state:<7} pending {} failed {}  {}",
            w.id,
            w.name,
            w.manifests,
            w.evaluated_revision,
            w.pending_deliveries,
            w.failed_deliveries,
            w.webhook_url
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(args: &IdArgs) -> anyhow::Result<ExitCode> {
    let (client, _) = args.registry.client()?;
    let detail = client.watch(args.id).context("reading the watch")?;
    let w = &detail.watch;
    outln!("watch {} ({}) of {}", w.id, w.name, w.account);
    outln!("  webhook      {} (at least {})", w.webhook_url, w.min_severity);
    outln!("  evaluated    at revision {}", w.evaluated_revision);
    outln!(
        "  deliveries   {} pending, {} failed{}",
        w.pending_deliveries,
        w.failed_deliveries,
        if w.failing { " (FAILING)" } else { "" }
    );
    for label in &detail.labels {
        if label.findings.is_empty() {
            outln!("  {}: no findings", label.label);
        }
        for f in &label.findings {
            outln!(
                "  {}: {} {} {}: {}",
                label.label,
                f.severity,
                f.rule_id,
                f.rule_version,
                f.title
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn deliveries(args: &DeliveriesArgs) -> anyhow::Result<ExitCode> {
    let (client, _) = args.registry.client()?;
    let log = client.watch_deliveries(args.id, args.limit).context("reading the delivery log")?;
    if log.is_empty() {
        outln!("no deliveries");
    }
    for d in log {
        outln!("{}  {}  {}  {} tries", d.event_id, d.kind, d.state, d.attempts);
        for t in &d.tries {
            let status = t.status.map_or_else(|| "-".to_owned(), |s| s.to_string());
            outln!("    {status:>3}  {} ms  {}", t.elapsed_ms, t.error.as_deref().unwrap_or(""));
        }
    }
    Ok(ExitCode::SUCCESS)
}
