//! `pitfall catalogue [--rules PATH] [--format text|json]`: the rules'
//! catalogue, generated from their metadata (the server's
//! `GET /v1/catalogue` gives the same for the registry's rules).

use std::path::PathBuf;
use std::process::ExitCode;

use pitfall_contract::meta::Catalogue;

use crate::Format;

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogueArgs {
    /// A .wasm, a folder of them, or a signed bundle (default: the rules
    /// built into this binary).
    #[arg(long, value_name = "PATH")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(crate) fn run(args: &CatalogueArgs) -> anyhow::Result<ExitCode> {
    let engine = crate::rules::engine()?;
    let set = match &args.rules {
        Some(path) => crate::rules::from_path(&engine, path)?,
        None => crate::rules::bundled(&engine)?,
    };
    let catalogue = Catalogue::of(set.revision(), set.rules().iter().map(|r| r.meta()));
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&catalogue)?),
        Format::Text => {
            outln!("{} rules (rule set {})", catalogue.rules.len(), catalogue.ruleset_revision);
            for r in &catalogue.rules {
                outln!(
                    "{:<48} {:<8} {:<18} checked {:<10} {} source(s)",
                    r.id,
                    r.severity.as_str(),
                    r.component.as_deref().unwrap_or("-"),
                    r.checked.as_deref().unwrap_or("-"),
                    r.sources.len()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
