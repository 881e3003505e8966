//! Pitfall's collector: a manifest v1 from text a machine printed.
//!
//! Every source is text: the outputs of nvidia-smi, `/proc`, pip, and the
//! environment reports people paste into bug reports (collect_env,
//! `sglang.check_env`, TGI's `--env`, nvidia-smi's table; see [`Format`]).
//! Each parser is a pure function over one kind of text (one module each),
//! so `pitfall scan` (live, from captures or from a paste) and the
//! registry's `POST /v1/manifest/from-text` share them. [`Sources`] gathers
//! the texts, [`build`] turns them into a manifest, and [`privacy::scrub`]
//! redacts whatever identifier could still have slipped through: no GPU
//! UUID, serial, PCI bus id, host or user name, or IP address reaches a
//! manifest. What a source does not say is absent from the manifest, and
//! [`missing`] names it.

use pitfall_contract::Manifest;
use pitfall_contract::manifest::{
    Build, Container, Drivers, Host, MANIFEST_VERSION, Package, Workload,
};

pub mod container;
mod cpuinfo;
mod env_allowlist;
mod error;
mod gpu;
mod meminfo;
mod nvcc;
mod nvidia_csv;
mod nvidia_smi_text;
mod nvidia_xml;
mod os_release;
mod paste;
mod pip;
pub mod privacy;
mod prose;
mod rope_scaling;
pub mod serve_args;
pub mod summary;
mod topo;
mod uname;

pub use error::{Error, ParseError};
pub use paste::Format;
use privacy::Identifiers;

/// The query a live scan gives `nvidia-smi --query-gpu=... --format=csv`.
pub const NVIDIA_CSV_QUERY: &str = nvidia_csv::QUERY;
/// A Python script printing pip's JSON list from `importlib.metadata`, for
/// interpreters without pip.
pub const PIP_METADATA_SCRIPT: &str = pip::METADATA_SCRIPT;

/// One source text and where it came from (a file or a command), for messages.
#[derive(Debug, Clone)]
pub struct Text {
    pub origin: String,
    pub body: String,
}

impl Text {
    pub fn new(origin: impl Into<String>, body: impl Into<String>) -> Text {
        Text { origin: origin.into(), body: body.into() }
    }
}

/// Everything a scan reads. Every field is optional: a missing source is a
/// missing fact, never an error.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `nvidia-smi -q -x`.
    pub nvidia_xml: Option<Text>,
    /// `nvidia-smi --query-gpu=... --format=csv` (see [`NVIDIA_CSV_QUERY`]).
    pub nvidia_csv: Option<Text>,
    /// `nvidia-smi topo -m`.
    pub nvidia_topo: Option<Text>,
    /// `/etc/os-release`, `uname -a` and `nvcc --version`, in one text.
    pub os: Option<Text>,
    /// `/proc/cpuinfo`.
    pub cpuinfo: Option<Text>,
    /// `/proc/meminfo`.
    pub meminfo: Option<Text>,
    /// `pip list --format=json`.
    pub pip_list: Option<Text>,
    /// An environment report as people paste it: collect_env, SGLang's
    /// check_env, TGI's `--env`, nvidia-smi's text (see [`Format`]).
    pub paste: Option<Text>,
    /// A log the failing stack printed (server output, a traceback): read
    /// only for what it states about the machine (see [`prose`]), after the
    /// paste, whose facts win.
    pub log: Option<Text>,
    /// The interpreter's version (`3.12.3`).
    pub python_version: Option<String>,
    /// `torch.__version__` (`2.11.0+cu130`), which pip lists without its tag.
    pub torch_version: Option<String>,
    /// `rustc --version`'s version.
    pub rustc: Option<String>,
    /// The build tools were looked for: a missing one is recorded as `null`.
    pub tools_probed: bool,
    /// Environment variables (filtered by the allowlist).
    pub env: Vec<(String, String)>,
    /// The container runtime and `/dev/shm` size, when inside one.
    pub container: Option<(&'static str, Option<u64>)>,
    /// Host and user names to keep out.
    pub identifiers: Identifiers,
}

