//! Which environment variables a manifest may carry: the ones that change
//! how the ML stack behaves, never secrets, never identifiers.
//!
//! A variable is kept when its name has an allowed prefix (or is one of a few
//! named ones), its name has no secret-like or identifier-like part, and its
//! value holds no identifier ([`crate::privacy::has_identifier`]).

use std::collections::BTreeMap;

use crate::privacy::Identifiers;

/// Prefixes of the stack's own variables.
const PREFIXES: &[&str] = &[
    "VLLM_",
    "CUDA_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "NCCL_",
    "NVIDIA_",
    "TRITON_",
    "SGLANG_",
    "FLASHINFER_",
    "FLASH_ATTENTION_",
    "XFORMERS_",
    "HSA_",
    "NVCC_",
    "CMAKE_",
    // DeepSpeed's op builds (`DS_BUILD_OPS`, `DS_BUILD_FUSED_ADAM`).
    "DS_BUILD_",
];

/// Single variables outside those prefixes that change behaviour.
const NAMES: &[&str] = &[
    "HF_HUB_OFFLINE",
    "HF_HUB_ENABLE_HF_TRANSFER",
    "HF_HUB_DISABLE_XET",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    // TGI's attention switch, and what a source build compiles with.
    "USE_FLASH_ATTENTION",
    "CFLAGS",
    "CPPFLAGS",
    "CXXFLAGS",
    "RUSTFLAGS",
    // Which Python environment pip installs into.
    "VIRTUAL_ENV",
    "PIP_BREAK_SYSTEM_PACKAGES",
    // DeepSpeed's switch past its op builder's CUDA check.
    "DS_SKIP_CUDA_CHECK",
];

/// Name parts that mark a secret, even under an allowed prefix
/// (`VLLM_API_KEY`, `HF_TOKEN`).
const SECRET_PARTS: &[&str] =
    &["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION"];

/// Name words that mark an identifier of a machine, a network or a person
/// (`VLLM_HOST_IP`, `VLLM_DP_MASTER_IP`, `NCCL_SOCKET_ADDR`).
const IDENTIFIER_WORDS: &[&str] = &[
    "IP", "IPS", "HOST", "HOSTNAME", "ADDR", "ADDRESS", "URL", "URI", "ENDPOINT", "USER",
    "USERNAME", "EMAIL", "MAC",
];

/// Whether a variable of this name may appear in a manifest at all.
pub(crate) fn name_allowed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let listed = NAMES.contains(&upper.as_str())
        || PREFIXES.iter().any(|p| upper.starts_with(p) && upper.len() > p.len());
    let secret = SECRET_PARTS.iter().any(|part| upper.contains(part));
    let identifier = upper.split('_').any(|word| IDENTIFIER_WORDS.contains(&word));
    listed && !secret && !identifier
}

/// The variables of `vars` a manifest may carry.
pub(crate) fn filter<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    ids: &Identifiers,
) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(name, value)| name_allowed(name) && !crate::privacy::has_identifier(value, ids))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_and_refused_names() {
        for name in [
            "VLLM_ATTENTION_BACKEND",
            "CUDA_VISIBLE_DEVICES",
            "NCCL_P2P_DISABLE",
            "PYTORCH_CUDA_ALLOC_CONF",
            "TORCH_CUDA_ARCH_LIST",
            "HF_HUB_OFFLINE",
            "OMP_NUM_THREADS",
        ] {
            assert!(name_allowed(name), "{name}");
        }
        for name in [
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "VLLM_API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "NCCL_IB_PASSWORD",
            "VLLM_AUTH_HEADER",
            "CUDA_CREDENTIALS",
            "VLLM_HOST_IP",
            "VLLM_DP_MASTER_IP",
            "NCCL_COMM_ADDR",
            "VLLM_BASE_URL",
            "PATH",
            "HOME",
            "USER",
            "HOSTNAME",
            "LD_LIBRARY_PATH",
            "SSH_AUTH_SOCK",
            "VLLM_",
        ] {
            assert!(!name_allowed(name), "{name}");
        }
    }

    /// A rule that reads a variable the scan never collects can only be
    /// undetermined on a scanned host: every `env.NAME` a bundled rule
    /// declares in `reads` must be one the scan may carry.
    #[test]
    fn every_variable_a_bundled_rule_reads_is_collected() {
        let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
        let mut refused = Vec::new();
        let mut read = 0;
        for entry in std::fs::read_dir(&rules).expect("rules/").flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path().join("rule.json")) else {
                continue;
            };
            let meta: serde_json::Value = serde_json::from_str(&text).expect("rule.json");
            for field in meta["reads"].as_array().into_iter().flatten().filter_map(|f| f.as_str()) {
                if let Some(name) = field.strip_prefix("env.") {
                    read += 1;
                    if !name_allowed(name) {
                        refused.push(format!("{}: {name}", entry.file_name().to_string_lossy()));
                    }
                }
            }
        }
        assert!(
            read > 0,
            "no rule reads an environment variable: is {} the rules?",
            rules.display()
        );
        assert!(refused.is_empty(), "variables rules read that a scan drops: {refused:?}");
    }

    #[test]
    fn values_with_identifiers_are_dropped() {
        let ids = Identifiers::new(["gpu-node-7".to_owned(), "alice".to_owned()]);
        let vars = [
            ("VLLM_ATTENTION_BACKEND", "FLASH_ATTN"),
            ("NCCL_SOCKET_IFNAME", "eth0"),
            ("NCCL_COMM_ID", "10.1.2.3:29500"),
            ("CUDA_VISIBLE_DEVICES", "GPU-8c3e1f6a-1111-2222-3333-444444444444"),
            ("VLLM_CACHE_ROOT", "/home/alice/.cache/vllm"),
            ("TORCHINDUCTOR_CACHE_DIR", "/tmp/gpu-node-7/inductor"),
            ("HF_TOKEN", "hf_abc"),
        ];
        let kept = filter(vars, &ids);
        assert_eq!(
            kept.keys().map(String::as_str).collect::<Vec<_>>(),
            vec!["NCCL_SOCKET_IFNAME", "VLLM_ATTENTION_BACKEND"]
        );
    }
}
