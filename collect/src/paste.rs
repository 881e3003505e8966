//! What people paste into bug reports, read line by line: PyTorch's and
//! vLLM's `collect_env`, SGLang's `python3 -m sglang.check_env`, TGI's
//! `--env` output, and `nvidia-smi` / `nvidia-smi -q` text, alone or mixed
//! in one paste, whole or cut short.
//!
//! The formats differ in their keys, not their shape (`key: value` lines,
//! vLLM pads the key: `OS                           : Ubuntu ...`), so one
//! pass reads them all and records which [`Format`]s it saw. Only the facts
//! below are read; paths, host names, UUIDs and anything else in the paste
//! are never copied.

use pitfall_contract::manifest::{Os, Package, Workload};
use pitfall_contract::normalize::canonical_arch;

use crate::error::{Result, fail};
use crate::gpu::{Gpu, parse_mib};
use crate::nvidia_smi_text;
use crate::os_release;
use crate::pip::pypi;
use crate::prose::Prose;

/// A kind of paste the reader knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// `python -m torch.utils.collect_env`.
    TorchCollectEnv,
    /// `vllm collect-env` (or vLLM's `collect_env.py`).
    VllmCollectEnv,
    /// `python3 -m sglang.check_env`.
    SglangCheckEnv,
    /// `text-generation-launcher --env`.
    TgiEnv,
    /// `nvidia-smi` (the table).
    NvidiaSmi,
    /// `nvidia-smi -q` (the text report).
    NvidiaSmiQuery,
    /// `Key: value` lines people write themselves, as issue templates ask
    /// (`- **GPU**: NVIDIA GeForce RTX 5090`, `PyTorch version: 2.5.1`).
    Summary,
    /// `pip freeze` (`name==version`) or `pip list` (`name   version`) lines.
    PipList,
    /// Sentences that name a GPU, a package's version or an OS (see
    /// [`crate::prose`]).
    Prose,
    /// vLLM's engine start-up line (`Initializing an LLM engine (v0.6.4)
    /// with config: ...`).
    VllmLog,
}

impl Format {
    /// The command that prints it, for people.
    pub fn command(self) -> &'static str {
        match self {
            Format::TorchCollectEnv => "python -m torch.utils.collect_env",
            Format::VllmCollectEnv => "vllm collect-env",
            Format::SglangCheckEnv => "python3 -m sglang.check_env",
            Format::TgiEnv => "text-generation-launcher --env",
            Format::NvidiaSmi => "nvidia-smi",
            Format::NvidiaSmiQuery => "nvidia-smi -q",
            Format::Summary => "a `Key: value` summary (GPU, PyTorch, Python, driver, ...)",
            Format::PipList => "pip freeze / pip list",
            Format::Prose => "sentences naming a GPU, a package version or an OS",
            Format::VllmLog => "vLLM's server log (its engine start-up line)",
        }
    }

    /// A stable name for JSON answers.
    pub fn name(self) -> &'static str {
        match self {
            Format::TorchCollectEnv => "torch-collect-env",
            Format::VllmCollectEnv => "vllm-collect-env",
            Format::SglangCheckEnv => "sglang-check-env",
            Format::TgiEnv => "tgi-env",
            Format::NvidiaSmi => "nvidia-smi",
            Format::NvidiaSmiQuery => "nvidia-smi-q",
            Format::Summary => "summary",
            Format::PipList => "pip-list",
            Format::Prose => "prose",
            Format::VllmLog => "vllm-log",
        }
    }
}

/// The facts a paste gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Paste {
    /// The formats seen, in order of first appearance.
    pub(crate) formats: Vec<Format>,
    /// `PyTorch version` (`torch.__version__`, with its `+cu130` tag).
    pub(crate) torch_version: Option<String>,
    pub(crate) os: Option<Os>,
    pub(crate) arch: Option<String>,
    pub(crate) kernel: Option<String>,
    /// `Libc version: glibc-2.35` → `2.35`.
    pub(crate) glibc: Option<String>,
    pub(crate) python_version: Option<String>,
    /// What `nvcc --version` says (`CUDA runtime version`, SGLang's `NVCC`).
    pub(crate) nvcc: Option<String>,
    pub(crate) driver: Option<String>,
    /// The newest CUDA the driver supports (nvidia-smi's `CUDA Version`).
    pub(crate) cuda_driver: Option<String>,
    /// `CUDA used to build PyTorch`.
    pub(crate) cuda_runtime: Option<String>,
    /// One per device, in index order.
    pub(crate) gpus: Vec<Gpu>,
    pub(crate) cpu_model: Option<String>,
    /// lscpu's `Flags:` (collect_env prints lscpu).
    pub(crate) cpu_flags: Vec<String>,
    /// `[pip3]`, `[conda]` and SGLang's `name: version` lines.
    pub(crate) packages: Vec<Package>,
    pub(crate) vllm_version: Option<String>,
    /// vLLM's build flags, `CUDA Archs: 8.0 9.0+PTX`.
    pub(crate) cuda_archs: Vec<String>,
    /// A GPU topology matrix (`nvidia-smi topo -m`), for [`crate::topo`].
    pub(crate) topology: Option<String>,
    /// `NAME=value` lines (filtered later by the allowlist).
    pub(crate) env: Vec<(String, String)>,
    /// `user@host` words of shell prompts in the paste, to keep out.
    pub(crate) identifiers: Vec<String>,
    /// The engine that printed the paste, when one did (TGI's launcher).
    pub(crate) engine: Option<&'static str>,
    /// The last line, when the paste stops on a key or half a value.
    pub(crate) cut_at: Option<String>,
    /// What a vLLM log line in the paste says the engine was started with.
    pub(crate) workload: Option<Workload>,
    /// What the paste's prose could not settle, for people.
    pub(crate) notes: Vec<String>,
}

