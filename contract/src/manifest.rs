//! Manifest v1: what a client sends. Field names are the contract that
//! provisioning tools code against (../shared/DESIGN.md, "The manifest (v1)").
//!
//! Every field is optional except `manifest_version`; unknown fields are kept
//! in `extra` at every level, so a newer client loses nothing through an
//! older registry. Reading is `read`'s (one pass, no buffering of objects);
//! writing and the JSON Schema are derived.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

mod read;

/// The only manifest version this SDK reads and writes.
pub const MANIFEST_VERSION: u32 = 1;

/// Unknown fields, kept as they came.
pub type Extra = BTreeMap<String, Value>;

/// A description of one machine and the software stack it will run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(title = "Pitfall manifest v1")]
pub struct Manifest {
    /// Always 1 for this contract.
    #[schemars(range(min = 1, max = 1))]
    pub manifest_version: u32,
    /// The host: CPU, memory, OS, cloud.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// GPUs and other accelerators, one entry per model (with a count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<Accelerator>,
    /// Driver and runtime versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drivers: Option<Drivers>,
    /// The container the workload runs in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Container>,
    /// Installed packages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<Package>,
    /// Environment variables that matter to the stack (never secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How the stack was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// What will be served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    /// How the deployment is probed for health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
    /// The Python interpreter the stack runs on (its version is
    /// `packages.python.version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<Python>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The host machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Host {
    /// CPU architecture, normalised: `aarch64`, `x86_64`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// CPU model name, e.g. `AWS Graviton2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Host memory in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<Os>,
    /// Kernel release, e.g. `6.8.0-1015-aws`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Cloud placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<Cloud>,
    /// CPU feature flags as `/proc/cpuinfo` lists them (`avx`, `avx2`,
    /// `avx512f`, ...; on aarch64 its `Features`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_flags: Vec<String>,
    /// The C library's version, e.g. `2.35` (`getconf GNU_LIBC_VERSION`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
    /// Whether PCIe Access Control Services are enabled on the GPUs' path
    /// (`lspci -vvv`: ACSCtl), which routes peer-to-peer traffic through
    /// the root complex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_acs_enabled: Option<bool>,
    /// Whether `packages` lists the OS's packages too (deb/rpm), so a
    /// system package absent from it is not installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_packages_listed: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Operating system identity (as in `/etc/os-release`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Os {
    /// `ID=` of os-release, e.g. `ubuntu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `VERSION_ID=` of os-release, e.g. `24.04`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Cloud provider placement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Cloud {
    /// e.g. `aws`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// e.g. `g5g.4xlarge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    /// The machine image, e.g. `Deep Learning ARM64 AMI`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One accelerator model present on the host (`count` of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Accelerator {
    /// e.g. `nvidia`, `amd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Model name, canonicalised from the hardware table when known (`T4G`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How many of this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// `major.minor`, compared numerically (`12.0` > `9.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub compute_capability: Option<String>,
    /// Device memory in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Device memory bandwidth in GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth_gbps: Option<f64>,
    /// Maximum (opt-in) shared memory per thread block in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_memory_per_block_kib: Option<u32>,
    /// How the devices are joined: `nvlink`, `pcie`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interconnect: Option<String>,
    /// Architecture family, lowercase: `turing`, `ampere`, `hopper`,
    /// `blackwell`, `cdna3`, `rdna3`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// AMD: the LLVM target, e.g. `gfx942`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_target: Option<String>,
    /// NVIDIA: whether MIG mode is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode: Option<bool>,
    /// NVIDIA: the MIG profile a process gets, e.g. `1g.10gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_profile: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A number or a string; compute capabilities come as either.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum StringOrNumber {
    String(String),
    Number(f64),
}

