//! The live scan: runs the standard tools on this machine (each under a time
//! bound) and reads the files, into [`Sources`]. A tool that is missing,
//! fails or hangs is a missing fact, never an error.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitfall_collect::privacy::Identifiers;
use pitfall_collect::{NVIDIA_CSV_QUERY, PIP_METADATA_SCRIPT, Sources, Text, container};

/// How long nvidia-smi, uname, nvcc may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the Python interpreter may take to list its packages.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(60);

/// Gathers the sources of this machine. `python` is the interpreter whose
/// packages are listed (default: `$VIRTUAL_ENV/bin/python`, else `python3`).
pub(crate) fn collect(python: Option<&Path>) -> Sources {
    let mut sources = Sources {
        nvidia_xml: run_text("nvidia-smi", &["-q", "-x"], TOOL_TIMEOUT),
        nvidia_csv: run_text(
            "nvidia-smi",
            &[&format!("--query-gpu={}", NVIDIA_CSV_QUERY), "--format=csv"],
            TOOL_TIMEOUT,
        )
        // Drivers before 510 have no `compute_cap` field.
        .or_else(|| {
            run_text(
                "nvidia-smi",
                &["--query-gpu=index,name,memory.total,driver_version", "--format=csv"],
                TOOL_TIMEOUT,
            )
        }),
        nvidia_topo: run_text("nvidia-smi", &["topo", "-m"], TOOL_TIMEOUT),
        cpuinfo: file("/proc/cpuinfo"),
        meminfo: file("/proc/meminfo"),
        tools_probed: true,
        ..Sources::default()
    };

    // os-release, uname -a and nvcc --version, as one text like the captures' os.txt.
    let mut os = String::new();
    for text in [
        file("/etc/os-release").or_else(|| file("/usr/lib/os-release")),
        run_text("uname", &["-a"], TOOL_TIMEOUT),
        nvcc(),
    ]
    .into_iter()
    .flatten()
    {
        os.push_str(&text.body);
        os.push('\n');
    }
    sources.os =
        (!os.trim().is_empty()).then(|| Text::new("os-release, uname -a, nvcc --version", os));

    let python = python.map(Path::to_path_buf).unwrap_or_else(default_python);
    let py = python.to_string_lossy().into_owned();
    sources.pip_list = run_text(
        &py,
        &["-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        PYTHON_TIMEOUT,
    )
    .or_else(|| run_text(&py, &["-c", PIP_METADATA_SCRIPT], PYTHON_TIMEOUT));
    sources.python_version = run(&py, &["--version"], TOOL_TIMEOUT)
        .and_then(|out| out.split_whitespace().nth(1).map(str::to_owned));
    sources.torch_version = run(&py, &["-c", TORCH_VERSION_SCRIPT], PYTHON_TIMEOUT)
        .map(|out| out.trim().to_owned())
        .filter(|v| !v.is_empty());
    sources.rustc = run("rustc", &["--version"], TOOL_TIMEOUT)
        .and_then(|out| out.split_whitespace().nth(1).map(str::to_owned));

    sources.env = std::env::vars().collect();

    let runtime = container::detect(
        Path::new("/.dockerenv").exists(),
        Path::new("/run/.containerenv").exists(),
        std::fs::read_to_string("/proc/1/cgroup").ok().as_deref(),
    );
    sources.container = runtime.map(|runtime| (runtime, shm_size_mib()));

    let mut words = Vec::new();
    words.extend(std::fs::read_to_string("/proc/sys/kernel/hostname").ok());
    words.extend(run("hostname", &[], TOOL_TIMEOUT));
    for var in ["USER", "LOGNAME", "USERNAME", "SUDO_USER"] {
        words.extend(std::env::var(var).ok());
    }
    if let Some(home) = std::env::var_os("HOME") {
        words.extend(Path::new(&home).file_name().map(|n| n.to_string_lossy().into_owned()));
    }
    // `root` names no one.
    words.retain(|w| w.trim() != "root");
    sources.identifiers = Identifiers::new(words);
    sources
}

/// Reads `torch/version.py` without importing torch (which takes seconds
/// and may initialise CUDA): `torch.__version__` keeps the `+cu130` tag.
const TORCH_VERSION_SCRIPT: &str = "import importlib.util, os, re\n\
s = importlib.util.find_spec('torch')\n\
p = s and s.origin and os.path.join(os.path.dirname(s.origin), 'version.py')\n\
m = p and os.path.exists(p) and re.search(r\"__version__\\s*(?::\\s*str\\s*)?=\\s*['\\\"]([^'\\\"]+)\", open(p).read())\n\
print(m.group(1) if m else '')";

fn default_python() -> PathBuf {
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        let candidate = Path::new(&venv).join("bin").join("python");
        if candidate.exists() {
            return candidate;
        }
    }
    PathBuf::from("python3")
}

/// `nvcc --version` from PATH, `$CUDA_HOME/bin` or `/usr/local/cuda/bin`.
fn nvcc() -> Option<Text> {
    let mut candidates = vec![PathBuf::from("nvcc")];
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var) {
            candidates.push(Path::new(&home).join("bin").join("nvcc"));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
    candidates
        .iter()
        .find_map(|nvcc| run_text(&nvcc.to_string_lossy(), &["--version"], TOOL_TIMEOUT))
}

/// `/dev/shm`'s size in MiB.
fn shm_size_mib() -> Option<u64> {
    let stat = rustix::fs::statvfs("/dev/shm").ok()?;
    Some(container::size_mib(stat.f_blocks, stat.f_frsize))
}

fn file(path: &str) -> Option<Text> {
    let body = std::fs::read_to_string(path).ok()?;
    Some(Text::new(path, body))
}

fn run_text(program: &str, args: &[&str], timeout: Duration) -> Option<Text> {
    let body = run(program, args, timeout)?;
    let origin = std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
    Some(Text::new(origin, body))
}

/// Standard output of a command that exits 0 within `timeout`; `None` when
/// it is missing, fails, prints no UTF-8 or takes too long (then it is killed).
fn run(program: &str, args: &[&str], timeout: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on a thread so a full pipe cannot stall the child while we wait.
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let out = reader.join().ok()?.ok()?;
    if !status.success() {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_failing_and_slow_commands_are_absent() {
        assert_eq!(run("pitfall-no-such-command", &[], TOOL_TIMEOUT), None);
        assert_eq!(run("false", &[], TOOL_TIMEOUT), None);
        let started = Instant::now();
        assert_eq!(run("sleep", &["5"], Duration::from_millis(200)), None);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(run("echo", &["hi"], TOOL_TIMEOUT).as_deref(), Some("hi\n"));
    }
}
