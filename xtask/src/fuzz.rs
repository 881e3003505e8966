//! `cargo xtask fuzz TARGET [--seconds N] [--update-corpus]`: runs one
//! cargo-fuzz target of `fuzz/` (installing cargo-fuzz when missing) for N
//! seconds (default 60) under `nice -n 10`, from a working corpus in
//! `fuzz/work/TARGET/` (ignored by git) seeded from the committed corpus
//! `fuzz/corpus/TARGET/` and from the repository's own data (the bundled
//! rules' metadata and cases). With `--update-corpus`, what the run found
//! is merged into the committed corpus and minimised (see [`minimise`]);
//! `--seconds 0 --update-corpus` does only that.
//!
//! The stable toolchain builds it with `RUSTC_BOOTSTRAP=1` (cargo-fuzz
//! passes `-Zsanitizer` flags), so no nightly is needed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The targets of `fuzz/Cargo.toml`.
const TARGETS: &[&str] = &["manifest", "abi_output", "metadata"];

/// Largest input libFuzzer generates: a rule's sections or a manifest are
/// a few KiB; bigger inputs only slow each run.
const MAX_LEN: &str = "16384";

/// Memory libFuzzer allows the target before it calls it a leak or bomb.
const RSS_LIMIT_MB: &str = "2048";

pub(crate) fn fuzz(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let usage =
        "usage: cargo xtask fuzz <manifest|abi_output|metadata> [--seconds N] [--update-corpus]";
    let target = args.first().map(String::as_str).context(usage)?;
    if !TARGETS.contains(&target) {
        bail!("unknown fuzz target {target:?}; {usage}");
    }
    let mut seconds = 60u64;
    let mut update = false;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => seconds = rest.next().context(usage)?.parse().context("--seconds")?,
            "--update-corpus" => update = true,
            other => bail!("unknown argument {other:?}; {usage}"),
        }
    }
    ensure_cargo_fuzz()?;
    let fuzz_dir = root.join("fuzz");
    let work = fuzz_dir.join("work").join(target);
    let committed = fuzz_dir.join("corpus").join(target);
    std::fs::create_dir_all(&work).with_context(|| work.display().to_string())?;
    std::fs::create_dir_all(&committed).with_context(|| committed.display().to_string())?;
    if seconds == 0 && update {
        // Only the corpus step, over what earlier runs left in fuzz/work/.
        return minimise(&fuzz_dir, target, &work, &committed);
    }
    let seeds = seed(root, target, &work)?;
    eprintln!("xtask: fuzz {target}: {seeds} seeds from the repository, {seconds} s");

    // New inputs go to the first directory; the committed corpus is read only.
    let status = cargo_fuzz(&fuzz_dir)
        .args(["run", target])
        .arg(&work)
        .arg(&committed)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-max_len={MAX_LEN}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg("-print_final_stats=1")
        .status()
        .context("running cargo fuzz")?;
    if !status.success() {
        bail!(
            "fuzz target {target} failed ({status}): the crashing input is under fuzz/artifacts/{target}/"
        );
    }
    if update {
        minimise(&fuzz_dir, target, &work, &committed)?;
    }
    Ok(())
}

/// Inputs longer than this stay out of a target's committed corpus: the
/// long tail adds few edges (about 4% for `manifest`) and most of the
/// bytes. `metadata` gets more room for small whole rules; its deepest
/// inputs (real rules, 2 to 6 KiB) are regenerated as seeds at every run,
/// so the committed corpus need not carry them.
fn max_committed_input_bytes(target: &str) -> u64 {
    if target == "metadata" { 1024 } else { 400 }
}

/// Replaces the committed corpus with the smallest set of inputs (of the
/// working and the committed corpus, each at most
/// [`max_committed_input_bytes`]) that reaches the same edges (libFuzzer's
/// `-merge=1`, counting edges only). Inputs named `regression-*` (a crash
/// once fixed) are kept whatever their size.
fn minimise(fuzz_dir: &Path, target: &str, work: &Path, committed: &Path) -> anyhow::Result<()> {
    let scratch = fuzz_dir.join("work").join(format!("{target}.merge"));
    let candidates = scratch.join("candidates");
    let merged = scratch.join("merged");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&candidates)?;
    std::fs::create_dir_all(&merged)?;
    for dir in [work, committed] {
        for entry in std::fs::read_dir(dir)?.flatten() {
            let name = entry.file_name();
            let regression = name.to_string_lossy().starts_with("regression-");
            if regression {
                std::fs::copy(entry.path(), merged.join(&name))?;
            } else if entry.metadata()?.len() <= max_committed_input_bytes(target) {
                std::fs::copy(entry.path(), candidates.join(&name))?;
            }
        }
    }
    let status = cargo_fuzz(fuzz_dir)
        .args(["run", target])
        .arg(&merged)
        .arg(&candidates)
        .args(["--", "-merge=1", "-use_counters=0"])
        .status()
        .context("cargo fuzz run -merge=1")?;
    if !status.success() {
        bail!("merging the {target} corpus failed ({status})");
    }
    std::fs::remove_dir_all(committed)?;
    std::fs::rename(&merged, committed)?;
    let _ = std::fs::remove_dir_all(&scratch);
    let (files, bytes) = std::fs::read_dir(committed)?
        .flatten()
        .fold((0, 0), |(n, b), e| (n + 1, b + e.metadata().map_or(0, |m| m.len())));
    eprintln!("xtask: fuzz {target}: committed corpus {files} inputs, {bytes} bytes");
    Ok(())
}

