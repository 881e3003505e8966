//! Machine-applicable remedy actions, and how each one changes a manifest.
//!
//! A provisioning tool applies an action to its deployment; the registry
//! applies the same action to the manifest that describes it. A rule's
//! `fixed` test case checks that the second really clears the rule, so an
//! action that cannot be expressed here cannot be proven and is not offered.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{
    Accelerator, Build, Container, Drivers, HealthCheck, Host, Manifest, Package, Workload,
};
use super::normalize::package_key;
use pitfall_version::{Dotted, Specifier, Version};

/// One concrete change to a deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Upgrade a package: `to` is the lowest version that fixes it
    /// (`0.10.2`) or a PEP 440 specifier (`>=2.3,<3`): the lowest release
    /// of the release table it admits, else the version its bounds name.
    /// An installed version that already meets it is kept.
    UpgradePackage {
        /// Package name.
        package: String,
        /// A version, or a specifier the installed version must meet.
        to: String,
    },
    /// Install a version of a package (also a downgrade): exactly
    /// `version`, or one the PEP 440 specifier admits (`<2`): the highest
    /// release of the release table it admits, else the version its
    /// bounds name (`<2` installs 1, `>=2.3,<3` 2.3).
    PinPackage {
        /// Package name.
        package: String,
        /// A version, or a specifier.
        version: String,
    },
    /// Uninstall a package.
    RemovePackage {
        /// Package name.
        package: String,
    },
    /// Set an environment variable.
    SetEnv {
        /// Variable name.
        name: String,
        /// Its value.
        value: String,
    },
    /// Unset an environment variable.
    UnsetEnv {
        /// Variable name.
        name: String,
    },
    /// Add a command-line flag to a tool (`vllm serve`, `docker run`).
    AddFlag {
        /// `vllm` or `docker`.
        tool: String,
        /// The flag, e.g. `--dtype`.
        flag: String,
        /// Its value, if it takes one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// Use another container image.
    ChangeImage {
        /// The image reference.
        image: String,
    },
    /// Upgrade the NVIDIA driver to at least `to`.
    UpgradeDriver {
        /// The lowest driver version that fixes it.
        to: String,
    },
    /// Run the stack on another CUDA (`drivers.cuda_runtime`), e.g. with
    /// wheels built for an older one.
    ChangeCuda {
        /// The CUDA version.
        version: String,
    },
    /// Build a package from source for the listed GPU architectures.
    BuildFromSource {
        /// Package name.
        package: String,
        /// `TORCH_CUDA_ARCH_LIST`, e.g. `["7.5"]`.
        #[serde(default)]
        torch_cuda_arch_list: Vec<String>,
    },
    /// Install a build tool (`nvcc`, `rustc`).
    InstallTool {
        /// Tool name.
        tool: String,
        /// The version to install, if it matters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    /// Set a workload parameter (`dtype`, `quantization`, `tensor_parallel_size`, ...).
    SetWorkload {
        /// The `workload` field.
        field: String,
        /// Its new value.
        value: Value,
    },
    /// Use another accelerator model (and count): the manifest's accelerators
    /// become that one entry, its hardware facts filled in from the table.
    ChangeAccelerator {
        /// The accelerator model, e.g. `A10G`.
        model: String,
        /// How many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
    },
    /// Change a fact of the host (`cpu_flags`, `glibc`, `arch`): another
    /// machine or OS release.
    SetHost {
        /// The `host` field.
        field: String,
        /// Its new value.
        value: Value,
    },
    /// Change how the deployment's health is probed.
    ChangeHealthCheck {
        /// The path to probe.
        endpoint: String,
        /// Whether the probe verifies the generated text.
        verifies_output: bool,
    },
}

impl Action {
    /// Whether a text field holds an unfilled `{name}` placeholder: such an
    /// action, shown before a manifest has given its values, is not one a
    /// tool can apply.
    pub fn has_placeholder(&self) -> bool {
        fn any(value: &Value) -> bool {
            match value {
                Value::String(s) => crate::template::has_placeholder(s),
                Value::Array(items) => items.iter().any(any),
                Value::Object(fields) => fields.values().any(any),
                _ => false,
            }
        }
        serde_json::to_value(self).map(|v| any(&v)).unwrap_or(true)
    }
}

impl std::fmt::Display for Action {
    /// One line, for people and terminals: what to run or change.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::UpgradePackage { package, to } if is_specifier(to) => {
                write!(f, "upgrade {package} to {to}")
            }
            Action::UpgradePackage { package, to } => write!(f, "upgrade {package} to >= {to}"),
            Action::PinPackage { package, version } if is_specifier(version) => {
                write!(f, "install {package}{version}")
            }
            Action::PinPackage { package, version } => write!(f, "install {package}=={version}"),
            Action::RemovePackage { package } => write!(f, "uninstall {package}"),
            Action::SetEnv { name, value } => write!(f, "set {name}={value}"),
            Action::UnsetEnv { name } => write!(f, "unset {name}"),
            Action::AddFlag { tool, flag, value: Some(v) } => write!(f, "{tool}: add {flag} {v}"),
            Action::AddFlag { tool, flag, value: None } => write!(f, "{tool}: add {flag}"),
            Action::ChangeImage { image } => write!(f, "use image {image}"),
            Action::UpgradeDriver { to } => write!(f, "upgrade the NVIDIA driver to >= {to}"),
            Action::ChangeCuda { version } => write!(f, "use CUDA {version}"),
            Action::BuildFromSource { package, torch_cuda_arch_list }
                if torch_cuda_arch_list.is_empty() =>
            {
                write!(f, "build {package} from source")
            }
            Action::BuildFromSource { package, torch_cuda_arch_list } => {
                write!(
                    f,
                    "build {package} from source with TORCH_CUDA_ARCH_LIST=\"{}\"",
                    torch_cuda_arch_list.join(";")
                )
            }
            Action::InstallTool { tool, version: Some(v) } => write!(f, "install {tool} {v}"),
            Action::InstallTool { tool, version: None } => write!(f, "install {tool}"),
            Action::SetWorkload { field, value } => write!(f, "set workload.{field} = {value}"),
            Action::SetHost { field, value } => write!(f, "use a host with {field} = {value}"),
            Action::ChangeAccelerator { model, count: Some(n) } => {
                write!(f, "switch to {n}x {model}")
            }
            Action::ChangeAccelerator { model, count: None } => {
                write!(f, "switch the accelerator to {model}")
            }
            Action::ChangeHealthCheck { endpoint, verifies_output } => {
                write!(f, "probe {endpoint}")?;
                if *verifies_output {
                    f.write_str(" and verify the generated text")
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Why an action could not be applied to a manifest.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// A flag this registry does not know how to express in a manifest.
    #[error("flag `{flag}` of `{tool}` has no manifest field")]
    UnknownFlag {
        /// The tool.
        tool: String,
        /// The flag.
        flag: String,
    },
    /// A flag value that does not parse.
    #[error("flag `{flag}`: value {value:?} is not valid: {reason}")]
    BadFlagValue {
        /// The flag.
        flag: String,
        /// The value given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// `set_workload` on a field that is not in the contract.
    #[error("workload field `{0}` is not in manifest v1")]
    UnknownWorkloadField(String),
    /// `set_workload` with a value of the wrong type.
    #[error("workload field `{field}`: {reason}")]
    BadWorkloadValue {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// `set_host` on a field it cannot set, or with the wrong type.
    #[error("host field `{field}`: {reason}")]
    BadHostValue {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A version or specifier that does not parse.
    #[error("`{value}` is neither a PEP 440 version nor a specifier: {reason}")]
    BadVersion {
        /// The value given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A specifier no known release of the package meets and that names
    /// no version to take (`<2` for a package the release table lacks).
    #[error(
        "no version to install for {package}{spec}: the release table has no release it admits and its bounds name none (write ==X, >=X or <X)"
    )]
    NoVersion {
        /// The package.
        package: String,
        /// The specifier.
        spec: String,
    },
    /// A driver version that is not a dotted number.
    #[error("`{0}` is not a driver version (a dotted number such as 570.124.06)")]
    BadDriver(String),
}

/// Whether `text` is a specifier (starts with an operator) rather than a
/// plain version.
pub fn is_specifier(text: &str) -> bool {
    text.trim_start().starts_with(['<', '>', '=', '!', '~'])
}

/// The version to install for `package` given `wanted` (a version or a
/// specifier), `current` the version installed if any, and `lowest`
/// (an upgrade takes the lowest admitted release, a pin the highest).
/// `None`: the installed one already meets the specifier.
fn choose_version(
    package: &str,
    wanted: &str,
    current: Option<&str>,
    lowest: bool,
) -> Result<Option<String>, ApplyError> {
    if !is_specifier(wanted) {
        Version::parse(wanted).map_err(|e| ApplyError::BadVersion {
            value: wanted.to_owned(),
            reason: e.reason().to_owned(),
        })?;
        return Ok(Some(wanted.to_owned()));
    }
    let spec = Specifier::parse(wanted).map_err(|e| ApplyError::BadVersion {
        value: wanted.to_owned(),
        reason: e.reason().to_owned(),
    })?;
    if current.and_then(|c| Version::parse(c).ok()).is_some_and(|c| spec.contains(&c)) {
        return Ok(None);
    }
    let mut known: Vec<Version> = pitfall_facts::releases::versions(package)
        .filter_map(|v| Version::parse(v).ok())
        .filter(|v| spec.contains(v) && !v.is_prerelease())
        .collect();
    known.sort();
    let from_table = if lowest { known.first() } else { known.last() };
    if let Some(v) = from_table {
        return Ok(Some(v.as_str().to_owned()));
    }
    // The specifier's own bounds: the version it names, or the release
    // line next to an exclusive bound (`<2` installs 1).
    spec.installable().map(|v| Some(v.as_str().to_owned())).ok_or_else(|| ApplyError::NoVersion {
        package: package.to_owned(),
        spec: wanted.to_owned(),
    })
}

/// Applies `actions` in order to `manifest`. The manifest should be the
/// client's (not yet normalised); normalise it again afterwards.
pub fn apply_all(manifest: &mut Manifest, actions: &[Action]) -> Result<(), ApplyError> {
    actions.iter().try_for_each(|a| apply(manifest, a))
}

/// Applies one action to `manifest`.
pub fn apply(manifest: &mut Manifest, action: &Action) -> Result<(), ApplyError> {
    match action {
        Action::UpgradePackage { package, to } => {
            let entry = package_entry(manifest, package);
            let chosen = if is_specifier(to) {
                choose_version(package, to, entry.version.as_deref(), true)?
            } else {
                let target = Version::parse(to).map_err(|e| ApplyError::BadVersion {
                    value: to.clone(),
                    reason: e.reason().to_owned(),
                })?;
                let below = match entry.version.as_deref().map(Version::parse) {
                    Some(Ok(current)) => current < target,
                    _ => true,
                };
                below.then(|| to.clone())
            };
            if let Some(v) = chosen {
                install(manifest, package, v);
            }
        }
        Action::PinPackage { package, version } => {
            let current = package_entry(manifest, package).version.clone();
            if let Some(v) = choose_version(package, version, current.as_deref(), false)? {
                install(manifest, package, v);
            }
        }
        Action::RemovePackage { package } => {
            let key = package_key(package);
            manifest.packages.retain(|p| package_key(&p.name) != key);
        }
        Action::SetEnv { name, value } => {
            manifest.env.insert(name.clone(), value.clone());
        }
        Action::UnsetEnv { name } => {
            manifest.env.remove(name);
        }
        Action::AddFlag { tool, flag, value } => {
            apply_flag(manifest, tool, flag, value.as_deref())?
        }
        Action::ChangeImage { image } => {
            manifest.container.get_or_insert_with(Container::default).image = Some(image.clone());
        }
        Action::UpgradeDriver { to } => {
            let target = Dotted::parse(to).map_err(|_| ApplyError::BadDriver(to.clone()))?;
            let drivers = manifest.drivers.get_or_insert_with(Drivers::default);
            let below = match drivers.nvidia.as_deref().map(Dotted::parse) {
                Some(Ok(current)) => current < target,
                _ => true,
            };
            if below {
                drivers.nvidia = Some(to.clone());
            }
        }
        Action::ChangeCuda { version } => {
            Dotted::parse(version).map_err(|_| ApplyError::BadVersion {
                value: version.clone(),
                reason: "a CUDA version is a dotted number such as 12.6".into(),
            })?;
            manifest.drivers.get_or_insert_with(Drivers::default).cuda_runtime =
                Some(version.clone());
        }
        Action::BuildFromSource { package, torch_cuda_arch_list } => {
            let build = manifest.build.get_or_insert_with(Build::default);
            let key = package_key(package);
            if !build.from_source.iter().any(|p| package_key(p) == key) {
                build.from_source.push(package.clone());
            }
            if !torch_cuda_arch_list.is_empty() {
                build.torch_cuda_arch_list = torch_cuda_arch_list.clone();
            }
        }
        Action::InstallTool { tool, version } => {
            let build = manifest.build.get_or_insert_with(Build::default);
            build
                .tools
                .insert(tool.clone(), Some(version.clone().unwrap_or_else(|| "installed".into())));
        }
        Action::SetWorkload { field, value } => set_workload(manifest, field, value)?,
        Action::SetHost { field, value } => set_host(manifest, field, value)?,
        Action::ChangeAccelerator { model, count } => {
            let vendor = manifest.accelerators.first().and_then(|a| a.vendor.clone());
            let count = count.or_else(|| manifest.accelerators.first().and_then(|a| a.count));
            // Everything else about the old device (its CC, memory, ...) no
            // longer holds; enrichment fills the new model's values in.
            manifest.accelerators = vec![Accelerator {
                vendor,
                model: Some(model.clone()),
                count,
                ..Accelerator::default()
            }];
        }
        Action::ChangeHealthCheck { endpoint, verifies_output } => {
            manifest.health_check = Some(HealthCheck {
                endpoint: Some(endpoint.clone()),
                verifies_output: Some(*verifies_output),
                ..HealthCheck::default()
            });
        }
    }
    Ok(())
}

/// Installs `version` of `package` as pip would: the entry's build facts
/// (its CUDA, arch list, torch) described the old build and are dropped,
/// and a listed torch moves to the release's exact pin, which pip
/// installs with it (the release table's `torch`).
fn install(manifest: &mut Manifest, package: &str, version: String) {
    let pin = pitfall_facts::releases::release(package, &version).and_then(|r| r.torch.clone());
    let entry = package_entry(manifest, package);
    entry.version = Some(version);
    entry.cuda = None;
    entry.cuda_arch_list.clear();
    entry.torch = None;
    entry.cxx11_abi = None;
    let key = package_key(package);
    if let Some(pin) = pin
        && key != "torch"
        && let Some(torch) = manifest.packages.iter_mut().find(|p| package_key(&p.name) == "torch")
    {
        let same = torch
            .version
            .as_deref()
            .and_then(|v| Version::parse(v).ok())
            .is_some_and(|v| Version::parse(&pin).is_ok_and(|p| v.cmp_public(&p).is_eq()));
        if !same {
            torch.version = Some(pin);
            torch.cuda = None;
            torch.cuda_arch_list.clear();
        }
    }
}

fn package_entry<'m>(manifest: &'m mut Manifest, name: &str) -> &'m mut Package {
    let key = package_key(name);
    match manifest.packages.iter().position(|p| package_key(&p.name) == key) {
        Some(i) => &mut manifest.packages[i],
        None => {
            manifest.packages.push(Package {
                name: name.to_owned(),
                ecosystem: Some("pypi".into()),
                ..Package::default()
            });
            let last = manifest.packages.len() - 1;
            &mut manifest.packages[last]
        }
    }
}

/// The flags of `vllm serve` and `docker run` that the manifest expresses.
fn apply_flag(
    manifest: &mut Manifest,
    tool: &str,
    flag: &str,
    value: Option<&str>,
) -> Result<(), ApplyError> {
    let flag_name = flag.trim_start_matches('-');
    let (flag_name, inline) = match flag_name.split_once('=') {
        Some((f, v)) => (f, Some(v)),
        None => (flag_name, None),
    };
    let value = value.or(inline);
    fn need<'v>(flag: &str, value: Option<&'v str>) -> Result<&'v str, ApplyError> {
        value.ok_or_else(|| ApplyError::BadFlagValue {
            flag: flag.to_owned(),
            value: String::new(),
            reason: "the flag needs a value".into(),
        })
    }
    match (tool, flag_name) {
        ("vllm", "dtype") => {
            set_workload(manifest, "dtype", &Value::String(need(flag, value)?.to_owned()))
        }
        ("vllm", "tensor-parallel-size" | "tp") => {
            set_workload(manifest, "tensor_parallel_size", &number(flag, need(flag, value)?)?)
        }
        ("vllm", "pipeline-parallel-size" | "pp") => {
            set_workload(manifest, "pipeline_parallel_size", &number(flag, need(flag, value)?)?)
        }
        ("vllm", "max-model-len") => {
            set_workload(manifest, "max_model_len", &number(flag, need(flag, value)?)?)
        }
        ("vllm", "max-num-seqs") => {
            set_workload(manifest, "max_num_seqs", &number(flag, need(flag, value)?)?)
        }
        ("vllm", "gpu-memory-utilization") => {
            set_workload(manifest, "gpu_memory_utilization", &number(flag, need(flag, value)?)?)
        }
        ("vllm", "quantization" | "q") => {
            set_workload(manifest, "quantization", &Value::String(need(flag, value)?.to_owned()))
        }
        ("vllm", "kv-cache-dtype") => {
            set_workload(manifest, "kv_cache_dtype", &Value::String(need(flag, value)?.to_owned()))
        }
        ("vllm", "attention-backend") => set_workload(
            manifest,
            "attention_backend",
            &Value::String(need(flag, value)?.to_owned()),
        ),
        ("vllm", "disable-custom-all-reduce") => {
            set_workload(manifest, "disable_custom_all_reduce", &Value::Bool(true))
        }
        ("docker", "ipc") => {
            manifest.container.get_or_insert_with(Container::default).ipc =
                Some(need(flag, value)?.to_owned());
            Ok(())
        }
        ("docker", "shm-size") => {
            let text = need(flag, value)?;
            let mib = parse_docker_size_mib(text).ok_or_else(|| ApplyError::BadFlagValue {
                flag: flag.to_owned(),
                value: text.to_owned(),
                reason: "expected a size such as 10gb, 16g or 1024m".into(),
            })?;
            manifest.container.get_or_insert_with(Container::default).shm_size_mib = Some(mib);
            Ok(())
        }
        _ => Err(ApplyError::UnknownFlag { tool: tool.to_owned(), flag: flag.to_owned() }),
    }
}