/// A manifest and what the scan has to say about how it got it.
#[derive(Debug, Clone)]
pub struct Scan {
    pub manifest: Manifest,
    /// Sources that were missing or unreadable (live scan), and where a
    /// paste was cut short, for people.
    pub notes: Vec<String>,
    /// The kinds of paste recognised in [`Sources::paste`].
    pub formats: Vec<Format>,
}

/// What to do with a source that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnBadSource {
    /// Texts the user gave: fail, naming the text and the problem.
    Fail,
    /// Command outputs of a live scan: note it and go on without.
    Note,
}

/// Builds the manifest from `sources` and the workload the user described.
pub fn build(
    sources: &Sources,
    workload: Option<Workload>,
    on_bad: OnBadSource,
) -> Result<Scan, Error> {
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
    let pasted = read.parse(&sources.paste, "an environment report", paste::parse)?;
    let os_text = sources.os.as_ref().map(|t| t.body.as_str()).unwrap_or_default();
    let (os, uname, nvcc) =
        (os_release::parse(os_text), uname::parse(os_text), nvcc::version(os_text));
    if let Some(text) = &sources.os
        && os.is_none()
        && uname.is_none()
        && nvcc.is_none()
    {
        let problem = "no os-release keys, `uname -a` line or `nvcc --version` output";
        match on_bad {
            OnBadSource::Fail => {
                return Err(Error::Source {
                    origin: text.origin.clone(),
                    what: "os-release, `uname -a` or `nvcc --version`",
                    problem: ParseError(problem.to_owned()),
                });
            }
            OnBadSource::Note => read.notes.push(format!("{}: {problem}", text.origin)),
        }
    }
    let mut pasted = pasted.unwrap_or_default();
    if let Some(log) = &sources.log {
        pasted.fill_from(paste::read_log(&log.body));
    }
    notes.extend(pasted.notes.iter().cloned());

    let mut ids = sources.identifiers.clone();
    if let Some(host) = uname.as_ref().and_then(|u| u.hostname.as_deref()) {
        ids.add(host);
    }
    for word in &pasted.identifiers {
        ids.add(word);
    }
    if let Some(cut) = &pasted.cut_at {
        // The note quotes the paste: redacted like the manifest.
        let quoted = privacy::redact_text(&shorten(cut), &ids);
        notes.push(format!(
            "the paste ends mid-line (`{quoted}`); what that line began to say was not read"
        ));
    }

    // GPUs: the XML, with the CSV's compute capability; the CSV alone; else
    // the devices a paste lists.
    let smi = match (xml, csv) {
        (Some(xml), Some(csv)) => Some(gpu::merge(xml, &csv)),
        (xml, csv) => xml.or(csv),
    };
    let topology =
        topology.or_else(|| pasted.topology.as_deref().and_then(|t| topo::parse(t).ok()));
    let (gpus, driver, cuda_driver) = match smi {
        Some(smi) => (smi.gpus, smi.driver, smi.cuda),
        None => (pasted.gpus.clone(), None, None),
    };
    let accelerators = gpu::accelerators(&gpus, topology.as_ref());
    let driver = driver.or_else(|| pasted.driver.clone());
    let cuda_driver = cuda_driver.or_else(|| pasted.cuda_driver.clone());
    let cuda_runtime = pasted.cuda_runtime.clone();
    let drivers = (driver.is_some() || cuda_driver.is_some() || cuda_runtime.is_some())
        .then(|| Drivers { nvidia: driver, cuda_driver, cuda_runtime, ..Drivers::default() });

    let cpu = cpu.unwrap_or_default();
    let host = Host {
        arch: uname
            .as_ref()
            .and_then(|u| u.arch.clone())
            .or_else(|| pasted.arch.clone())
            .or(cpu.arch),
        cpu_model: cpu.model.or_else(|| pasted.cpu_model.clone()),
        memory_mib: sources.meminfo.as_ref().and_then(|t| meminfo::total_mib(&t.body)),
        os: os.or_else(|| pasted.os.clone()),
        kernel: uname.and_then(|u| u.kernel).or_else(|| pasted.kernel.clone()),
        glibc: pasted.glibc.clone(),
        cpu_flags: pasted.cpu_flags.clone(),
        ..Host::default()
    };
    let host = (host != Host::default()).then_some(host);

    let (mut packages, editable) = match pips {
        Some(list) => (list.packages, list.editable),
        None => (dedup_packages(pasted.packages.clone()), Vec::new()),
    };
    add_versions(&mut packages, sources, &pasted);

    let mut build = Build {
        from_source: editable,
        torch_cuda_arch_list: pasted.cuda_archs.clone(),
        ..Build::default()
    };
    let nvcc = nvcc.or_else(|| pasted.nvcc.clone());
    if nvcc.is_some() || sources.tools_probed {
        build.tools.insert("nvcc".to_owned(), nvcc);
    }
    if sources.rustc.is_some() || sources.tools_probed {
        build.tools.insert("rustc".to_owned(), sources.rustc.clone());
    }
    let build = (build != Build::default()).then_some(build);

    let env = sources.env.iter().chain(&pasted.env).map(|(n, v)| (n.as_str(), v.as_str()));
    let env = env_allowlist::filter(env, &ids);

    let container =
        sources.container.map(|(_, shm)| Container { shm_size_mib: shm, ..Container::default() });
    // What a vLLM log says the engine ran with, where the command is silent.
    let workload = match (workload, pasted.workload.clone()) {
        (Some(mut w), Some(logged)) => {
            fill_workload(&mut w, logged);
            Some(w)
        }
        (w, logged) => w.or(logged),
    };
    // The engine that printed the paste, unless the serve command names one.
    let workload = match (workload, pasted.engine) {
        (Some(mut w), Some(engine)) => {
            w.engine.get_or_insert_with(|| engine.to_owned());
            Some(w)
        }
        (None, Some(engine)) => {
            Some(Workload { engine: Some(engine.to_owned()), ..Workload::default() })
        }
        (workload, None) => workload,
    };

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
    Ok(Scan { manifest: privacy::scrub(manifest, &ids), notes, formats: pasted.formats })
}

