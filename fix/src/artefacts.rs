//! What carries a plan out, written from the patched manifest where it has
//! the inputs: the `vllm serve` command line (the workload's settings, the
//! fields `pitfall scan --from-vllm-args` reads), a pip constraints file,
//! the environment variables, and the container settings as `docker run`
//! flags and a compose fragment.

use pitfall_api::fix::{Artefacts, EnvChange};
use pitfall_contract::Manifest;
use pitfall_contract::manifest::Workload;
use pitfall_contract::normalize::package_key;

/// The artefacts for the plan that turned `before` into `after`.
pub(crate) fn artefacts(before: &Manifest, after: &Manifest) -> Artefacts {
    Artefacts {
        vllm_serve: vllm_serve(after),
        pip_constraints: pip_constraints(before, after),
        env: env_changes(before, after),
        docker_run_flags: docker_run_flags(before, after),
        compose: compose(before, after),
    }
}

/// Whether the manifest serves with vLLM: its workload says so, or it
/// names no engine and vLLM is installed.
fn serves_with_vllm(manifest: &Manifest) -> bool {
    match manifest.workload.as_ref().and_then(|w| w.engine.as_deref()) {
        Some(engine) => engine.eq_ignore_ascii_case("vllm"),
        None => manifest.packages.iter().any(|p| package_key(&p.name) == "vllm"),
    }
}

/// The `vllm serve` line of the workload: the model, then every setting
/// the manifest has that is a flag of `vllm serve`, with the environment
/// variables that vLLM reads in front.
pub fn vllm_serve(manifest: &Manifest) -> Option<String> {
    if !serves_with_vllm(manifest) {
        return None;
    }
    let w: &Workload = manifest.workload.as_ref()?;
    let model = w.model.as_deref()?;
    let mut words: Vec<String> = manifest
        .env
        .iter()
        .filter(|(name, _)| name.starts_with("VLLM_"))
        .map(|(name, value)| format!("{name}={}", quote(value)))
        .collect();
    words.extend(["vllm".to_owned(), "serve".to_owned(), quote(model)]);
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            words.push(format!("--{name}"));
            words.push(quote(&value));
        }
    };
    flag("dtype", w.dtype.clone());
    flag("quantization", w.quantization.clone());
    flag("tensor-parallel-size", w.tensor_parallel_size.map(|n| n.to_string()));
    flag("pipeline-parallel-size", w.pipeline_parallel_size.map(|n| n.to_string()));
    flag("max-model-len", w.max_model_len.map(|n| n.to_string()));
    flag("max-num-seqs", w.max_num_seqs.map(|n| n.to_string()));
    flag("gpu-memory-utilization", w.gpu_memory_utilization.map(|n| n.to_string()));
    flag("kv-cache-dtype", w.kv_cache_dtype.clone());
    flag("attention-backend", w.attention_backend.clone());
    if w.disable_custom_all_reduce == Some(true) {
        words.push("--disable-custom-all-reduce".to_owned());
    }
    Some(words.join(" "))
}

/// A word as a POSIX shell reads it back: as it is when it is plain.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// `name==version` for each PyPI package the plan installs or moves, and
/// how to build the ones it builds from source.
fn pip_constraints(before: &Manifest, after: &Manifest) -> Option<String> {
    let mut lines = Vec::new();
    for package in &after.packages {
        let pypi = package.ecosystem.as_deref().is_none_or(|e| e.eq_ignore_ascii_case("pypi"));
        let Some(version) = package.version.as_deref().filter(|_| pypi) else { continue };
        let key = package_key(&package.name);
        let was = before
            .packages
            .iter()
            .find(|p| package_key(&p.name) == key)
            .and_then(|p| p.version.as_deref());
        if was != Some(version) {
            lines.push(format!("{}=={version}", package.name));
        }
    }
    let built_before: Vec<String> = before
        .build
        .as_ref()
        .map(|b| b.from_source.iter().map(|p| package_key(p)).collect())
        .unwrap_or_default();
    if let Some(build) = &after.build {
        let arch = build.torch_cuda_arch_list.join(";");
        for package in build.from_source.iter().filter(|p| !built_before.contains(&package_key(p)))
        {
            if arch.is_empty() {
                lines.push(format!(
                    "# build from source: pip install --no-binary {package} {package}"
                ));
            } else {
                lines.push(format!(
                    "# build from source: TORCH_CUDA_ARCH_LIST=\"{arch}\" pip install --no-binary {package} {package}"
                ));
            }
        }
    }
    if lines.is_empty() {
        return None;
    }
    let mut text = String::from("# pitfall fix: pip install -c this-file ...\n");
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    Some(text)
}

