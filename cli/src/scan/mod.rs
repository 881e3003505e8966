//! `pitfall scan`: a manifest v1 from the machine it runs on ([`live`]), from
//! captured command outputs (`--from-dir`, [`from_dir`]), or from a
//! collect_env paste (`--from-collect-env`).
//!
//! Every source is text; each parser is a pure function over one kind of
//! text (one module each), so the live scan and the captures share them.
//! [`Sources`] gathers the texts, [`build`] turns them into a manifest, and
//! [`privacy::scrub`] redacts whatever identifier could still have slipped
//! through. What a source does not say is simply absent from the manifest.

use std::path::Path;

use anyhow::{Context, bail};
use pitfall_contract::Manifest;
use pitfall_contract::manifest::{
    Build, Container, Drivers, Host, MANIFEST_VERSION, Package, Workload,
};

mod collect_env;
pub(crate) mod command;
mod container;
mod cpuinfo;
mod env_allowlist;
mod gpu;
mod live;
mod meminfo;
mod nvcc;
mod nvidia_csv;
mod nvidia_xml;
mod os_release;
mod pip;
mod privacy;
mod summary;
mod topo;
mod uname;
mod vllm_args;

use privacy::Identifiers;

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
    ("collect_env.txt", "python -m torch.utils.collect_env (or vllm collect-env)"),
];

/// One source text and where it came from (a file or a command), for messages.
#[derive(Debug, Clone)]
pub(crate) struct Text {
    pub(crate) origin: String,
    pub(crate) body: String,
}

/// Everything a scan reads. Every field is optional: a missing source is a
/// missing fact, never an error.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    /// `nvidia-smi -q -x`.
    pub(crate) nvidia_xml: Option<Text>,
    /// `nvidia-smi --query-gpu=... --format=csv` (see [`nvidia_csv::QUERY`]).
    pub(crate) nvidia_csv: Option<Text>,
    /// `nvidia-smi topo -m`.
    pub(crate) nvidia_topo: Option<Text>,
    /// `/etc/os-release`, `uname -a` and `nvcc --version`, in one text.
    pub(crate) os: Option<Text>,
    /// `/proc/cpuinfo`.
    pub(crate) cpuinfo: Option<Text>,
    /// `/proc/meminfo`.
    pub(crate) meminfo: Option<Text>,
    /// `pip list --format=json`.
    pub(crate) pip_list: Option<Text>,
    /// `python -m torch.utils.collect_env` or `vllm collect-env`.
    pub(crate) collect_env: Option<Text>,
    /// The interpreter's version (`3.12.3`).
    pub(crate) python_version: Option<String>,
    /// `torch.__version__` (`2.11.0+cu130`), which pip lists without its tag.
    pub(crate) torch_version: Option<String>,
    /// `rustc --version`'s version.
    pub(crate) rustc: Option<String>,
    /// The build tools were looked for: a missing one is recorded as `null`.
    pub(crate) tools_probed: bool,
    /// Environment variables (filtered by [`env_allowlist`]).
    pub(crate) env: Vec<(String, String)>,
    /// The container runtime and `/dev/shm` size, when inside one.
    pub(crate) container: Option<(&'static str, Option<u64>)>,
    /// Host and user names to keep out.
    pub(crate) identifiers: Identifiers,
}

/// A manifest and what the scan has to say about how it got it.
#[derive(Debug, Clone)]
pub(crate) struct Scan {
    pub(crate) manifest: Manifest,
    /// Sources that were missing or unreadable (live scan), for people.
    pub(crate) notes: Vec<String>,
}

/// What to do with a source that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnBadSource {
    /// Files the user named: fail, naming the file and the problem.
    Fail,
    /// Command outputs of a live scan: note it and go on without.
    Note,
}