fn number(flag: &str, text: &str) -> Result<Value, ApplyError> {
    serde_json::from_str::<serde_json::Number>(text.trim()).map(Value::Number).map_err(|_| {
        ApplyError::BadFlagValue {
            flag: flag.to_owned(),
            value: text.to_owned(),
            reason: "expected a number".into(),
        }
    })
}

/// Docker's `--shm-size` syntax: a number with an optional b/k/m/g unit.
pub fn parse_docker_size_mib(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (digits, factor_bytes): (&str, u64) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        c if c.is_ascii_digit() => (t, 1),
        _ => return None,
    };
    let n: u64 = digits.parse().ok()?;
    Some(n.checked_mul(factor_bytes)? >> 20)
}

fn set_workload(manifest: &mut Manifest, field: &str, value: &Value) -> Result<(), ApplyError> {
    let workload = manifest.workload.get_or_insert_with(Workload::default);
    // Round-trip through JSON so each field keeps its serde type checks and
    // this stays correct when the contract gains fields.
    let mut obj = match serde_json::to_value(&*workload) {
        Ok(Value::Object(obj)) => obj,
        _ => serde_json::Map::new(),
    };
    if !WORKLOAD_FIELDS.contains(&field) {
        return Err(ApplyError::UnknownWorkloadField(field.to_owned()));
    }
    obj.insert(field.to_owned(), value.clone());
    *workload = serde_json::from_value(Value::Object(obj)).map_err(|e| {
        ApplyError::BadWorkloadValue { field: field.to_owned(), reason: e.to_string() }
    })?;
    Ok(())
}

