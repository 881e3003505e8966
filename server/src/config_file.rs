//! The config file: TOML whose keys are the long flags' names, read into
//! the flags' defaults, so clap stays the one definition of every setting
//! (its name, environment variable, parser and default) and a flag or an
//! environment variable still wins over the file.
//!
//! ```toml
//! listen = "0.0.0.0:8080"
//! data-dir = "/data"
//! max-batch = 128
//! sole-maintainer-self-approval = false
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Command;
use clap::error::ErrorKind;

/// The flag that names the file; not itself a key of it.
const CONFIG_FLAG: &str = "config";

/// Parses `args` (the program name first) and the environment into `P`,
/// with the config file named by `--config` or `PITFALL_CONFIG`, if any,
/// as the defaults. A bad file is an error naming the file and the key.
pub fn parse<P, I, T>(args: I) -> Result<P, clap::Error>
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let command = P::command();
    let file = command
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(&args)
        .ok()
        .and_then(|m| m.try_get_one::<PathBuf>(CONFIG_FLAG).ok().flatten().cloned());
    let command = match file {
        Some(path) => with_file(command, &path)?,
        None => command,
    };
    let mut matches = command.try_get_matches_from(args)?;
    P::from_arg_matches_mut(&mut matches)
}

/// Validates the config file at `path` against `command`'s flags: every
/// key is a setting, every value parses as that flag's would. Returns how
/// many settings it holds.
pub fn check(command: Command, path: &Path) -> Result<usize, clap::Error> {
    let table = read(path)?;
    let settings = table.len();
    with_file(command, path)?;
    Ok(settings)
}

/// `command` with the file's values as its flags' defaults, each checked
/// by the flag's own parser (so a bad value names the file, not a flag
/// nobody passed).
fn with_file(command: Command, path: &Path) -> Result<Command, clap::Error> {
    let table = read(path)?;
    let mut command = command;
    for (key, value) in &table {
        let known = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(key.as_str()) && key != CONFIG_FLAG)
            .map(|arg| arg.get_id().clone());
        let Some(id) = known else {
            return Err(bad(
                path,
                format!(
                    "unknown setting `{key}` (the settings are `pitfall-server --help`'s long flags without their dashes)"
                ),
            ));
        };
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(bad(
                    path,
                    format!(
                        "`{key}` is not a string, an integer or a boolean ({})",
                        other.type_str()
                    ),
                ));
            }
        };
        command = command.mut_arg(id, |arg| arg.default_value(text));
    }
    // Every value through its flag's parser, with the environment out of
    // the way (a variable set would hide the file's value).
    let probe = command.clone().mut_args(|arg| arg.env(None::<&str>)).ignore_errors(false);
    let name = command.get_name().to_owned();
    if let Err(e) = probe.try_get_matches_from([name]) {
        let message = e.render().to_string();
        let message = message.trim().trim_start_matches("error: ");
        let first = message.lines().next().unwrap_or(message);
        return Err(bad(path, first.to_owned()));
    }
    Ok(command)
}

fn read(path: &Path) -> Result<toml::Table, clap::Error> {
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read it: {e}")))?;
    text.parse::<toml::Table>().map_err(|e| bad(path, format!("not TOML: {}", e.message())))
}

fn bad(path: &Path, message: String) -> clap::Error {
    clap::Error::raw(
        ErrorKind::InvalidValue,
        format!("config file {}: {message}\n", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags of the kinds `Config` has: an address, a number, a boolean
    /// that takes a value, an enum.
    #[derive(Debug, clap::Parser)]
    struct Flags {
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        #[arg(long, default_value_t = 256)]
        max_batch: usize,
        #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
        self_approval: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        log_format: Format,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    enum Format {
        Text,
        Json,
    }

    fn parsed(text: &str, flags: &[&str]) -> Result<Flags, String> {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), text).expect("write");
        let mut args = vec!["pitfall-server".to_owned(), "--config".to_owned()];
        args.push(file.path().display().to_string());
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        parse::<Flags, _, _>(args).map_err(|e| e.to_string())
    }

    #[test]
    fn file_values_fill_what_flags_do_not_say() {
        let flags = parsed(
            "listen = \"0.0.0.0:9000\"\nmax-batch = 7\nself-approval = true\nlog-format = \"json\"\n",
            &["--max-batch", "9"],
        )
        .expect("valid");
        assert_eq!(flags.listen.port(), 9000);
        assert_eq!(flags.max_batch, 9, "a flag wins over the file");
        assert!(flags.self_approval);
        assert_eq!(flags.log_format, Format::Json);
        let defaults = parsed("", &[]).expect("an empty file is valid");
        assert_eq!((defaults.max_batch, defaults.log_format), (256, Format::Text));
    }

    #[test]
    fn bad_files_name_the_file_and_the_key() {
        for (text, expected) in [
            ("max-batch = \"many\"\n", "many"),
            ("no-such-setting = 1\n", "unknown setting `no-such-setting`"),
            ("config = \"/etc/x.toml\"\n", "unknown setting `config`"),
            ("listen = [1]\n", "`listen` is not"),
            ("max-batch = \n", "not TOML"),
            ("log-format = \"xml\"\n", "xml"),
        ] {
            let error = parsed(text, &[]).expect_err(text);
            assert!(error.contains("config file") && error.contains(expected), "{text}: {error}");
        }
    }
}
