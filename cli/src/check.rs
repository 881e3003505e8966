//! `pitfall check`: offline, with the bundled rules or the ones given.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;
use pitfall_sdk::model::parse_manifest;

use crate::{CheckArgs, Format, rules, text};

pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let (name, bytes) = if args.manifest.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("reading the manifest from standard input")?;
        ("<stdin>".to_owned(), buf)
    } else {
        let name = args.manifest.display().to_string();
        let bytes = std::fs::read(&args.manifest).with_context(|| format!("reading {name}"))?;
        (name, bytes)
    };
    let manifest = parse_manifest(&bytes).map_err(|e| anyhow::anyhow!("{name}: invalid manifest: {e}"))?;
    let engine = rules::engine()?;
    let set = match &args.rules {
        Some(path) => rules::from_path(&engine, path)?,
        None => rules::bundled(&engine)?,
    };
    let answer = set.check(&engine, manifest);
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
        Format::Text => print!("{}", text::render(&name, &answer)),
    }
    Ok(if answer.has_errors() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