/// The `host` fields `set_host` may set.
pub const HOST_FIELDS: &[&str] = &["arch", "cpu_flags", "glibc", "os"];

fn set_host(manifest: &mut Manifest, field: &str, value: &Value) -> Result<(), ApplyError> {
    if !HOST_FIELDS.contains(&field) {
        return Err(ApplyError::BadHostValue {
            field: field.to_owned(),
            reason: format!("set_host sets only {}", HOST_FIELDS.join(", ")),
        });
    }
    let host = manifest.host.get_or_insert_with(Host::default);
    let mut obj = match serde_json::to_value(&*host) {
        Ok(Value::Object(obj)) => obj,
        _ => serde_json::Map::new(),
    };
    obj.insert(field.to_owned(), value.clone());
    *host = serde_json::from_value(Value::Object(obj))
        .map_err(|e| ApplyError::BadHostValue { field: field.to_owned(), reason: e.to_string() })?;
    Ok(())
}

/// The `workload` fields of manifest v1.
pub const WORKLOAD_FIELDS: &[&str] = &[
    "engine",
    "model",
    "parameters_b",
    "dtype",
    "head_dims",
    "num_attention_heads",
    "num_kv_heads",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "max_model_len",
    "max_num_seqs",
    "gpu_memory_utilization",
    "attention_backend",
    "quantization",
    "disable_custom_all_reduce",
    "kv_cache_dtype",
    "active_parameters_b",
    "num_hidden_layers",
    "hidden_size",
    "max_context",
    "model_dtype",
    "model_type",
    "architecture",
    "min_transformers",
    "quantization_scheme",
    "quantization_symmetric",
    "multimodal",
    "mm_encoder_attention_backend",
    "mode",
    "attention_dropout",
    "checkpoint_format",
    "engine_build_capability",
    "engine_hardware_compatibility",
    "engine_build_tensorrt",
    "engine_version_compatible",
    "max_input_tokens",
    "sliding_window",
    "rope_scaling_type",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(json: &str) -> Manifest {
        serde_json::from_str(json).expect("test manifest parses")
    }

    #[test]
    fn upgrade_package_raises_but_never_lowers() {
        let mut m =
            manifest(r#"{"manifest_version":1,"packages":[{"name":"vLLM","version":"0.27.1"}]}"#);
        apply(&mut m, &Action::UpgradePackage { package: "vllm".into(), to: "0.27.2rc0".into() })
            .expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some("0.27.2rc0"));
        apply(&mut m, &Action::UpgradePackage { package: "vllm".into(), to: "0.10.2".into() })
            .expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some("0.27.2rc0"));
    }

    #[test]
    fn flags_map_to_manifest_fields() {
        let mut m = manifest(r#"{"manifest_version":1}"#);
        let flag = |tool: &str, flag: &str, value: Option<&str>| Action::AddFlag {
            tool: tool.into(),
            flag: flag.into(),
            value: value.map(Into::into),
        };
        apply_all(
            &mut m,
            &[
                flag("vllm", "--dtype", Some("half")),
                flag("vllm", "--tensor-parallel-size", Some("4")),
                flag("vllm", "--disable-custom-all-reduce", None),
                flag("docker", "--ipc=host", None),
                flag("docker", "--shm-size", Some("10gb")),
            ],
        )
        .expect("applies");
        let w = m.workload.expect("workload set");
        assert_eq!(w.dtype.as_deref(), Some("half"));
        assert_eq!(w.tensor_parallel_size, Some(4));
        assert_eq!(w.disable_custom_all_reduce, Some(true));
        let c = m.container.expect("container set");
        assert_eq!(c.ipc.as_deref(), Some("host"));
        assert_eq!(c.shm_size_mib, Some(10240));
    }

    #[test]
    fn unknown_flags_and_fields_are_refused() {
        let mut m = manifest(r#"{"manifest_version":1}"#);
        let unknown =
            Action::AddFlag { tool: "vllm".into(), flag: "--frobnicate".into(), value: None };
        assert!(matches!(apply(&mut m, &unknown), Err(ApplyError::UnknownFlag { .. })));
        let bad = Action::SetWorkload {
            field: "tensor_parallel_size".into(),
            value: Value::String("two".into()),
        };
        assert!(matches!(apply(&mut m, &bad), Err(ApplyError::BadWorkloadValue { .. })));
        let no_field = Action::SetWorkload { field: "colour".into(), value: Value::Null };
        assert!(matches!(apply(&mut m, &no_field), Err(ApplyError::UnknownWorkloadField(_))));
    }

    #[test]
    fn specifiers_install_a_table_release_else_their_bound() {
        let numpy2 = r#"{"manifest_version":1,"packages":[{"name":"numpy","version":"2.0.0"}]}"#;
        let pin = |package: &str, version: &str| Action::PinPackage {
            package: package.into(),
            version: version.into(),
        };
        // numpy is not in the release table: the bound names the version.
        let mut m = manifest(numpy2);
        apply(&mut m, &pin("numpy", "<2")).expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some("1"));
        let mut m = manifest(numpy2);
        apply(&mut m, &pin("numpy", ">=1.26,<2")).expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some("1.26"));
        // An installed version that meets the specifier stays.
        let mut m = manifest(numpy2);
        apply(&mut m, &pin("numpy", ">=2,<3")).expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some("2.0.0"));
        // torch is: a pin takes the highest release admitted, an upgrade the lowest.
        let releases: Vec<Version> = pitfall_facts::releases::versions("torch")
            .filter_map(|v| Version::parse(v).ok())
            .filter(|v| !v.is_prerelease())
            .collect();
        let spec = Specifier::parse(">=2.3,<3").expect("parses");
        let admitted = || releases.iter().filter(|v| spec.contains(v));
        let (Some(lowest), Some(highest)) = (admitted().min(), admitted().max()) else {
            panic!("the release table has torch releases in >=2.3,<3");
        };
        let torch = r#"{"manifest_version":1,"packages":[{"name":"torch","version":"2.1.0"}]}"#;
        let mut m = manifest(torch);
        apply(&mut m, &pin("torch", ">=2.3,<3")).expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some(highest.as_str()));
        let mut m = manifest(torch);
        let upgrade = Action::UpgradePackage { package: "torch".into(), to: ">=2.3,<3".into() };
        apply(&mut m, &upgrade).expect("applies");
        assert_eq!(m.packages[0].version.as_deref(), Some(lowest.as_str()));
        // Neither a table release nor a bound: refused, saying what to write.
        let err = apply(&mut manifest(numpy2), &pin("numpy", "!=2.0.0")).expect_err("refused");
        assert!(matches!(err, ApplyError::NoVersion { .. }), "{err}");
        let err = apply(&mut manifest(numpy2), &pin("numpy", "banana")).expect_err("refused");
        assert!(matches!(err, ApplyError::BadVersion { .. }), "{err}");
    }

    #[test]
    fn docker_sizes() {
        assert_eq!(parse_docker_size_mib("64m"), Some(64));
        assert_eq!(parse_docker_size_mib("16g"), Some(16384));
        assert_eq!(parse_docker_size_mib("1GB"), Some(1024));
        assert_eq!(parse_docker_size_mib("lots"), None);
    }
}
