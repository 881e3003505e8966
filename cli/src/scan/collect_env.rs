//! The text of `python -m torch.utils.collect_env` or `vllm collect-env`:
//! what users paste into bug reports. Both print `key: value` lines (vLLM
//! pads the key: `OS                           : Ubuntu ...`), `[pip3]` /
//! `[conda]` package lines, and vLLM adds its version, build flags, the GPU
//! topology matrix and `NAME=value` environment lines.
//!
//! Only the facts below are read; paths (cuDNN libraries, site-packages) and
//! anything else in the paste are never copied.

use anyhow::bail;
use pitfall_contract::manifest::{Os, Package};
use pitfall_contract::normalize::canonical_arch;

use super::os_release;
use super::pip::pypi;

/// The facts a collect_env paste gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CollectEnv {
    /// `PyTorch version` (`torch.__version__`, with its `+cu130` tag).
    pub(crate) torch_version: Option<String>,
    pub(crate) os: Option<Os>,
    pub(crate) arch: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) python_version: Option<String>,
    /// `CUDA runtime version`: what `nvcc --version` says.
    pub(crate) nvcc: Option<String>,
    pub(crate) driver: Option<String>,
    /// GPU product names, one per device (`GPU 0: NVIDIA H200`).
    pub(crate) gpus: Vec<String>,
    pub(crate) cpu_model: Option<String>,
    /// `[pip3]` and `[conda]` lines.
    pub(crate) packages: Vec<Package>,
    pub(crate) vllm_version: Option<String>,
    /// vLLM's build flags, `CUDA Archs: 8.0 9.0+PTX`.
    pub(crate) cuda_archs: Vec<String>,
    /// The `GPU Topology:` matrix of `vllm collect-env`, for [`super::topo`].
    pub(crate) topology: Option<String>,
    /// `NAME=value` lines (filtered later by the allowlist).
    pub(crate) env: Vec<(String, String)>,
}

/// Values collect_env prints when it has none.
fn absent(value: &str) -> bool {
    matches!(value, "" | "N/A" | "Could not collect" | "No CUDA" | "None" | "Not Set")
}

/// Parses a collect_env paste.
pub(crate) fn parse(text: &str) -> anyhow::Result<CollectEnv> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = CollectEnv::default();
    let mut recognised = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        i += 1;
        if let Some(rest) = line.trim_start().strip_prefix("[pip3]") {
            if let Some((name, version)) = rest.trim().split_once("==") {
                out.packages.push(pypi(name, version));
            }
            continue;
        }
        if let Some(rest) = line.trim_start().strip_prefix("[conda]") {
            // `[conda] numpy  1.26.4  pypi_0  pypi`: name, version, build, channel.
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [name, version, _build, channel, ..] = words.as_slice() {
                let mut package = pypi(name, version);
                if *channel != "pypi" {
                    package.ecosystem = Some("conda".to_owned());
                }
                out.packages.push(package);
            }
            continue;
        }
        if let Some((name, value)) = env_line(line) {
            out.env.push((name.to_owned(), value.to_owned()));
            continue;
        }
        if let Some(archs) = line.trim().strip_prefix("CUDA Archs:") {
            let archs = archs.split(';').next().unwrap_or_default().trim();
            if !absent(archs) {
                out.cuda_archs =
                    archs.split([' ', ',']).filter(|a| !a.is_empty()).map(str::to_owned).collect();
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "PyTorch version" if !absent(value) => out.torch_version = Some(value.to_owned()),
            "OS" if !absent(value) => {
                out.os = os_release::from_pretty_name(value);
                // `Ubuntu 24.04.3 LTS (x86_64)`: the machine in the last parentheses.
                if let Some(arch) = value.rsplit_once('(').and_then(|(_, a)| a.strip_suffix(')')) {
                    out.arch.get_or_insert_with(|| canonical_arch(arch.trim()));
                }
            }
            "Architecture" if !absent(value) => out.arch = Some(canonical_arch(value)),
            "Python version" => {
                out.python_version =
                    value.split_whitespace().next().filter(|v| !absent(v)).map(str::to_owned)
            }
            "Python platform" => out.kernel = kernel_from_platform(value),
            "CUDA runtime version" if !absent(value) => out.nvcc = Some(value.to_owned()),
            "Nvidia driver version" if !absent(value) => out.driver = Some(value.to_owned()),
            "Model name" if !absent(value) && out.cpu_model.is_none() => {
                out.cpu_model = Some(value.to_owned())
            }
            "vLLM Version" if !absent(value) => {
                out.vllm_version = value.split_whitespace().next().map(str::to_owned);
            }
            "CUDA_MODULE_LOADING set to" if !value.is_empty() => {
                out.env.push(("CUDA_MODULE_LOADING".to_owned(), value.to_owned()));
            }
            "GPU models and configuration" => {
                // The first device may be on this line; the others follow, one a line.
                let mut gpu_lines = vec![value];
                while i < lines.len() && lines[i].trim_start().starts_with("GPU ") {
                    gpu_lines.push(lines[i].trim());
                    i += 1;
                }
                out.gpus = gpu_lines.into_iter().filter_map(gpu_name).collect();
            }
            "GPU Topology" => {
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
            _ => continue,
        }
        recognised = true;
    }
    if !recognised {
        bail!(
            "no `PyTorch version:`, `OS:` or `vLLM Version:` line: not the output of collect_env"
        );
    }
    Ok(out)
}