/// `nice -n 10 cargo fuzz` in `fuzz/`, built on the stable toolchain.
fn cargo_fuzz(fuzz_dir: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = if Path::new("/usr/bin/nice").exists() {
        let mut nice = Command::new("/usr/bin/nice");
        nice.args(["-n", "10"]).arg(cargo);
        nice
    } else {
        Command::new(cargo)
    };
    cmd.current_dir(fuzz_dir).env("RUSTC_BOOTSTRAP", "1").arg("fuzz");
    cmd
}

/// Installs cargo-fuzz with `cargo install --locked` when `cargo fuzz` is
/// missing (unless `PITFALL_NO_INSTALL` is set).
fn ensure_cargo_fuzz() -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let present =
        Command::new(&cargo).args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    if std::env::var_os("PITFALL_NO_INSTALL").is_some() {
        bail!("cargo-fuzz is missing: cargo install cargo-fuzz --locked");
    }
    eprintln!("xtask: installing cargo-fuzz");
    let status = Command::new(&cargo)
        .args(["install", "cargo-fuzz", "--locked"])
        .status()
        .context("cargo install cargo-fuzz")?;
    if !status.success() {
        bail!("cargo install cargo-fuzz failed ({status})");
    }
    Ok(())
}

/// Writes seed inputs for `target` into `dir` from the repository's own
/// data; returns how many.
fn seed(root: &Path, target: &str, dir: &Path) -> anyhow::Result<usize> {
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for rule in rule_dirs(root)? {
        let meta =
            std::fs::read(rule.join("rule.json")).with_context(|| rule.display().to_string())?;
        let tests =
            std::fs::read(rule.join("tests.json")).with_context(|| rule.display().to_string())?;
        match target {
            "metadata" => {
                // An odd first byte makes the stand-in rule match, an even one clear.
                for abi in [&b"1"[..], b"2"] {
                    seeds.push([abi, &[0xFF], &meta, &[0xFF], &tests].concat());
                }
            }
            "manifest" => {
                let cases: serde_json::Value =
                    serde_json::from_slice(&tests).context("tests.json")?;
                for case in cases.as_array().into_iter().flatten() {
                    if let Some(m) = case.get("manifest") {
                        seeds.push(serde_json::to_vec(m)?);
                    }
                }
            }
            _ => {}
        }
    }
    if target == "abi_output" {
        seeds.extend(abi_output_seeds());
    }
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:04}")), s)?;
    }
    Ok(seeds.len())
}

fn rule_dirs(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("rules"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("rule.json").exists())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Hand-made `abi_output` inputs (format in `fuzz/targets.rs`): a memory
/// holding paths and parameter names, and calls that read fields, report
/// evidence, set `{a}` and `{b}`, select a remedy and return matched.
fn abi_output_seeds() -> Vec<Vec<u8>> {
    let memory = b"host.arch\0accelerators.0.model\0a\0b\0workload.dtype\0env.A\0";
    let call = |op: u8, args: [i32; 4]| {
        let mut c = vec![op];
        for a in args {
            c.extend_from_slice(&a.to_le_bytes());
        }
        c
    };
    let matched = [
        call(0, [0, 9, 0, 0]),
        call(3, [10, 20, 200, 64]),
        call(4, [0, 9, 0, 0]),
        call(4, [35, 14, 0, 0]),
        call(6, [31, 1, 200, 4]),
        call(6, [33, 1, 50, 5]),
        call(7, [1, 0, 0, 0]),
        call(8, [1, 0, 0, 0]),
    ];
    let undetermined = [call(5, [35, 14, 0, 0]), call(8, [2, 0, 0, 0])];
    let with_memory = |calls: &[Vec<u8>]| {
        let mut s = 256u16.to_le_bytes().to_vec();
        let mut mem = memory.to_vec();
        mem.resize(256, 0);
        s.extend_from_slice(&mem);
        s.extend(calls.iter().flatten());
        s
    };
    vec![with_memory(&matched), with_memory(&undetermined)]
}
