//! `pitfall scan`: a manifest v1 from the machine it runs on ([`live`]), from
//! captured command outputs (`--from-dir`, [`from_dir`]), or from an
//! environment paste (`--from-collect-env`). The parsers, the manifest
//! builder and the redaction are `pitfall_collect`'s (shared with the
//! registry's `POST /v1/manifest/from-text`); this module finds the texts.

use std::path::Path;

use anyhow::{Context, bail};
use pitfall_collect::{Sources, Text};

pub(crate) mod command;
mod live;

/// The capture files `--from-dir` reads, and the command each one holds.
pub(crate) const CAPTURE_FILES: &[(&str, &str)] = &[
    ("nvidia-smi-q.xml", "nvidia-smi -q -x"),
    (
        "nvidia-smi-query.csv",
        "nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version --format=csv",
    ),
    ("nvidia-smi-topo.txt", "nvidia-smi topo -m"),
    ("os.txt", "cat /etc/os-release; uname -a; nvcc --version"),
    ("cpuinfo.txt", "cat /proc/cpuinfo"),
    ("meminfo.txt", "cat /proc/meminfo"),
    ("pip-list.json", "pip list --format=json"),
    (
        "collect_env.txt",
        "python -m torch.utils.collect_env (or vllm collect-env, sglang.check_env, nvidia-smi)",
    ),
];

/// The sources in a folder of captures (file names as in [`CAPTURE_FILES`]).
pub(crate) fn from_dir(dir: &Path) -> anyhow::Result<Sources> {
    let listing =
        std::fs::read_dir(dir).with_context(|| format!("reading the folder {}", dir.display()))?;
    drop(listing);
    let read = |name: &str| -> anyhow::Result<Option<Text>> {
        let path = dir.join(name);
        if !path.exists() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let body = String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
        Ok(Some(Text::new(path.display().to_string(), body)))
    };
    let sources = Sources {
        nvidia_xml: read("nvidia-smi-q.xml")?,
        nvidia_csv: read("nvidia-smi-query.csv")?,
        nvidia_topo: read("nvidia-smi-topo.txt")?,
        os: read("os.txt")?,
        cpuinfo: read("cpuinfo.txt")?,
        meminfo: read("meminfo.txt")?,
        pip_list: read("pip-list.json")?,
        paste: read("collect_env.txt")?,
        ..Sources::default()
    };
    let any = [
        &sources.nvidia_xml,
        &sources.nvidia_csv,
        &sources.nvidia_topo,
        &sources.os,
        &sources.cpuinfo,
        &sources.meminfo,
        &sources.pip_list,
        &sources.paste,
    ]
    .iter()
    .any(|t| t.is_some());
    if !any {
        let names: Vec<&str> = CAPTURE_FILES.iter().map(|(name, _)| *name).collect();
        bail!(
            "{}: none of the capture files is there (expected some of {})",
            dir.display(),
            names.join(", ")
        );
    }
    Ok(sources)
}

/// The sources in an environment paste (collect_env, sglang.check_env,
/// TGI's `--env`, nvidia-smi's text).
pub(crate) fn from_collect_env(path: &Path) -> anyhow::Result<Sources> {
    Ok(Sources { paste: Some(read_text(path)?), ..Sources::default() })
}

/// A text file the user named, refused unless it is UTF-8.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<Text> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let body = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    Ok(Text::new(path.display().to_string(), body))
}

/// A live scan of this machine (`pitfall explain --scan`): its manifest,
/// each missing tool noted on stderr.
pub(crate) fn this_machine() -> anyhow::Result<pitfall_contract::Manifest> {
    let scan =
        pitfall_collect::build(&live::collect(None), None, pitfall_collect::OnBadSource::Note)?;
    for note in &scan.notes {
        eprintln!("pitfall: note: {note}");
    }
    Ok(scan.manifest)
}