/// Machine names as `uname -m` prints them.
const MACHINES: &[&str] =
    &["x86_64", "aarch64", "arm64", "amd64", "ppc64le", "s390x", "i686", "riscv64"];

/// Values the tools print when they have none.
fn absent(value: &str) -> bool {
    matches!(
        value,
        "" | "N/A"
            | "[N/A]"
            | "Could not collect"
            | "No CUDA"
            | "None"
            | "Not Set"
            | "Module Not Found"
            | "Not Supported"
    )
}

/// A version as tools print it: digits first, no trailing separator (a
/// value cut mid-version, `550.`, is not one).
fn version(value: &str) -> Option<String> {
    let value = value.split_whitespace().next()?.trim_matches('`');
    let release = value.split(['+', '-']).next().unwrap_or_default();
    let mut parts = release.split('.');
    // `12`, `2.5.1`, `0.6.4.post1`, `2.7.0.dev20250310+cu124`: numbers
    // first; `2.x` names no release.
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let ok = parts.next().is_some_and(numeric)
        && parts.next().is_none_or(numeric)
        && !value.ends_with(['.', '+', '-'])
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    ok.then(|| value.to_owned())
}

/// Reads a paste. Fails only when no line of any known format is in it.
pub(crate) fn parse(text: &str) -> Result<Paste> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Paste::default();
    let mut i = 0;
    // Inside `nvidia-smi -q`'s `FB Memory Usage` section: its `Total` is the GPU's memory.
    let mut in_fb_memory = false;
    // The devices nvidia-smi lists (with their memory), apart from those
    // a `GPU 0: name` line lists: a paste often has both.
    let mut smi_gpus: Vec<Gpu> = Vec::new();
    // Lines no format takes, read as sentences.
    let mut prose = Prose::default();
    while i < lines.len() {
        let line = lines[i].trim_end();
        i += 1;
        prompt_identifiers(line, &mut out.identifiers);
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("[pip3]") {
            if let Some((name, v)) = rest.trim().split_once("==") {
                out.packages.push(pypi(name.trim(), v.trim()));
            }
            out.saw(Format::TorchCollectEnv);
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("[conda]") {
            // `[conda] numpy  1.26.4  pypi_0  pypi`: name, version, build, channel.
            // A paste cut short may keep only the first two columns.
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [name, v, rest @ ..] = words.as_slice()
                && version(v).is_some()
            {
                let mut package = pypi(name, v);
                if rest.get(1).is_some_and(|channel| *channel != "pypi") {
                    package.ecosystem = Some("conda".to_owned());
                }
                out.packages.push(package);
            }
            out.saw(Format::TorchCollectEnv);
            continue;
        }
        if let Some(header) = nvidia_smi_text::header(line) {
            out.saw(Format::NvidiaSmi);
            out.driver = out.driver.take().or(header.driver);
            out.cuda_driver = out.cuda_driver.take().or(header.cuda);
            continue;
        }
        if let Some(row) = nvidia_smi_text::gpu_row(line) {
            let memory = lines.get(i).and_then(|next| nvidia_smi_text::memory_total(next));
            smi_gpus.push(Gpu { name: Some(row), memory_mib: memory, compute_capability: None });
            continue;
        }
        if let Some((name, value)) = env_line(line) {
            out.env.push((name.to_owned(), value.to_owned()));
            continue;
        }
        if !line.contains(':') && pip_line(trimmed, &mut out) {
            out.saw(Format::PipList);
            continue;
        }
        if let Some(archs) = trimmed.strip_prefix("CUDA Archs:") {
            let archs = archs.split(';').next().unwrap_or_default().trim();
            if !absent(archs) {
                out.cuda_archs =
                    archs.split([' ', ',']).filter(|a| !a.is_empty()).map(str::to_owned).collect();
            }
            continue;
        }
        if trimmed == "FB Memory Usage" {
            in_fb_memory = true;
            continue;
        }
        let Some((key, value)) = line.split_once([':', '：']) else {
            prose.read_line(line);
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            // collect_env (PyTorch's and vLLM's)
            "PyTorch version" if !absent(value) => {
                out.saw(Format::TorchCollectEnv);
                out.torch_version = version(value);
            }
            "OS" if !absent(value) => {
                out.os = os_release::from_pretty_name(value).or(out.os.take());
                // `Ubuntu 24.04.3 LTS (x86_64)`: the machine in the last parentheses.
                // (`CentOS Linux 7 (Core)` has a code name there instead.)
                if let Some(arch) = value.rsplit_once('(').and_then(|(_, a)| a.strip_suffix(')'))
                    && MACHINES.contains(&arch.trim())
                {
                    out.arch.get_or_insert_with(|| canonical_arch(arch.trim()));
                }
            }
            "Architecture" if !absent(value) => out.arch = Some(canonical_arch(value)),
            "Python version" => out.python_version = version(value),
            "Python platform" => {
                out.kernel = kernel_from_platform(value);
                if let Some((_, glibc)) = value.rsplit_once("-with-glibc") {
                    out.glibc = version(glibc);
                }
            }
            "Libc version" if !absent(value) => {
                out.glibc = value.strip_prefix("glibc-").and_then(version).or(out.glibc.take());
            }
            "CUDA used to build PyTorch" if !absent(value) => out.cuda_runtime = version(value),
            "CUDA runtime version" if !absent(value) => out.nvcc = version(value),
            "Nvidia driver version" if !absent(value) => out.driver = version(value),
            "Model name" if !absent(value) && out.cpu_model.is_none() => {
                out.cpu_model = Some(value.to_owned())
            }
            "Flags" if !absent(value) => {
                out.cpu_flags = value.split_whitespace().map(str::to_owned).collect();
            }
            "vLLM Version" if !absent(value) => {
                out.saw(Format::VllmCollectEnv);
                out.vllm_version = version(value);
            }
            "CUDA_MODULE_LOADING set to" if !value.is_empty() => {
                out.env.push(("CUDA_MODULE_LOADING".to_owned(), value.to_owned()));
            }
            "GPU models and configuration" => {
                out.saw(Format::TorchCollectEnv);
                // The first device may be on this line; the others follow, one a line.
                let mut gpu_lines = vec![value];
                while i < lines.len() && lines[i].trim_start().starts_with("GPU ") {
                    gpu_lines.push(lines[i].trim());
                    i += 1;
                }
                out.gpus = gpu_lines.into_iter().flat_map(gpu_names).collect();
            }
            "GPU Topology" | "NVIDIA Topology" => {
                let mut matrix = String::new();
                while i < lines.len()
                    && !lines[i].trim().is_empty()
                    && !lines[i].trim_start().starts_with("Legend")
                {
                    matrix.push_str(lines[i]);
                    matrix.push('\n');
                    i += 1;
                }
                out.topology = (!matrix.is_empty()).then_some(matrix);
            }
            // SGLang's check_env
            "CUDA available" | "sgl_kernel" => out.saw(Format::SglangCheckEnv),
            "sglang" if version(value).is_some() => {
                out.saw(Format::SglangCheckEnv);
                out.packages.push(pypi("sglang", &version(value).unwrap_or_default()));
            }
            "Python" => out.python_version = version(value).or(out.python_version.take()),
            "PyTorch" => out.torch_version = version(value).or(out.torch_version.take()),
            "NVCC" => {
                // `Cuda compilation tools, release 12.4, V12.4.99`
                out.nvcc = value
                    .rsplit_once(", V")
                    .and_then(|(_, v)| version(v))
                    .or_else(|| crate::nvcc::version(value));
            }
            // SGLang prints the driver's version here; people write the
            // CUDA it supports under the same words (`12.8`).
            "CUDA Driver Version" if !absent(value) => match version(value) {
                Some(v) if major(&v) >= 100 => out.driver = Some(v),
                Some(v) => out.cuda_driver = Some(v),
                None => {}
            },
            k if k.starts_with("GPU ") && k.ends_with(" Compute Capability") => {
                // `GPU 0,1,2,3 Compute Capability: 8.9`: the devices named before.
                out.saw(Format::SglangCheckEnv);
                let list = k.trim_start_matches("GPU ").trim_end_matches(" Compute Capability");
                for index in device_indices(list) {
                    if let Some(gpu) = out.gpus.get_mut(index) {
                        gpu.compute_capability = version(value);
                    }
                }
            }
            k if k.starts_with("GPU ") && !device_indices(&k["GPU ".len()..]).is_empty() => {
                // `GPU 0,1,2,3: NVIDIA GeForce RTX 4090`
                let name = value.split(" (UUID").next().unwrap_or_default().trim();
                if !name.is_empty() {
                    for _ in device_indices(&k["GPU ".len()..]) {
                        out.gpus.push(Gpu { name: Some(name.to_owned()), ..Gpu::default() });
                    }
                }
            }
            // TGI's --env
            "Target" => {
                out.saw(Format::TgiEnv);
                // `x86_64-unknown-linux-gnu`: a Rust target triple.
                if let Some(arch) = value.split('-').next().filter(|a| !a.is_empty()) {
                    out.arch = Some(canonical_arch(arch));
                }
            }
            "Cargo version" | "Docker label" | "Commit sha" => out.saw(Format::TgiEnv),
            // nvidia-smi -q
            "Driver Version" if !absent(value) => out.driver = version(value),
            "Attached GPUs" => out.saw(Format::NvidiaSmiQuery),
            "CUDA Version" if !absent(value) => out.cuda_driver = version(value),
            "Product Name" if !absent(value) => {
                out.saw(Format::NvidiaSmiQuery);
                smi_gpus.push(Gpu { name: Some(value.to_owned()), ..Gpu::default() });
            }
            "Total" if in_fb_memory => {
                in_fb_memory = false;
                if let Some(gpu) = smi_gpus.last_mut() {
                    gpu.memory_mib = gpu.memory_mib.or_else(|| parse_mib(value));
                }
            }
            // SGLang lists its dependencies as `name: version`.
            k if out.formats.contains(&Format::SglangCheckEnv) && is_package_name(k) => {
                if let Some(v) = version(value) {
                    out.packages.push(pypi(k, &v));
                }
            }
            _ => {
                if !summary_line(key, value, &mut out) {
                    prose.read_line(line);
                }
            }
        }
    }
    take_prose(&prose, &mut out);
    if !smi_gpus.is_empty() {
        if smi_gpus.len() == out.gpus.len() {
            for (gpu, listed) in smi_gpus.iter_mut().zip(&out.gpus) {
                gpu.compute_capability.clone_from(&listed.compute_capability);
            }
        }
        out.gpus = smi_gpus;
    }
    // A paste that ends on a key with no value or on half a version was cut
    // there (a half version is refused where it is read). A text box's
    // last line has no newline, so a missing one proves nothing.
    if let Some(last) = lines.iter().rev().map(|l| l.trim()).find(|l| !l.is_empty())
        && (last.ends_with(':') || (last.ends_with('.') && last.contains(':')))
    {
        out.cut_at = Some(last.to_owned());
    }
    if out.formats.is_empty() && out.gpus.is_empty() && out.torch_version.is_none() {
        fail!(
            "no line of a known environment report: expected the output of collect_env \
             (PyTorch's or vLLM's), `python3 -m sglang.check_env`, \
             `text-generation-launcher --env`, `nvidia-smi` or `nvidia-smi -q`, \
             a vLLM log, or sentences naming a GPU the hardware table knows or a \
             package with its version"
        );
    }
    // `text-generation-launcher --env` is TGI's own launcher speaking.
    if out.formats.contains(&Format::TgiEnv) {
        out.engine = Some("tgi");
    }
    // vLLM's collect-env is PyTorch's with more: one format, not two.
    if out.formats.contains(&Format::VllmCollectEnv) {
        out.formats.retain(|f| *f != Format::TorchCollectEnv);
    }
    // vLLM's collect_env prints its version only at the end: a paste cut
    // before that still has vLLM's padded key layout.
    if out.formats.contains(&Format::TorchCollectEnv)
        && !out.formats.contains(&Format::VllmCollectEnv)
        && text.lines().any(|l| l.contains("                : "))
    {
        out.saw(Format::VllmCollectEnv);
    }
    Ok(out)
}