/// Builds the manifest from `sources` and the workload the user described.
pub(crate) fn build(
    sources: &Sources,
    workload: Option<Workload>,
    on_bad: OnBadSource,
) -> anyhow::Result<Scan> {
    let mut notes = Vec::new();
    let mut read = Reader { on_bad, notes: &mut notes };
    let xml =
        read.parse(&sources.nvidia_xml, "the XML of `nvidia-smi -q -x`", nvidia_xml::parse)?;
    let csv =
        read.parse(&sources.nvidia_csv, "the CSV of `nvidia-smi --query-gpu`", nvidia_csv::parse)?;
    let topology =
        read.parse(&sources.nvidia_topo, "the matrix of `nvidia-smi topo -m`", topo::parse)?;
    let cpu = read.parse(&sources.cpuinfo, "/proc/cpuinfo", cpuinfo::parse)?;
    let pips = read.parse(&sources.pip_list, "the JSON of `pip list --format=json`", pip::parse)?;
    let collected =
        read.parse(&sources.collect_env, "the output of collect_env", collect_env::parse)?;
    let os_text = sources.os.as_ref().map(|t| t.body.as_str()).unwrap_or_default();
    let (os, uname, nvcc) =
        (os_release::parse(os_text), uname::parse(os_text), nvcc::version(os_text));
    if let Some(text) = &sources.os
        && os.is_none()
        && uname.is_none()
        && nvcc.is_none()
    {
        let problem = format!(
            "{}: no os-release keys, `uname -a` line or `nvcc --version` output",
            text.origin
        );
        match on_bad {
            OnBadSource::Fail => bail!(problem),
            OnBadSource::Note => read.notes.push(problem),
        }
    }
    let ce = collected.unwrap_or_default();

    let mut ids = sources.identifiers.clone();
    if let Some(host) = uname.as_ref().and_then(|u| u.hostname.as_deref()) {
        ids.add(host);
    }

    // GPUs: the XML, with the CSV's compute capability; the CSV alone; else
    // the names a collect_env paste lists.
    let smi = match (xml, csv) {
        (Some(xml), Some(csv)) => Some(gpu::merge(xml, &csv)),
        (xml, csv) => xml.or(csv),
    };
    let topology = topology.or_else(|| ce.topology.as_deref().and_then(|t| topo::parse(t).ok()));
    let (gpus, driver, cuda) = match smi {
        Some(smi) => (smi.gpus, smi.driver, smi.cuda),
        None => (
            ce.gpus
                .iter()
                .map(|name| gpu::Gpu { name: Some(name.clone()), ..gpu::Gpu::default() })
                .collect(),
            None,
            None,
        ),
    };
    let accelerators = gpu::accelerators(&gpus, topology.as_ref());
    let driver = driver.or_else(|| ce.driver.clone());
    let drivers = (driver.is_some() || cuda.is_some()).then(|| Drivers {
        nvidia: driver,
        cuda,
        ..Drivers::default()
    });

    let cpu = cpu.unwrap_or_default();
    let host = Host {
        arch: uname.as_ref().and_then(|u| u.arch.clone()).or_else(|| ce.arch.clone()).or(cpu.arch),
        cpu_model: cpu.model.or_else(|| ce.cpu_model.clone()),
        memory_mib: sources.meminfo.as_ref().and_then(|t| meminfo::total_mib(&t.body)),
        os: os.or_else(|| ce.os.clone()),
        kernel: uname.and_then(|u| u.kernel).or_else(|| ce.kernel.clone()),
        ..Host::default()
    };
    let host = (host != Host::default()).then_some(host);

    let (mut packages, editable) = match pips {
        Some(list) => (list.packages, list.editable),
        None => (ce.packages.clone(), Vec::new()),
    };
    add_versions(&mut packages, sources, &ce);

    let mut build = Build {
        from_source: editable,
        torch_cuda_arch_list: ce.cuda_archs.clone(),
        ..Build::default()
    };
    let nvcc = nvcc.or_else(|| ce.nvcc.clone());
    if nvcc.is_some() || sources.tools_probed {
        build.tools.insert("nvcc".to_owned(), nvcc);
    }
    if sources.rustc.is_some() || sources.tools_probed {
        build.tools.insert("rustc".to_owned(), sources.rustc.clone());
    }
    let build = (build != Build::default()).then_some(build);

    let env = sources.env.iter().chain(&ce.env).map(|(n, v)| (n.as_str(), v.as_str()));
    let env = env_allowlist::filter(env, &ids);

    let container =
        sources.container.map(|(_, shm)| Container { shm_size_mib: shm, ..Container::default() });

    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        host,
        accelerators,
        drivers,
        container,
        packages,
        env,
        build,
        workload,
        ..Manifest::default()
    };
    Ok(Scan { manifest: privacy::scrub(manifest, &ids), notes })
}