/// `GPU 0: NVIDIA H200` or `GPU 0: NVIDIA H200 (UUID: GPU-...)` → the name.
fn gpu_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("GPU ")?;
    let (index, name) = rest.split_once(':')?;
    if !index.trim().bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let name = name.split(" (UUID").next().unwrap_or_default().trim();
    (!name.is_empty()).then(|| name.to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_collect_env_of_the_h200_capture() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/machines/h200-x86_64/collect_env.txt"
        ))
        .expect("capture");
        let env = parse(&text).expect("parses");
        assert_eq!(env.torch_version.as_deref(), Some("2.11.0+cu130"));
        let os = env.os.clone().expect("os");
        assert_eq!((os.id.as_deref(), os.version.as_deref()), (Some("ubuntu"), Some("24.04")));
        assert_eq!(env.arch.as_deref(), Some("x86_64"));
        assert_eq!(env.kernel.as_deref(), Some("6.18.44-fc-v657-gpu"));
        assert_eq!(env.python_version.as_deref(), Some("3.12.3"));
        assert_eq!(env.nvcc.as_deref(), Some("13.0.88"));
        assert_eq!(env.driver.as_deref(), Some("580.159.04"));
        assert_eq!(env.gpus, vec!["NVIDIA H200".to_owned()]);
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
        assert_eq!(env.os.and_then(|o| o.version).as_deref(), Some("22.04"));
        assert_eq!(env.kernel.as_deref(), Some("5.15.0-1071-aws"));
        assert_eq!(env.gpus.len(), 2);
        assert_eq!(env.gpus[1], "NVIDIA H100 80GB HBM3");
        assert_eq!(env.vllm_version.as_deref(), Some("0.9.0.1"));
        assert_eq!(env.cuda_archs, vec!["8.0".to_owned(), "9.0+PTX".to_owned()]);
        let topo =
            super::super::topo::parse(env.topology.as_deref().expect("matrix")).expect("topo");
        assert_eq!(topo.nvlink_pairs, vec![(0, 1)]);
        assert_eq!(env.packages[1].ecosystem.as_deref(), Some("pypi"));
        assert_eq!(env.packages[2].ecosystem.as_deref(), Some("conda"));
        assert_eq!(env.env.len(), 2);
    }

    #[test]
    fn other_text_is_refused() {
        assert!(parse("Traceback (most recent call last):\n  File x\n").is_err());
    }
}