impl Paste {
    fn saw(&mut self, format: Format) {
        if !self.formats.contains(&format) {
            self.formats.push(format);
        }
    }
}

/// Words that come before a version in prose but name no Python package:
/// the version after them is not a package's.
const NOT_PACKAGES: &[&str] = &[
    "cuda", "cudnn", "driver", "nvidia", "gcc", "g++", "clang", "cmake", "nvcc", "os", "kernel",
    "linux", "version", "release", "v", "rocm", "glibc", "libc", "docker", "conda", "pip",
];

/// `vllm==0.6.3`, `flash_attn   3.0.0b1` (pip list), `Python 3.11.2`,
/// `Ubuntu 22.04`: a package (or the interpreter, or the OS) and its
/// version. Only a whole line of exactly that shape is read.
fn pip_line(line: &str, out: &mut Paste) -> bool {
    let line = line.trim_start_matches(['-', '*', ' ']).trim().trim_matches('`');
    let (name, v) = match line.split_once("==") {
        Some((name, v)) if !name.contains(char::is_whitespace) => (name.trim(), v.trim()),
        Some(_) => return false,
        None => {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [name, v] = words.as_slice() else { return false };
            (*name, v.trim_start_matches('v'))
        }
    };
    let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    let Some(v) = version(v).filter(|_| name_ok) else { return false };
    // `RTX 4090` has this shape too: a GPU's name is the prose reader's.
    if matches!(pitfall_facts::gpus::resolve(line, None), pitfall_facts::gpus::Resolution::Found(_))
    {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    if let Some(os) = os_release::from_pretty_name(line).filter(|_| lower != "python") {
        out.os.get_or_insert(os);
        return true;
    }
    if NOT_PACKAGES.contains(&lower.as_str()) {
        return false;
    }
    match lower.as_str() {
        "python" => {
            out.python_version.get_or_insert(v);
        }
        "pytorch" | "torch" => {
            out.torch_version.get_or_insert(v);
        }
        _ if !out.packages.iter().any(|p| p.name.eq_ignore_ascii_case(name)) => {
            out.packages.push(pypi(name, &v))
        }
        _ => {}
    }
    true
}

/// A version's major number (`550` of `550.54.15`).
fn major(version: &str) -> u64 {
    version.split(['.', '+', '-']).next().and_then(|m| m.parse().ok()).unwrap_or(0)
}

/// Fills what the structured lines left empty with what the prose states;
/// a structured line always wins over a sentence.
fn take_prose(prose: &Prose, out: &mut Paste) {
    if prose.is_empty() {
        return;
    }
    let mut took = false;
    let (gpus, note) = prose.gpus();
    out.notes.extend(note);
    if let Some((name, count)) = gpus
        && out.gpus.is_empty()
    {
        out.gpus = (0..count).map(|_| Gpu { name: Some(name.clone()), ..Gpu::default() }).collect();
        took = true;
    }
    let (versions, notes) = prose.versions();
    out.notes.extend(notes);
    for (name, v) in versions {
        took |= match name {
            "python" => fill(&mut out.python_version, v),
            "torch" => fill(&mut out.torch_version, v),
            "vllm" => fill(&mut out.vllm_version, v),
            _ if out.packages.iter().any(|p| p.name.eq_ignore_ascii_case(name)) => false,
            _ => {
                out.packages.push(pypi(name, &v));
                true
            }
        };
    }
    if out.os.is_none() && prose.os.is_some() {
        out.os.clone_from(&prose.os);
        took = true;
    }
    if took {
        out.saw(Format::Prose);
    }
    if let Some(log) = &prose.engine_log {
        out.saw(Format::VllmLog);
        if let Some(v) = &log.version {
            fill(&mut out.vllm_version, v.clone());
        }
        out.workload.get_or_insert_with(|| log.workload.clone());
    }
}

/// A `Key: value` line a person wrote (`- **GPU**: 2× RTX 5090 (32 GB each)`,
/// `PyTorch version：2.5.1`): the few keys below, with values that are
/// versions, or GPU names the hardware table resolves to one model (prose
/// is too loose to take a name the table does not know).
fn summary_line(key: &str, value: &str, out: &mut Paste) -> bool {
    let key = key
        .trim_start_matches(['-', '*', '#', ' ', '>'])
        .replace(['*', '`', '_'], "")
        .trim()
        .to_ascii_lowercase();
    let value = value.trim().trim_matches(['*', '`']).trim();
    if absent(value) {
        return false;
    }
    let mut took = true;
    match key.as_str() {
        "gpu" | "gpus" | "gpu model" | "gpu models" | "gpu type" | "nvidia gpu" | "card"
        | "graphics card" | "hardware" => {
            let gpus = summary_gpus(value);
            took = !gpus.is_empty();
            if took && out.gpus.is_empty() {
                out.gpus = gpus;
            }
        }
        "pytorch" | "pytorch version" | "torch" | "torch version" => {
            took = set(&mut out.torch_version, version(value));
        }
        "python" | "python version" => took = set(&mut out.python_version, version(value)),
        "vllm" | "vllm version" => took = set(&mut out.vllm_version, version(value)),
        "nvidia driver" | "nvidia driver version" | "driver" | "driver version" | "gpu driver" => {
            took = set(&mut out.driver, version(value).filter(|v| major(v) >= 100));
        }
        "cuda used to build pytorch" => took = set(&mut out.cuda_runtime, version(value)),
        "os" | "operating system" => {
            let os = os_release::from_pretty_name(value);
            took = os.is_some();
            if out.os.is_none() {
                out.os = os;
            }
        }
        "transformers"
        | "transformers version"
        | "flash-attn"
        | "flashattn"
        | "flash attn"
        | "flash-attn version"
        | "flashattn version"
        | "xformers"
        | "xformers version"
        | "sglang"
        | "sglang version"
        | "triton"
        | "triton version" => {
            let name = match key.split(' ').next().unwrap_or_default() {
                "flash" | "flashattn" | "flash-attn" => "flash-attn",
                other => other,
            };
            match version(value) {
                Some(v) if !out.packages.iter().any(|p| p.name == name) => {
                    out.packages.push(pypi(name, &v))
                }
                _ => took = false,
            }
        }
        _ => took = false,
    }
    if took {
        out.saw(Format::Summary);
    }
    took
}

/// Sets `slot` when it is empty; whether it did.
fn fill(slot: &mut Option<String>, value: String) -> bool {
    let empty = slot.is_none();
    if empty {
        *slot = Some(value);
    }
    empty
}

/// Reads a log (a server's output, a traceback) for what it states about
/// the machine: its sentences and vLLM's engine start-up line, as
/// [`crate::prose`] reads them. Never fails: a log may state nothing.
pub(crate) fn read_log(text: &str) -> Paste {
    let mut prose = Prose::default();
    for line in text.lines() {
        prose.read_line(line);
    }
    let mut out = Paste::default();
    take_prose(&prose, &mut out);
    out
}

impl Paste {
    /// Fills what this paste lacks from `other` (a log read after it).
    pub(crate) fn fill_from(&mut self, other: Paste) {
        let named = other.gpus.first().and_then(|g| g.name.clone());
        if self.gpus.is_empty() {
            self.gpus = other.gpus;
        } else if let Some(full) = named
            && let Some(cut) = cut_name_completed_by(&self.gpus, &full)
        {
            self.notes.push(format!(
                "the paste's GPU name `{cut}` is cut off; the log names `{full}`, which it begins: taken"
            ));
            for gpu in &mut self.gpus {
                gpu.name = Some(full.clone());
            }
        }
        for (slot, value) in [
            (&mut self.python_version, other.python_version),
            (&mut self.torch_version, other.torch_version),
            (&mut self.vllm_version, other.vllm_version),
        ] {
            if let Some(v) = value {
                fill(slot, v);
            }
        }
        for package in other.packages {
            if !self.packages.iter().any(|p| p.name.eq_ignore_ascii_case(&package.name)) {
                self.packages.push(package);
            }
        }
        if self.os.is_none() {
            self.os = other.os;
        }
        if self.workload.is_none() {
            self.workload = other.workload;
        }
        self.notes.extend(other.notes);
        for format in other.formats {
            self.saw(format);
        }
    }
}

/// The paste's GPU name, when it is cut off (`NVIDIA GeForce GTX`: the
/// hardware table resolves no model from it) and `full`, a name the table
/// resolves, begins with its words after the brand (`GTX 1080 Ti`). Every
/// device must carry that one name: a log's single GPU cannot say which of
/// several differently named devices it completes.
fn cut_name_completed_by(gpus: &[Gpu], full: &str) -> Option<String> {
    use pitfall_facts::gpus::{Resolution, resolve};
    let cut = gpus.first()?.name.clone()?;
    if gpus.iter().any(|g| g.name.as_deref() != Some(cut.as_str())) {
        return None;
    }
    if matches!(resolve(&cut, None), Resolution::Found(_))
        || !matches!(resolve(full, None), Resolution::Found(_))
    {
        return None;
    }
    let words = |name: &str| -> Vec<String> {
        let all: Vec<String> = name.split_whitespace().map(str::to_ascii_lowercase).collect();
        let brand = all.iter().take_while(|w| matches!(w.as_str(), "nvidia" | "geforce")).count();
        all[brand..].to_vec()
    };
    let (head, whole) = (words(&cut), words(full));
    (!head.is_empty() && head.len() < whole.len() && whole.starts_with(&head)).then_some(cut)
}

/// Sets `slot` when it is empty; whether `value` was something.
fn set(slot: &mut Option<String>, value: Option<String>) -> bool {
    let some = value.is_some();
    if slot.is_none() {
        *slot = value;
    }
    some
}

/// `2× RTX 5090 (32 GB each)`, `NVIDIA T4 (x1)`, `Tesla V100` → the devices,
/// when the hardware table resolves the name to one model.
fn summary_gpus(value: &str) -> Vec<Gpu> {
    let (name, note) = match value.split_once('(') {
        Some((name, note)) => (name.trim(), note),
        None => (value.trim(), ""),
    };
    let mut count = 1;
    let mut name = name;
    // `2× RTX 5090`, `2x A100`, `8 x H100`
    if let Some((n, rest)) = name.split_once(['×', 'x', 'X'])
        && let Ok(n) = n.trim().parse::<usize>()
    {
        count = n;
        name = rest.trim();
    } else if let Some(n) = note
        .trim()
        .strip_prefix(['x', '×'])
        .and_then(|n| n.trim_end_matches(')').trim().parse().ok())
    {
        count = n;
    }
    if !(1..=64).contains(&count) || name.is_empty() {
        return Vec::new();
    }
    match pitfall_facts::gpus::resolve(name, None) {
        pitfall_facts::gpus::Resolution::Found(_) => {
            (0..count).map(|_| Gpu { name: Some(name.to_owned()), ..Gpu::default() }).collect()
        }
        _ => Vec::new(),
    }
}

/// `0,1,2` or `0` → the indices; anything else → none.
fn device_indices(list: &str) -> Vec<usize> {
    // nvidia-smi -q's `GPU 00000000:3B:00.0` is a bus id, not a list.
    let parsed: Option<Vec<usize>> = list
        .split(',')
        .map(|n| n.trim())
        .map(|n| if n.len() <= 3 { n.parse().ok() } else { None })
        .collect();
    parsed.unwrap_or_default()
}

/// A Python distribution name as SGLang prints it (`sgl_kernel`, `flashinfer_python`).
fn is_package_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_lowercase())
        && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
}

