//! `pitfall rule publish [PATH] [--server URL] [--token T]`: builds the
//! module (lint included) unless PATH is a `.wasm`, uploads it through
//! `pitfall-client`, and prints the registry's publish pipeline step by
//! step (validation, compile, tests, state) and the rule's URL. A `.wasm`
//! is sent as it is: the registry runs the same lint and says so.
//! `pitfall rule approve ID VERSION` is the maintainer's side.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_client::{Client, Error};
use serde_json::Value;

use super::build::{build_checked, build_module};
use super::source::Source;
use crate::config::{TokenSource, UserConfig};

/// Where to publish, and as whom.
#[derive(clap::Args)]
pub(crate) struct Registry {
    /// The registry (default: PITFALL_SERVER, else `server` in the config file).
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// A bearer token. Prefer PITFALL_TOKEN or `token` in the config file
    /// (used when this is not given): a flag is visible to other users in
    /// the process list and stays in shell history.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("server", &self.server)
            .field("token", &pitfall_client::api::redacted(&self.token))
            .finish()
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct PublishArgs {
    /// The rule crate's folder, or a `.c`, `.wat` or `.wasm` file.
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    registry: Registry,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ApproveArgs {
    /// The rule's id.
    id: String,
    /// The pending version.
    version: String,
    /// Why, for the author and the audit log.
    #[arg(long)]
    reason: Option<String>,
    #[command(flatten)]
    registry: Registry,
}

impl Registry {
    pub(crate) fn client(&self) -> anyhow::Result<(Client, String)> {
        let config = UserConfig::load()?;
        let Some(server) = self.server.clone().or(config.server) else {
            bail!(
                "no registry: give --server URL, or set PITFALL_SERVER or `server` in the config file"
            );
        };
        let (token, source) = match (&self.token, config.token) {
            (Some(flag), _) => (flag.clone(), TokenSource::Flag),
            (None, Some(setting)) => (setting, TokenSource::Settings),
            (None, None) => {
                bail!("no token: set PITFALL_TOKEN or `token` in the config file (or give --token)")
            }
        };
        let client = Client::builder(&server)
            .token(token)
            .build()
            .with_context(|| format!("the registry {server}"))?;
        crate::config::warn_about_token(&client, source);
        Ok((client, server.trim_end_matches('/').to_owned()))
    }
}

pub(crate) fn run(args: &PublishArgs) -> anyhow::Result<ExitCode> {
    let source = Source::of(&args.path)?;
    let module = match &source {
        Source::Wasm(_) => build_module(&source, None)?,
        _ => match build_checked(&args.path, None)? {
            Some(module) => module,
            None => return Ok(ExitCode::from(2)),
        },
    };
    let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
    let (client, server) = args.registry.client()?;
    let detail = match client.publish(&bytes) {
        Ok(detail) => detail,
        Err(Error::Api { body, .. }) if body.code == "publish_refused" => {
            let step = body.step.as_deref().unwrap_or("?");
            // The envelope's message already leads with its step.
            eprintln!("refused by {server} (step {step}): {}", body.message);
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e).context("publishing"),
    };
    let report = &detail.report;
    let number = |key: &str| report.get(key).and_then(Value::as_u64).unwrap_or(0);
    let tests = report.get("tests").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let passed = tests.iter().filter(|t| t.get("passed") == Some(&Value::Bool(true))).count();
    outln!("published {} {} to {server}", detail.rule_id, detail.version);
    outln!(
        "  validation  passed: ABI {}, {} bytes, sha256 {}",
        number("abi_version"),
        number("module_bytes"),
        detail.sha256
    );
    outln!("  compile     passed in {} µs", number("load_us"));
    outln!("  tests       {passed} of {} cases passed in {} µs", tests.len(), number("tests_us"));
    outln!(
        "  state       {} (a maintainer approves it: pitfall rule approve {} {}; the page below is public from then on)",
        detail.state,
        detail.rule_id,
        detail.version
    );
    outln!("url: {server}/rules/{}", detail.rule_id);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn approve(args: &ApproveArgs) -> anyhow::Result<ExitCode> {
    let (client, server) = args.registry.client()?;
    let detail =
        client.approve(&args.id, &args.version, args.reason.as_deref()).context("approving")?;
    outln!("{} {}: {}", detail.rule_id, detail.version, detail.state);
    outln!("url: {server}/rules/{}", detail.rule_id);
    Ok(ExitCode::SUCCESS)
}
