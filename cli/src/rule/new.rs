//! `pitfall rule new NAME [--dir DIR] [--sdk PATH]`: a rule crate that
//! builds anywhere, not only inside this repo: its own workspace and
//! `rule` profile, the wasm link arguments in `.cargo/config.toml`, the
//! SDK by path (where this binary was built from, unless `--sdk` or
//! `PITFALL_SDK` says otherwise), a documented example rule that passes
//! its own lint and cases, and matched, fixed, clear and undetermined
//! cases.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use pitfall_contract::lint::id_is_valid;

#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The rule's id (3 to 64 of a-z, 0-9 and inner dashes); the crate is `rule-<id>`.
    name: String,
    /// The folder to create (default: ./<NAME>); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The pitfall-sdk folder to depend on.
    #[arg(long, value_name = "PATH", env = "PITFALL_SDK")]
    sdk: Option<PathBuf>,
    /// The rule's author, for rule.json.
    #[arg(long, default_value = "your name")]
    author: String,
}

/// Where the SDK was when this binary was built.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

/// The files of a new rule crate: path, template.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml.tmpl")),
    (".cargo/config.toml", include_str!("template/cargo-config.toml.tmpl")),
    (".gitignore", include_str!("template/gitignore.tmpl")),
    ("src/lib.rs", include_str!("template/lib.rs.tmpl")),
    ("rule.json", include_str!("template/rule.json.tmpl")),
    ("tests.json", include_str!("template/tests.json.tmpl")),
];

pub(crate) fn run(args: &NewArgs) -> anyhow::Result<ExitCode> {
    if !id_is_valid(&args.name) {
        bail!(
            "{:?} is not a rule id: use 3 to 64 lowercase letters, digits and inner dashes",
            args.name
        );
    }
    let sdk = args.sdk.clone().unwrap_or_else(|| PathBuf::from(BUILT_SDK));
    let sdk = sdk.canonicalize().with_context(|| {
        format!("the SDK folder {} (give --sdk PATH or PITFALL_SDK)", sdk.display())
    })?;
    if !sdk.join("Cargo.toml").is_file() || !sdk.join("src/lib.rs").is_file() {
        bail!("{}: not the pitfall-sdk folder (give --sdk PATH or PITFALL_SDK)", sdk.display());
    }
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: already exists and is not empty", dir.display());
    }
    let sdk_text = sdk.display().to_string();
    let author = json_escape(&args.author);
    for (path, template) in FILES {
        let text = template
            .replace("{{id}}", &args.name)
            .replace("{{crate}}", &format!("rule-{}", args.name))
            .replace("{{sdk}}", &toml_escape(&sdk_text))
            .replace("{{author}}", &author);
        write(&dir.join(path), &text)?;
    }
    // The SDK's workspace lock file: the new crate resolves to the same
    // dependency versions the SDK is built and tested with (cargo drops
    // the entries it does not need).
    if let Some(lock) = sdk.parent().map(|root| root.join("Cargo.lock")).filter(|l| l.is_file()) {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .with_context(|| format!("copying {}", lock.display()))?;
    }
    outln!("created rule crate rule-{} in {} (SDK: {})", args.name, dir.display(), sdk.display());
    outln!("next: cd {} && pitfall rule test && pitfall rule build", dir.display());
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn toml_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The inside of a JSON string literal.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into());
    quoted[1..quoted.len() - 1].to_owned()
}
