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
    Accelerator, Build, Container, Drivers, HealthCheck, Manifest, Package, Workload,
};
use super::normalize::package_key;
use pitfall_version::{Dotted, Version};

/// One concrete change to a deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Upgrade a package to at least `to` (PEP 440).
    UpgradePackage {
        /// Package name.
        package: String,
        /// The lowest version that fixes it.
        to: String,
    },
    /// Install exactly `version` of a package (also a downgrade).
    PinPackage {
        /// Package name.
        package: String,
        /// The version to pin.
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
    /// Use another CUDA version (e.g. a wheel built for an older CUDA).
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
    /// Change how the deployment's health is probed.
    ChangeHealthCheck {
        /// The path to probe.
        endpoint: String,
        /// Whether the probe verifies the generated text.
        verifies_output: bool,
    },
}

impl std::fmt::Display for Action {
    /// One line, for people and terminals: what to run or change.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::UpgradePackage { package, to } => write!(f, "upgrade {package} to >= {to}"),
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
            let below = match (entry.version.as_deref().map(Version::parse), Version::parse(to)) {
                (Some(Ok(current)), Ok(target)) => current < target,
                _ => true,
            };
            if below {
                entry.version = Some(to.clone());
            }
        }
        Action::PinPackage { package, version } => {
            package_entry(manifest, package).version = Some(version.clone());
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
            let drivers = manifest.drivers.get_or_insert_with(Drivers::default);
            let below = match (drivers.nvidia.as_deref().map(Dotted::parse), Dotted::parse(to)) {
                (Some(Ok(current)), Ok(target)) => current < target,
                _ => true,
            };
            if below {
                drivers.nvidia = Some(to.clone());
            }
        }
        Action::ChangeCuda { version } => {
            manifest.drivers.get_or_insert_with(Drivers::default).cuda = Some(version.clone());
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
    fn docker_sizes() {
        assert_eq!(parse_docker_size_mib("64m"), Some(64));
        assert_eq!(parse_docker_size_mib("16g"), Some(16384));
        assert_eq!(parse_docker_size_mib("1GB"), Some(1024));
        assert_eq!(parse_docker_size_mib("lots"), None);
    }
}