/// `GPU 0: NVIDIA H200` or `GPU 0: NVIDIA H200 (UUID: GPU-...)` → the name;
/// a line with no index (`NVIDIA H200`) is one device as well.
fn gpu_names(line: &str) -> Option<Gpu> {
    let name = match line.strip_prefix("GPU ").and_then(|rest| rest.split_once(':')) {
        Some((index, name)) if index.trim().bytes().all(|b| b.is_ascii_digit()) => name,
        Some(_) => return None,
        None => line,
    };
    let name = name.split(" (UUID").next().unwrap_or_default().trim();
    (!name.is_empty() && !absent(name))
        .then(|| Gpu { name: Some(name.to_owned()), ..Gpu::default() })
}

/// `NAME=value` with an upper-case variable name.
fn env_line(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.trim().split_once('=')?;
    let ok = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    ok.then_some((name, value.trim()))
}

/// `Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39` → `6.18.44-fc-v657-gpu`.
fn kernel_from_platform(platform: &str) -> Option<String> {
    let rest = platform.strip_prefix("Linux-")?;
    let rest = rest.split("-with-").next().unwrap_or(rest);
    let rest = ["x86_64", "aarch64", "arm64", "ppc64le", "s390x"]
        .iter()
        .find_map(|arch| rest.strip_suffix(arch).and_then(|r| r.strip_suffix('-')))
        .unwrap_or(rest);
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// The user and host of a shell prompt (`alice@gpu-box:~$ nvidia-smi`,
/// `(env) alice@gpu-box ~ $`), which the redaction must know to remove.
fn prompt_identifiers(line: &str, found: &mut Vec<String>) {
    let Some(at) = line.find('@') else { return };
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    // The character before the user may be wider than a byte (`\u{80}@`).
    let user_start = line[..at]
        .char_indices()
        .rev()
        .find(|(_, c)| !is_word(*c))
        .map_or(0, |(p, c)| p + c.len_utf8());
    let host_end = line[at + 1..].find(|c: char| !is_word(c)).map_or(line.len(), |p| at + 1 + p);
    let (user, host) = (&line[user_start..at], &line[at + 1..host_end]);
    let prompt_follows = line[host_end..].trim_start().starts_with([':', '~', '$', '#']);
    if !user.is_empty() && !host.is_empty() && prompt_follows {
        for word in [user, host.trim_end_matches('.')] {
            if word != "root" && !found.iter().any(|w| w == word) {
                found.push(word.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_character_before_an_at_sign_is_no_boundary_problem() {
        // Found by schemathesis through POST /v1/manifest/from-text.
        for text in ["\u{80}@", "é@host:~$ nvidia-smi", "✓@x", "a\u{80}@b:~$"] {
            let mut found = Vec::new();
            prompt_identifiers(text, &mut found);
            let _ = parse(text);
        }
        let mut found = Vec::new();
        prompt_identifiers("é alice@box:~$ ls", &mut found);
        assert_eq!(found, ["alice", "box"]);
    }

    #[test]
    fn torch_collect_env_of_the_h200_capture() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/machines/h200-x86_64/collect_env.txt"
        ))
        .expect("capture");
        let env = parse(&text).expect("parses");
        assert_eq!(env.formats, vec![Format::TorchCollectEnv]);
        assert_eq!(env.torch_version.as_deref(), Some("2.11.0+cu130"));
        let os = env.os.clone().expect("os");
        assert_eq!((os.id.as_deref(), os.version.as_deref()), (Some("ubuntu"), Some("24.04")));
        assert_eq!(env.arch.as_deref(), Some("x86_64"));
        assert_eq!(env.kernel.as_deref(), Some("6.18.44-fc-v657-gpu"));
        assert_eq!(env.python_version.as_deref(), Some("3.12.3"));
        assert_eq!(env.nvcc.as_deref(), Some("13.0.88"));
        assert_eq!(env.driver.as_deref(), Some("580.159.04"));
        assert_eq!(env.gpus.len(), 1);
        assert_eq!(env.gpus[0].name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(env.cpu_model.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        let torch = env.packages.iter().find(|p| p.name == "torch").expect("torch");
        assert_eq!(torch.version.as_deref(), Some("2.11.0"));
        assert_eq!(env.packages.len(), text.lines().filter(|l| l.starts_with("[pip3]")).count());
        assert_eq!(env.vllm_version, None);
        assert!(env.env.is_empty(), "CUDA_MODULE_LOADING is empty: {:?}", env.env);
    }

    #[test]
    fn vllm_collect_env_layout() {
        let text = "==============================\n        System Info\n==============================\n\
OS                           : Ubuntu 22.04.5 LTS (x86_64)\n\
==============================\n       PyTorch Info\n==============================\n\
PyTorch version              : 2.7.0+cu126\n\
Python platform              : Linux-5.15.0-1071-aws-x86_64-with-glibc2.35\n\
GPU models and configuration : \nGPU 0: NVIDIA H100 80GB HBM3\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n\
Nvidia driver version        : 550.127.05\n\
[pip3] torch==2.7.0\n[conda] numpy 1.26.4 pypi_0 pypi\n[conda] mkl 2023.1.0 h213fc3f_46344 defaults\n\
vLLM Version                 : 0.9.0.1\n\
vLLM Build Flags:\n  CUDA Archs: 8.0 9.0+PTX; ROCm: Disabled; Neuron: Disabled\n\
GPU Topology:\n  \tGPU0\tGPU1\tCPU Affinity\n  GPU0\t X \tNV18\t0-47\n  GPU1\tNV18\t X \t0-47\n\nLegend:\n\n\
==============================\n     Environment Variables\n==============================\n\
NCCL_CUMEM_ENABLE=0\nVLLM_WORKER_MULTIPROC_METHOD=spawn\n";
        let env = parse(text).expect("parses");
        assert!(env.formats.contains(&Format::VllmCollectEnv), "{:?}", env.formats);
        assert_eq!(env.os.and_then(|o| o.version).as_deref(), Some("22.04"));
        assert_eq!(env.kernel.as_deref(), Some("5.15.0-1071-aws"));
        assert_eq!(env.glibc.as_deref(), Some("2.35"));
        assert_eq!(env.gpus.len(), 2);
        assert_eq!(env.gpus[1].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(env.vllm_version.as_deref(), Some("0.9.0.1"));
        assert_eq!(env.cuda_archs, vec!["8.0".to_owned(), "9.0+PTX".to_owned()]);
        let topo = crate::topo::parse(env.topology.as_deref().expect("matrix")).expect("topo");
        assert_eq!(topo.nvlink_pairs, vec![(0, 1)]);
        assert_eq!(env.packages[1].ecosystem.as_deref(), Some("pypi"));
        assert_eq!(env.packages[2].ecosystem.as_deref(), Some("conda"));
        assert_eq!(env.env.len(), 2);
    }

    #[test]
    fn a_paste_cut_mid_value_keeps_what_came_before() {
        let env = parse("Python: 3.10.16 (main)\nGPU 0,1: NVIDIA GeForce RTX 4090\nGPU 0,1 Compute Capability: 8.9\nCUDA Driver Version: 550.")
            .expect("parses");
        assert_eq!(env.formats, vec![Format::SglangCheckEnv]);
        assert_eq!(env.gpus.len(), 2);
        assert_eq!(env.gpus[1].compute_capability.as_deref(), Some("8.9"));
        assert_eq!(env.driver, None, "half a version is no version");
        assert_eq!(env.cut_at.as_deref(), Some("CUDA Driver Version: 550."));
        let ended =
            parse("Python: 3.10.16 (main)\nCUDA available: True\nCUDA Driver Version: 550.\n")
                .expect("parses");
        assert_eq!(ended.driver, None);
        assert_eq!(
            ended.cut_at.as_deref(),
            Some("CUDA Driver Version: 550."),
            "cut, then a newline"
        );
    }

    #[test]
    fn prompts_name_their_user_and_host() {
        let mut found = Vec::new();
        prompt_identifiers("(base) felix@heavy-gpu-02:~/dev$ docker run", &mut found);
        prompt_identifiers("(env) brando9@skampere1~ $ python3 -m sglang.check_env", &mut found);
        prompt_identifiers("root@098b49afe624:/# nvidia-smi", &mut found);
        prompt_identifiers("mail me at someone@example.com please", &mut found);
        assert_eq!(found, ["felix", "heavy-gpu-02", "brando9", "skampere1", "098b49afe624"]);
    }

    #[test]
    fn pip_freeze_and_pip_list_lines() {
        let env = parse("python==3.10\ntorch==2.3.0+cu118\ntransformers==4.37.2\nflash_attn   2.5.8\nUbuntu 22.04\nCUDA 12.1\nI ran it twice\n")
            .expect("parses");
        assert_eq!(env.formats, vec![Format::PipList]);
        assert_eq!(env.python_version.as_deref(), Some("3.10"));
        assert_eq!(env.torch_version.as_deref(), Some("2.3.0+cu118"));
        let names: Vec<&str> = env.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["transformers", "flash_attn"], "CUDA 12.1 is no package");
        assert_eq!(env.os.and_then(|o| o.version).as_deref(), Some("22.04"));
    }

    #[test]
    fn other_text_is_refused() {
        assert!(parse("Traceback (most recent call last):\n  File x\n").is_err());
        assert!(parse("just some text\n").is_err());
    }
}

#[cfg(test)]
mod log_tests {
    use super::*;

    fn gpus(names: &[&str]) -> Paste {
        Paste {
            gpus: names
                .iter()
                .map(|n| Gpu { name: Some((*n).to_owned()), ..Gpu::default() })
                .collect(),
            ..Paste::default()
        }
    }

    fn names(paste: &Paste) -> Vec<String> {
        paste.gpus.iter().filter_map(|g| g.name.clone()).collect()
    }

    #[test]
    fn a_gpu_name_cut_in_the_paste_is_completed_by_the_log() {
        // vllm-project/vllm#19542: collect_env cut at `GPU 0: NVIDIA GeForce GTX`.
        let mut paste = gpus(&["NVIDIA GeForce GTX"]);
        paste.fill_from(read_log("CUDA kernel image not available for GTX 1080 Ti (Compute 6.1)"));
        assert_eq!(names(&paste), ["GTX 1080 Ti"]);
        assert!(paste.notes.iter().any(|n| n.contains("is cut off")), "{:?}", paste.notes);
    }

    #[test]
    fn a_whole_or_other_gpu_name_in_the_paste_wins_over_the_log() {
        for (paste_names, log) in [
            (&["NVIDIA GeForce RTX 3090"][..], "my GTX 1080 Ti fails"),
            (&["NVIDIA GeForce RTX"][..], "my GTX 1080 Ti fails"),
            (&["NVIDIA GeForce GTX", "NVIDIA GeForce RTX"][..], "my GTX 1080 Ti fails"),
            (&["NVIDIA"][..], "my GTX 1080 Ti fails"),
        ] {
            let mut paste = gpus(paste_names);
            paste.fill_from(read_log(log));
            assert_eq!(names(&paste), paste_names, "{paste_names:?}");
        }
    }
}
