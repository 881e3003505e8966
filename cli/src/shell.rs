//! `pitfall completions SHELL` and `pitfall man`: generated from the same
//! clap definition that parses the command line, so they never disagree
//! with it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap_complete::Shell;

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write `pitfall.1` and one page per command (`pitfall-check.1`, ...)
    /// into this folder instead of printing `pitfall.1`.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the completion script of `args.shell`.
pub(crate) fn completions(
    args: &CompletionsArgs,
    command: &mut clap::Command,
) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, command, "pitfall", &mut script);
    out!("{}", String::from_utf8(script).context("the completion script is not UTF-8")?);
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page, or writes every command's page into `args.dir`.
pub(crate) fn man(args: &ManArgs, command: &clap::Command) -> anyhow::Result<ExitCode> {
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the folder {}", dir.display()))?;
            clap_mangen::generate_to(command.clone(), dir)
                .with_context(|| format!("writing the man pages into {}", dir.display()))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command.clone())
                .render(&mut page)
                .context("rendering the man page")?;
            out!("{}", String::from_utf8(page).context("the man page is not UTF-8")?);
        }
    }
    Ok(ExitCode::SUCCESS)
}