/// Parses sources, failing or noting as [`OnBadSource`] says.
struct Reader<'a> {
    on_bad: OnBadSource,
    notes: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn parse<T>(
        &mut self,
        text: &Option<Text>,
        what: &str,
        parser: impl Fn(&str) -> anyhow::Result<T>,
    ) -> anyhow::Result<Option<T>> {
        let Some(text) = text else { return Ok(None) };
        match parser(&text.body) {
            Ok(value) => Ok(Some(value)),
            Err(e) if self.on_bad == OnBadSource::Fail => {
                Err(e.context(format!("{}: not {what}", text.origin)))
            }
            Err(e) => {
                self.notes.push(format!("{}: not {what} ({e:#}); skipped", text.origin));
                Ok(None)
            }
        }
    }
}

/// Versions pip does not list: the interpreter (as the package `python`, which
/// rules read), torch's local tag (`+cu130`, which pip drops for PyPI wheels
/// but `torch.__version__` keeps), and vLLM's version from collect_env.
fn add_versions(packages: &mut Vec<Package>, sources: &Sources, ce: &collect_env::CollectEnv) {
    let find = |packages: &mut Vec<Package>, name: &str| {
        packages.iter().position(|p| p.name.eq_ignore_ascii_case(name))
    };
    if let Some(full) = sources.torch_version.as_deref().or(ce.torch_version.as_deref()) {
        match find(packages, "torch") {
            // Same release, more detail: take the tagged spelling.
            Some(i) => {
                let listed = packages[i].version.as_deref().unwrap_or_default();
                if full.split('+').next() == Some(listed) && full.contains('+') {
                    packages[i].version = Some(full.to_owned());
                }
            }
            None => packages.push(pip::pypi("torch", full)),
        }
    }
    if let Some(vllm) = &ce.vllm_version
        && find(packages, "vllm").is_none()
    {
        packages.push(pip::pypi("vllm", vllm));
    }
    if let Some(python) = sources.python_version.as_deref().or(ce.python_version.as_deref())
        && find(packages, "python").is_none()
    {
        packages.push(Package {
            name: "python".to_owned(),
            version: Some(python.to_owned()),
            ..Package::default()
        });
    }
}

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
        Ok(Some(Text { origin: path.display().to_string(), body }))
    };
    let sources = Sources {
        nvidia_xml: read("nvidia-smi-q.xml")?,
        nvidia_csv: read("nvidia-smi-query.csv")?,
        nvidia_topo: read("nvidia-smi-topo.txt")?,
        os: read("os.txt")?,
        cpuinfo: read("cpuinfo.txt")?,
        meminfo: read("meminfo.txt")?,
        pip_list: read("pip-list.json")?,
        collect_env: read("collect_env.txt")?,
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
        &sources.collect_env,
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

/// The sources in a collect_env paste.
pub(crate) fn from_collect_env(path: &Path) -> anyhow::Result<Sources> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let body = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    Ok(Sources {
        collect_env: Some(Text { origin: path.display().to_string(), body }),
        ..Sources::default()
    })
}

/// A live scan of this machine (`pitfall explain --scan`): its manifest,
/// each missing tool noted on stderr.
pub(crate) fn this_machine() -> anyhow::Result<Manifest> {
    let scan = build(&live::collect(None), None, OnBadSource::Note)?;
    for note in &scan.notes {
        eprintln!("pitfall: note: {note}");
    }
    Ok(scan.manifest)
}