/// Fills the fields a vLLM log line gives that the serve command left unset.
fn fill_workload(w: &mut Workload, logged: Workload) {
    w.engine = w.engine.take().or(logged.engine);
    w.model = w.model.take().or(logged.model);
    w.dtype = w.dtype.take().or(logged.dtype);
    w.max_model_len = w.max_model_len.or(logged.max_model_len);
    w.tensor_parallel_size = w.tensor_parallel_size.or(logged.tensor_parallel_size);
    w.pipeline_parallel_size = w.pipeline_parallel_size.or(logged.pipeline_parallel_size);
    w.quantization = w.quantization.take().or(logged.quantization);
    w.kv_cache_dtype = w.kv_cache_dtype.take().or(logged.kv_cache_dtype);
    w.rope_scaling_type = w.rope_scaling_type.take().or(logged.rope_scaling_type);
}

/// At most 60 characters of a line, for a note.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// A manifest from an environment paste and, optionally, the serve command
/// that failed: what the CLI's `--from-collect-env` + `--from-vllm-args`
/// and the registry's `POST /v1/manifest/from-text` build. An empty paste
/// with a serve command is a manifest of the workload alone.
pub fn from_text(paste: &str, serve_command: Option<&str>) -> Result<Scan, Error> {
    from_texts(paste, serve_command, None)
}

/// [`from_text`], with a log the failing stack printed read for what it
/// states about the machine (see [`Sources::log`]).
pub fn from_texts(
    paste: &str,
    serve_command: Option<&str>,
    log: Option<&str>,
) -> Result<Scan, Error> {
    let mut sources = Sources::default();
    if !paste.trim().is_empty() {
        sources.paste = Some(Text::new("the environment paste", paste));
    }
    if let Some(log) = log.filter(|l| !l.trim().is_empty()) {
        sources.log = Some(Text::new("the log", log));
    }
    let serve = serve_command
        .filter(|c| !c.trim().is_empty())
        .map(serve_args::parse)
        .transpose()
        .map_err(Error::Command)?;
    apply_serve(sources, serve, None, OnBadSource::Fail)
}