/// Driver and runtime versions (dotted numbers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Drivers {
    /// NVIDIA kernel driver, e.g. `570.124.06`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub nvidia: Option<String>,
    /// Deprecated and read by no bundled rule: written by older clients
    /// for either of the two CUDA versions below. Prefer `cuda_driver` and
    /// `cuda_runtime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub cuda: Option<String>,
    /// The newest CUDA the installed driver supports: nvidia-smi's "CUDA
    /// Version", e.g. `12.8`. Derived from the driver version when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub cuda_driver: Option<String>,
    /// The CUDA the stack was built with and runs, e.g. `12.6`: torch's
    /// local version (`2.10.0+cu126`), collect_env's "CUDA used to build
    /// PyTorch", or the release table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub cuda_runtime: Option<String>,
    /// The user-space driver libraries' version (`libnvidia-ml.so`), when
    /// it can differ from the loaded kernel module's (`nvidia`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub nvidia_userspace: Option<String>,
    /// Which kernel module flavour is loaded: `open` or `proprietary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvidia_kernel_module: Option<String>,
    /// Unknown fields (other vendors' drivers), kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The container the stack runs in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Container {
    /// Image reference, e.g. `vllm/vllm-openai:v0.27.1-aarch64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Size of `/dev/shm` in MiB (Docker's default is 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_size_mib: Option<u64>,
    /// IPC namespace mode: `private`, `shareable`, `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<String>,
    /// The container engine: `docker`, `podman`, `containerd`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// How the container asks for GPUs: `gpus_flag` (`--gpus`),
    /// `nvidia_runtime` (`--runtime nvidia`), `cdi`, `device_flags`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_request: Option<String>,
    /// The engine's cgroup driver: `systemd` or `cgroupfs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_driver: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One installed package.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Package {
    /// Name as the ecosystem spells it; compared after PEP 503 normalisation.
    pub name: String,
    /// Version as installed, e.g. `2.12.0+cu126`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `pypi`, `conda`, `deb`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecosystem: Option<String>,
    /// The CUDA its binary was built with, e.g. `12.8` (from the local
    /// version `+cu128` or the release table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub cuda: Option<String>,
    /// The GPU architectures its kernels are built for, e.g.
    /// `["7.5", "8.0", "9.0+PTX"]` (ROCm builds: gfx targets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_arch_list: Vec<String>,
    /// The torch release its binary was built against or pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    /// Whether its binary uses the C++11 ABI (`_GLIBCXX_USE_CXX11_ABI`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cxx11_abi: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How the stack was built.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Build {
    /// Packages built from source rather than installed as wheels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_source: Vec<String>,
    /// `TORCH_CUDA_ARCH_LIST` the build used, e.g. `["7.5"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub torch_cuda_arch_list: Vec<String>,
    /// Build tools and their versions; `null` means absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, Option<String>>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What will be served and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Workload {
    /// Serving engine, e.g. `vllm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Model id, e.g. `google/gemma-4-E2B-it`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Total parameters in billions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_b: Option<f64>,
    /// `bfloat16`, `float16`, `auto`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Attention head sizes of the model's layers (several when heterogeneous).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub head_dims: Vec<u32>,
    /// Attention (query) heads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_attention_heads: Option<u32>,
    /// Key/value heads (grouped-query attention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_kv_heads: Option<u32>,
    /// Tensor-parallel size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_parallel_size: Option<u32>,
    /// Pipeline-parallel size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_parallel_size: Option<u32>,
    /// Maximum context length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// Maximum concurrent sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u64>,
    /// Fraction of GPU memory the engine may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    /// Attention backend, e.g. `TRITON_ATTN`, `FLASH_ATTN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_backend: Option<String>,
    /// Weight quantization: `fp8`, `awq`, `gptq`, `bitsandbytes`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    /// Whether vLLM's custom all-reduce is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_custom_all_reduce: Option<bool>,
    /// KV-cache dtype, e.g. `fp8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_dtype: Option<String>,
    /// Parameters read per token in billions (MoE: the active experts;
    /// models with per-layer embeddings: the effective count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_parameters_b: Option<f64>,
    /// Transformer layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_hidden_layers: Option<u32>,
    /// Hidden size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_size: Option<u32>,
    /// The model's maximum context (its `max_position_embeddings`); what
    /// an unset `max_model_len` means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<u64>,
    /// The checkpoint's dtype (config.json `torch_dtype`); `dtype` is the
    /// one requested for serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dtype: Option<String>,
    /// config.json `model_type`, e.g. `llama`, `gemma3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
    /// config.json `architectures[0]`, e.g. `LlamaForCausalLM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// The first transformers release that supports the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_transformers: Option<String>,
    /// The quantization scheme within the method (compressed-tensors,
    /// Quark): llm-compressor's preset names in any case (`W8A8`, `INT8`,
    /// `W4A16`, `W8A16`, `FP8`, `FP8_DYNAMIC`, `NVFP4`, `NVFP4A16`, ...)
    /// or `w8a8-int8`, `w8a8-fp8`. Normalised to lower case with `-` for
    /// `_`, one name per scheme: `W8A8` and `INT8` are `w8a8-int8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization_scheme: Option<String>,
    /// Whether the checkpoint's weights are quantized symmetrically
    /// (compressed-tensors: config.json `quantization_config`'s
    /// `config_groups.*.weights.symmetric`); asymmetric weights carry
    /// zero points, which fewer kernels take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization_symmetric: Option<bool>,
    /// Whether the model takes images or other media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multimodal: Option<bool>,
    /// The attention backend of a multimodal encoder, e.g. `TORCH_SDPA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mm_encoder_attention_backend: Option<String>,
    /// `serve` (inference) or `train`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The attention dropout probability (training), e.g. `0.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_dropout: Option<f64>,
    /// The weights' file format: `safetensors`, `pickle`, `gguf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_format: Option<String>,
    /// A prebuilt engine (TensorRT): the compute capability it was built on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub engine_build_capability: Option<String>,
    /// A prebuilt engine (TensorRT): its hardware-compatibility level,
    /// e.g. `none`, `ampere_plus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_hardware_compatibility: Option<String>,
    /// A prebuilt engine (TensorRT): the TensorRT version that built it,
    /// e.g. `8.6.1` (the runtime's is `packages.tensorrt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<StringOrNumber>")]
    pub engine_build_tensorrt: Option<String>,
    /// A prebuilt engine (TensorRT): whether it was built
    /// version-compatible (`BuilderFlag::kVERSION_COMPATIBLE`, TensorRT
    /// 8.6 and later), so later runtimes may load it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version_compatible: Option<bool>,
    /// TGI's `--max-input-tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// The model's sliding attention window, in tokens (config.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u64>,
    /// The RoPE scaling the model runs with: config.json's
    /// `rope_scaling.rope_type`, else its older key `type` (`llama3`,
    /// `linear`, `dynamic`, `yarn`, `longrope`), or the serving engine's
    /// override of it (vLLM `--rope-scaling`). Lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling_type: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How the deployment's health is probed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct HealthCheck {
    /// The probed path, e.g. `/health` or `/v1/chat/completions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Whether the probe checks the generated text, not just a response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifies_output: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The Python interpreter the stack runs on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Python {
    /// Its path, e.g. `/usr/bin/python3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// Whether it is marked externally managed (PEP 668: an
    /// `EXTERNALLY-MANAGED` file beside its standard library), so pip
    /// refuses to install into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub externally_managed: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Accepts `"7.5"` or `7.5` (tools print either), keeps a string.
fn string_or_number<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a string or a number, found {}",
            kind_name(&other)
        ))),
    }
}

/// The JSON type of a value, as a person would name it.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