/// The variables the plan sets, changes or unsets, by name.
fn env_changes(before: &Manifest, after: &Manifest) -> Vec<EnvChange> {
    let mut out: Vec<EnvChange> = after
        .env
        .iter()
        .filter(|(name, value)| before.env.get(*name) != Some(*value))
        .map(|(name, value)| EnvChange { name: name.clone(), value: Some(value.clone()) })
        .collect();
    out.extend(
        before
            .env
            .keys()
            .filter(|name| !after.env.contains_key(*name))
            .map(|name| EnvChange { name: name.clone(), value: None }),
    );
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The container settings the plan changes: (image, ipc, shm size in MiB).
fn container_changes(
    before: &Manifest,
    after: &Manifest,
) -> (Option<String>, Option<String>, Option<u64>) {
    let (b, a) = (before.container.as_ref(), after.container.as_ref());
    let changed = |get: &dyn Fn(&pitfall_contract::manifest::Container) -> Option<String>| {
        let new = a.and_then(get);
        (new.is_some() && new != b.and_then(get)).then_some(new).flatten()
    };
    let image = changed(&|c| c.image.clone());
    let ipc = changed(&|c| c.ipc.clone());
    let shm = changed(&|c| c.shm_size_mib.map(|m| m.to_string())).and_then(|m| m.parse().ok());
    (image, ipc, shm)
}

fn docker_run_flags(before: &Manifest, after: &Manifest) -> Option<String> {
    let (image, ipc, shm) = container_changes(before, after);
    let mut flags = Vec::new();
    if let Some(ipc) = ipc {
        flags.push(format!("--ipc={}", quote(&ipc)));
    }
    if let Some(mib) = shm {
        flags.push(format!("--shm-size={mib}m"));
    }
    if let Some(image) = image {
        flags.push(quote(&image));
    }
    (!flags.is_empty()).then(|| format!("docker run {}", flags.join(" ")))
}

fn compose(before: &Manifest, after: &Manifest) -> Option<String> {
    let (image, ipc, shm) = container_changes(before, after);
    if image.is_none() && ipc.is_none() && shm.is_none() {
        return None;
    }
    let mut text = String::from("services:\n  inference:\n");
    if let Some(image) = image {
        text.push_str(&format!("    image: \"{image}\"\n"));
    }
    if let Some(ipc) = ipc {
        text.push_str(&format!("    ipc: \"{ipc}\"\n"));
    }
    if let Some(mib) = shm {
        text.push_str(&format!("    shm_size: \"{mib}m\"\n"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(json: &str) -> Manifest {
        serde_json::from_str(json).expect("test manifest parses")
    }

    #[test]
    fn the_serve_line_carries_the_workload_and_vllm_variables() {
        let m = manifest(
            r#"{"manifest_version":1,"env":{"VLLM_USE_V1":"0","HOME_DIR":"x"},
                "workload":{"engine":"vllm","model":"google/gemma-4-E2B-it","dtype":"float32",
                "tensor_parallel_size":1,"attention_backend":"TRITON_ATTN"}}"#,
        );
        assert_eq!(
            vllm_serve(&m).as_deref(),
            Some(
                "VLLM_USE_V1=0 vllm serve google/gemma-4-E2B-it --dtype float32 \
                 --tensor-parallel-size 1 --attention-backend TRITON_ATTN"
            )
        );
        let sglang =
            manifest(r#"{"manifest_version":1,"workload":{"engine":"sglang","model":"m"}}"#);
        assert_eq!(vllm_serve(&sglang), None);
    }

    #[test]
    fn constraints_env_and_container_show_only_what_changed() {
        let before = manifest(
            r#"{"manifest_version":1,"packages":[{"name":"vllm","version":"0.27.1"},
                {"name":"torch","version":"2.12.0"}],"env":{"A":"1","B":"2"},
                "container":{"ipc":"private","shm_size_mib":64}}"#,
        );
        let after = manifest(
            r#"{"manifest_version":1,"packages":[{"name":"vllm","version":"0.28.0"},
                {"name":"torch","version":"2.12.0"},{"name":"transformers","version":"5.14.1"}],
                "env":{"A":"1","C":"3"},"container":{"ipc":"host","shm_size_mib":64},
                "build":{"from_source":["vllm"],"torch_cuda_arch_list":["7.5"]}}"#,
        );
        let a = artefacts(&before, &after);
        let constraints = a.pip_constraints.expect("packages moved");
        assert!(constraints.contains("vllm==0.28.0\n"));
        assert!(constraints.contains("transformers==5.14.1\n"));
        assert!(!constraints.contains("torch=="), "torch did not move");
        assert!(constraints.contains("TORCH_CUDA_ARCH_LIST=\"7.5\" pip install --no-binary vllm"));
        assert_eq!(
            a.env,
            vec![
                EnvChange { name: "B".into(), value: None },
                EnvChange { name: "C".into(), value: Some("3".into()) }
            ]
        );
        assert_eq!(a.docker_run_flags.as_deref(), Some("docker run --ipc=host"));
        assert_eq!(a.compose.as_deref(), Some("services:\n  inference:\n    ipc: \"host\"\n"));
    }
}