/// Builds from `sources` with the serve command's workload, environment
/// and image laid over them; `adjust` changes the workload last (the CLI's
/// flags).
pub fn apply_serve(
    mut sources: Sources,
    serve: Option<serve_args::ServeCommand>,
    adjust: Option<&dyn Fn(&mut Workload)>,
    on_bad: OnBadSource,
) -> Result<Scan, Error> {
    let mut workload = Workload::default();
    let mut container = Container::default();
    if let Some(serve) = serve {
        workload = serve.workload;
        sources.env.extend(serve.env);
        container.image = serve.image;
        container.shm_size_mib = serve.shm_size_mib;
        container.ipc = serve.ipc;
        container.engine = serve.container_engine;
        container.gpu_request = serve.gpu_request;
    }
    if let Some(adjust) = adjust {
        adjust(&mut workload);
    }
    let workload = (workload != Workload::default()).then_some(workload);
    let engine = workload.as_ref().and_then(|w| w.engine.clone());
    let mut scan = build(&sources, workload, on_bad)?;
    // `vllm serve` and `sglang.launch_server` run an installed vllm or
    // sglang: the package is there, its version unknown unless a text says.
    if let Some(engine) = engine.filter(|e| matches!(e.as_str(), "vllm" | "sglang"))
        && !scan.manifest.packages.iter().any(|p| p.name.eq_ignore_ascii_case(&engine))
    {
        scan.manifest.packages.push(Package {
            name: engine,
            ecosystem: Some("pypi".to_owned()),
            ..Package::default()
        });
    }
    if container != Container::default() {
        // `docker run` says what the container is; a live scan inside one
        // knows its /dev/shm better than the command that started it.
        let found = scan.manifest.container.get_or_insert_with(Container::default);
        found.image = found.image.take().or(container.image);
        found.shm_size_mib = found.shm_size_mib.or(container.shm_size_mib);
        found.ipc = found.ipc.take().or(container.ipc);
        found.engine = found.engine.take().or(container.engine);
        found.gpu_request = found.gpu_request.take().or(container.gpu_request);
        scan.manifest = privacy::scrub(std::mem::take(&mut scan.manifest), &sources.identifiers);
    }
    Ok(scan)
}

/// A fact a manifest lacks that rules often need, and where to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The manifest field, e.g. `drivers.nvidia`.
    pub path: &'static str,
    /// What would give it, for people.
    pub hint: &'static str,
}

/// The facts rules most often need that `manifest` does not have.
pub fn missing(manifest: &Manifest) -> Vec<Missing> {
    let host = manifest.host.as_ref();
    let drivers = manifest.drivers.as_ref();
    let package = |name: &str| {
        manifest.packages.iter().any(|p| p.name.eq_ignore_ascii_case(name) && p.version.is_some())
    };
    let checks: [(bool, &'static str, &'static str); 8] = [
        (
            manifest.accelerators.iter().any(|a| a.model.is_some()),
            "accelerators",
            "the GPU model: collect_env's `GPU models and configuration`, or `nvidia-smi`",
        ),
        (
            drivers.is_some_and(|d| d.nvidia.is_some()),
            "drivers.nvidia",
            "the driver version: `nvidia-smi`, or collect_env's `Nvidia driver version`",
        ),
        (
            drivers.is_some_and(|d| d.cuda_runtime.is_some()) || has_cuda_tag(manifest),
            "drivers.cuda_runtime",
            "the CUDA the stack was built with: collect_env's `CUDA used to build PyTorch`",
        ),
        (package("torch"), "packages.torch", "the torch version: collect_env's `PyTorch version`"),
        (
            package("python"),
            "packages.python",
            "the Python version: collect_env's `Python version`",
        ),
        (
            host.is_some_and(|h| h.os.is_some()),
            "host.os",
            "the operating system: collect_env's `OS`",
        ),
        (
            host.is_some_and(|h| h.arch.is_some()),
            "host.arch",
            "the CPU architecture: collect_env's `OS` or `Architecture`",
        ),
        (
            manifest.workload.as_ref().is_some_and(|w| w.model.is_some()),
            "workload.model",
            "what is served: the serve command (`vllm serve ...`, `sglang.launch_server ...`)",
        ),
    ];
    let mut missing: Vec<Missing> = checks
        .into_iter()
        .filter(|(present, _, _)| !present)
        .map(|(_, path, hint)| Missing { path, hint })
        .collect();
    // The engine a serve command runs, when nothing said which release.
    for (engine, path, hint) in [
        (
            "vllm",
            "packages.vllm.version",
            "vLLM's version: `vllm --version`, or `vllm collect-env`",
        ),
        ("sglang", "packages.sglang.version", "SGLang's version: `python3 -m sglang.check_env`"),
    ] {
        if manifest.packages.iter().any(|p| p.name == engine && p.version.is_none()) {
            missing.push(Missing { path, hint });
        }
    }
    missing
}

/// Whether torch's version carries its CUDA build (`+cu128`).
fn has_cuda_tag(manifest: &Manifest) -> bool {
    manifest.packages.iter().any(|p| {
        p.name.eq_ignore_ascii_case("torch")
            && p.version.as_deref().is_some_and(|v| v.contains("+cu"))
    })
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
        what: &'static str,
        parser: impl Fn(&str) -> error::Result<T>,
    ) -> Result<Option<T>, Error> {
        let Some(text) = text else { return Ok(None) };
        match parser(&text.body) {
            Ok(value) => Ok(Some(value)),
            Err(problem) if self.on_bad == OnBadSource::Fail => {
                Err(Error::Source { origin: text.origin.clone(), what, problem })
            }
            Err(e) => {
                self.notes.push(format!("{}: not {what} ({e}); skipped", text.origin));
                Ok(None)
            }
        }
    }
}

/// One entry per package name: a paste lists a package under `[pip3]` and
/// again under `[conda]`; the first (pip's) wins.
fn dedup_packages(packages: Vec<Package>) -> Vec<Package> {
    let mut out: Vec<Package> = Vec::with_capacity(packages.len());
    for package in packages {
        if !out.iter().any(|p| p.name.eq_ignore_ascii_case(&package.name)) {
            out.push(package);
        }
    }
    out
}

/// Versions pip does not list: the interpreter (as the package `python`, which
/// rules read), torch's local tag (`+cu130`, which pip drops for PyPI wheels
/// but `torch.__version__` keeps), and vLLM's version from collect_env.
fn add_versions(packages: &mut Vec<Package>, sources: &Sources, pasted: &paste::Paste) {
    let find = |packages: &mut Vec<Package>, name: &str| {
        packages.iter().position(|p| p.name.eq_ignore_ascii_case(name))
    };
    if let Some(full) = sources.torch_version.as_deref().or(pasted.torch_version.as_deref()) {
        match find(packages, "torch") {
            // Same release, more detail: take the tagged spelling.
            Some(i) => {
                let listed = packages[i].version.as_deref().unwrap_or_default();
                if full.split('+').next() == listed.split('+').next() && full.contains('+') {
                    packages[i].version = Some(full.to_owned());
                }
            }
            None => packages.push(pip::pypi("torch", full)),
        }
    }
    if let Some(vllm) = &pasted.vllm_version
        && find(packages, "vllm").is_none()
    {
        packages.push(pip::pypi("vllm", vllm));
    }
    if let Some(python) = sources.python_version.as_deref().or(pasted.python_version.as_deref())
        && find(packages, "python").is_none()
    {
        packages.push(Package {
            name: "python".to_owned(),
            version: Some(python.to_owned()),
            ..Package::default()
        });
    }
}
