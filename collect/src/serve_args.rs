//! A serve command line → the workload, the environment variables set in
//! front of it, and the container image when it runs in `docker run`:
//! vLLM (`vllm serve MODEL --dtype bfloat16 -tp 2 ...`,
//! `python -m vllm.entrypoints.openai.api_server --model MODEL ...`),
//! SGLang (`python3 -m sglang.launch_server --model-path MODEL --tp 2 ...`)
//! and TGI (`text-generation-launcher --model-id MODEL --num-shard 2`, or
//! its image's arguments after `docker run ... text-generation-inference:TAG`).

use crate::error::{Context, Result, fail};
use pitfall_contract::manifest::Workload;

/// What a serve command line says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeCommand {
    /// `engine` is `vllm`, `sglang` or `tgi`.
    pub workload: Workload,
    /// `NAME=value` words before the command and `-e NAME=value` of
    /// `docker run` (filtered later by the allowlist).
    pub env: Vec<(String, String)>,
    /// The image of `docker run ... IMAGE ...`.
    pub image: Option<String>,
    /// `docker run --shm-size 1g`, in MiB.
    pub shm_size_mib: Option<u64>,
    /// `docker run --ipc host`.
    pub ipc: Option<String>,
    /// The container engine of `docker run` / `podman run`.
    pub container_engine: Option<String>,
    /// How `docker run` asks for GPUs: `gpus_flag` (`--gpus`),
    /// `nvidia_runtime` (`--runtime nvidia`), `device_flags` (`--device`).
    pub gpu_request: Option<String>,
}

/// Flags that take no value: an unknown flag followed by a word takes it as
/// its value, so these are named to keep the word that follows.
const SWITCHES: &[&str] = &[
    "enforce-eager",
    "trust-remote-code",
    "enable-prefix-caching",
    "no-enable-prefix-caching",
    "enable-chunked-prefill",
    "disable-log-requests",
    "disable-log-stats",
    "enable-lora",
    "enable-auto-tool-choice",
    "async-scheduling",
    "headless",
    "disable-custom-all-reduce",
    // SGLang's
    "disable-cuda-graph",
    "enable-torch-compile",
    "disable-radix-cache",
    "enable-dp-attention",
    "enable-metrics",
    "skip-tokenizer-init",
    // TGI's
    "sharded",
    "disable-custom-kernels",
    // docker run's
    "rm",
    "it",
    "i",
    "t",
    "d",
    "detach",
    "privileged",
    "interactive",
    "tty",
];

/// Which engine a command line starts, from its words. Bare arguments
/// (`--model M -tp 2`) are vLLM's, as `pitfall scan --from-vllm-args`
/// names them; a command that names no engine (`python train.py`) says
/// nothing about one.
fn engine_of(words: &[String]) -> Option<&'static str> {
    let has = |needle: &str| words.iter().any(|w| w.contains(needle));
    if has("sglang") {
        Some("sglang")
    } else if has("text-generation-launcher") || has("text-generation-inference") {
        Some("tgi")
    } else if has("vllm")
        || words.iter().find(|w| !is_assignment(w)).is_some_and(|w| w.starts_with('-'))
    {
        Some("vllm")
    } else {
        None
    }
}

/// A serve command as pasted: the command, maybe after `# comments`,
/// `NAME=value` lines and `export NAME=value` lines that set what it
/// uses (`model=org/m` then `--model-id $model`). Returns the command with
/// those variables put in, and the exported ones as environment.
fn expand(text: &str) -> (String, Vec<(String, String)>) {
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut exported = Vec::new();
    let mut kept = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.starts_with("```") {
            continue;
        }
        let (export, assignment) = match trimmed.strip_prefix("export ") {
            Some(rest) => (true, rest.trim()),
            None => (false, trimmed),
        };
        if is_assignment(assignment) && !assignment.contains(char::is_whitespace) {
            if let Some((name, value)) = assignment.split_once('=') {
                let value = value.trim_matches(['"', '\'']).to_owned();
                if export {
                    exported.push((name.to_owned(), value.clone()));
                }
                variables.push((name.to_owned(), value));
            }
            continue;
        }
        kept.push(line);
    }
    let mut command = kept.join("\n");
    // Longest names first, so `$model_path` is not read as `$model`.
    variables.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, value) in &variables {
        command =
            command.replace(&format!("${{{name}}}"), value).replace(&format!("${name}"), value);
    }
    (command, exported)
}

/// Whether a line starts a `docker run` / `podman run`, after a shell
/// prompt (`$ `, `user@host:~$ `), `sudo` or variable assignments.
fn starts_docker_run(line: &str) -> bool {
    let mut line = line.trim();
    if let Some((prompt, rest)) = line.split_once("$ ").or_else(|| line.split_once("# "))
        && !prompt.contains(char::is_whitespace)
    {
        line = rest.trim_start();
    }
    let mut words = line.split_whitespace().skip_while(|w| *w == "sudo" || is_assignment(w));
    matches!(words.next(), Some("docker" | "podman")) && words.next() == Some("run")
}

/// Parses a command line given as one string, quoted as in a shell.
pub fn parse(command_line: &str) -> Result<ServeCommand> {
    let (command_line, exported) = expand(command_line);
    let words = split_words(&command_line)?;
    let engine = engine_of(&words);
    let mut out = ServeCommand { env: exported, ..ServeCommand::default() };
    let mut words = words.into_iter().peekable();
    // `VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve ...`
    while let Some(word) = words.next_if(|w| is_assignment(w)) {
        if let Some((name, value)) = word.split_once('=') {
            out.env.push((name.to_owned(), value.to_owned()));
        }
    }
    let w = &mut out.workload;
    w.engine = engine.map(str::to_owned);
    let engine = engine.unwrap_or_default();
    let mut previous_positional: Option<String> = None;
    let mut in_docker_run = false;
    // `docker run` counts where a line starts with it: in "When I docker
    // run a container" it is a sentence, and "a" is no image.
    let docker_command = command_line.lines().any(starts_docker_run);
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix('-').filter(|f| !f.is_empty()) else {
            // `vllm serve MODEL`: the positional after `serve` is the model.
            if previous_positional.as_deref() == Some("serve") && w.model.is_none() {
                w.model = Some(word.clone());
            }
            let docker = matches!(previous_positional.as_deref(), Some("docker" | "podman"));
            if docker && docker_command && word == "run" {
                in_docker_run = true;
                out.container_engine = previous_positional.clone();
            } else if in_docker_run {
                // The first positional of `docker run` is its image.
                in_docker_run = false;
                out.image = Some(word.clone());
            }
            previous_positional = Some(word);
            continue;
        };
        let flag = flag.trim_start_matches('-');
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), Some(v.to_owned())),
            None => (flag.replace('_', "-"), None),
        };
        if SWITCHES.contains(&name.as_str()) {
            if name == "disable-custom-all-reduce" {
                w.disable_custom_all_reduce =
                    Some(inline.map_or(Ok(true), |v| parse_bool(&name, &v))?);
            }
            continue;
        }
        let mut value = || -> Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => words
                    .next_if(|w| !w.starts_with('-') || w.parse::<f64>().is_ok())
                    .with_context(|| format!("--{name} needs a value")),
            }
        };
        match (engine, name.as_str()) {
            (_, "e" | "env") if in_docker_run => {
                if let Some((n, v)) = value()?.split_once('=') {
                    out.env.push((n.to_owned(), v.to_owned()));
                }
            }
            (_, "shm-size") if in_docker_run => {
                out.shm_size_mib = Some(docker_size_mib(&value()?)?)
            }
            (_, "ipc") if in_docker_run => out.ipc = Some(value()?),
            (_, "gpus") if in_docker_run => {
                value()?;
                out.gpu_request = Some("gpus_flag".to_owned());
            }
            (_, "runtime") if in_docker_run => {
                if value()? == "nvidia" {
                    out.gpu_request.get_or_insert_with(|| "nvidia_runtime".to_owned());
                }
            }
            (_, "device") if in_docker_run => {
                if value()?.contains("nvidia") {
                    out.gpu_request.get_or_insert_with(|| "device_flags".to_owned());
                }
            }
            (_, "model" | "model-path" | "model-id") => w.model = Some(value()?),
            (_, "dtype") => w.dtype = Some(value()?),
            ("vllm" | "", "tensor-parallel-size" | "tp")
            | ("sglang", "tensor-parallel-size" | "tp-size" | "tp")
            | ("tgi", "num-shard") => w.tensor_parallel_size = Some(number(&name, &value()?)?),
            ("vllm" | "", "pipeline-parallel-size" | "pp")
            | ("sglang", "pipeline-parallel-size" | "pp-size" | "pp") => {
                w.pipeline_parallel_size = Some(number(&name, &value()?)?)
            }
            ("vllm" | "", "max-model-len")
            | ("sglang", "context-length")
            | ("tgi", "max-total-tokens") => {
                w.max_model_len = Some(context_length(&name, &value()?)?)
            }
            ("tgi", "max-input-tokens" | "max-input-length") => {
                w.max_input_tokens = Some(number(&name, &value()?)?)
            }
            ("vllm", "max-num-seqs") | ("sglang", "max-running-requests") => {
                w.max_num_seqs = Some(number(&name, &value()?)?)
            }
            ("vllm", "gpu-memory-utilization") => {
                w.gpu_memory_utilization = Some(number(&name, &value()?)?)
            }
            (_, "quantization" | "quantize") | ("vllm", "q") => w.quantization = Some(value()?),
            (_, "kv-cache-dtype") => w.kv_cache_dtype = Some(value()?),
            ("vllm" | "", "rope-scaling") => {
                w.rope_scaling_type = crate::rope_scaling::rope_scaling_type(&value()?)
            }
            (_, "attention-backend") => w.attention_backend = Some(value()?),
            // Unknown flags: a following word that is not a flag is their value.
            _ => {
                if inline.is_none() {
                    words.next_if(|w| !w.starts_with('-'));
                }
            }
        }
    }
    Ok(out)
}

/// Docker's sizes: `1g`, `512m`, `64mb`, `2GB`, bytes without a unit.
fn docker_size_mib(value: &str) -> Result<u64> {
    let lower = value.to_ascii_lowercase();
    let digits_end = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let n: u64 = number("shm-size", digits)?;
    let mib = match unit.trim_end_matches('b') {
        "" => n / (1024 * 1024),
        "k" => n / 1024,
        "m" => n,
        "g" => n * 1024,
        _ => fail!("--shm-size: {value:?} is not a size such as 1g or 512m"),
    };
    Ok(mib)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| crate::error::ParseError(format!("--{flag}: {value:?} is not a number")))
}

fn parse_bool(flag: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => fail!("--{flag}: {value:?} is not true or false"),
    }
}

/// `8192`, or vLLM's human-readable `32k` (×1000) / `32K` (×1024), `1m` / `1M`.
fn context_length(flag: &str, value: &str) -> Result<u64> {
    let (digits, factor) = match value.chars().last() {
        Some('k') => (&value[..value.len() - 1], 1000),
        Some('K') => (&value[..value.len() - 1], 1024),
        Some('m') => (&value[..value.len() - 1], 1_000_000),
        Some('M') => (&value[..value.len() - 1], 1 << 20),
        _ => (value, 1),
    };
    let n: u64 = number(flag, digits)?;
    n.checked_mul(factor).with_context(|| format!("--{flag}: {value:?} is too large"))
}

/// Splits a command line into words as a POSIX shell would: blanks separate,
/// `'...'` is literal, `"..."` honours `\"`, `\\`, `\$` and `` \` ``, a
/// backslash outside quotes escapes the next character, and a
/// backslash-newline joins lines.
pub(crate) fn split_words(line: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => fail!("unterminated ' quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => fail!("unterminated \" quote"),
                        },
                        Some(c) => word.push(c),
                        None => fail!("unterminated \" quote"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => fail!("a trailing backslash escapes nothing"),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_serve_with_short_flags_equals_and_quotes() {
        let cmd = parse(
            "VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve google/gemma-4-E2B-it --dtype bfloat16 -tp 2 \
             --max-model-len=32k --gpu-memory-utilization 0.85 --served-model-name 'my model' \
             --enforce-eager --kv-cache-dtype \"fp8\" --hf-overrides '{\"a\": 1}' --max_num_seqs 64 --disable-custom-all-reduce",
        )
        .expect("parses");
        let w = &cmd.workload;
        assert_eq!(w.engine.as_deref(), Some("vllm"));
        assert_eq!(w.model.as_deref(), Some("google/gemma-4-E2B-it"));
        assert_eq!(w.dtype.as_deref(), Some("bfloat16"));
        assert_eq!(w.tensor_parallel_size, Some(2));
        assert_eq!(w.max_model_len, Some(32_000));
        assert_eq!(w.gpu_memory_utilization, Some(0.85));
        assert_eq!(w.kv_cache_dtype.as_deref(), Some("fp8"));
        assert_eq!(w.max_num_seqs, Some(64));
        assert_eq!(w.disable_custom_all_reduce, Some(true));
        assert_eq!(w.rope_scaling_type, None);
        assert_eq!(cmd.env, vec![("VLLM_ATTENTION_BACKEND".to_owned(), "FLASH_ATTN".to_owned())]);
    }

    #[test]
    fn vllm_rope_scaling_override() {
        for (command, want) in [
            (
                r#"vllm serve meta-llama/Llama-3.1-8B --rope-scaling '{"rope_type":"llama3","factor":8.0}'"#,
                Some("llama3"),
            ),
            (
                r#"python -m vllm.entrypoints.openai.api_server --model m --rope-scaling='{"type": "dynamic", "factor": 2.0}' --dtype half"#,
                Some("dynamic"),
            ),
            (r#"vllm serve m --rope-scaling '{"factor": 2.0}'"#, None),
        ] {
            let cmd = parse(command).expect("parses");
            assert_eq!(cmd.workload.rope_scaling_type.as_deref(), want, "{command}");
        }
    }

    #[test]
    fn api_server_module_with_model_flag() {
        let cmd = parse("python3 -m vllm.entrypoints.openai.api_server --model=meta-llama/Llama-3.1-70B-Instruct --pipeline-parallel-size 2 --quantization fp8 --attention-backend TRITON_ATTN").expect("parses");
        let w = &cmd.workload;
        assert_eq!(w.model.as_deref(), Some("meta-llama/Llama-3.1-70B-Instruct"));
        assert_eq!(w.pipeline_parallel_size, Some(2));
        assert_eq!(w.quantization.as_deref(), Some("fp8"));
        assert_eq!(w.attention_backend.as_deref(), Some("TRITON_ATTN"));
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            split_words(
                r#"a 'b c' "d \"e\" $f" g\ h i\
j"#
            )
            .expect("splits"),
            vec!["a", "b c", "d \"e\" $f", "g h", "ij"]
        );
        assert_eq!(split_words("''").expect("splits"), vec![""]);
        assert!(split_words("vllm serve 'm").is_err());
        assert!(split_words("vllm serve \"m").is_err());
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(parse("vllm serve m -tp two").is_err());
        assert!(parse("vllm serve m --max-model-len").is_err());
        assert!(parse("vllm serve m --gpu-memory-utilization high").is_err());
    }

    #[test]
    fn sglang_launch_server() {
        let cmd = parse("python -m sglang.launch_server --served-model-name=qwen --trust-remote-code --model=./Qwen2.5-0.5B-Instruct --tensor-parallel-size=2")
            .expect("parses");
        let w = &cmd.workload;
        assert_eq!(w.engine.as_deref(), Some("sglang"));
        assert_eq!(w.model.as_deref(), Some("./Qwen2.5-0.5B-Instruct"));
        assert_eq!(w.tensor_parallel_size, Some(2));
        let cmd = parse("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --context-length 32k --disable-cuda-graph --dtype half")
            .expect("parses");
        let w = &cmd.workload;
        assert_eq!(w.model.as_deref(), Some("deepseek-ai/DeepSeek-V3"));
        assert_eq!((w.tensor_parallel_size, w.max_model_len), (Some(8), Some(32_000)));
        assert_eq!(w.dtype.as_deref(), Some("half"));
    }

    #[test]
    fn tgi_in_docker_run_with_shell_variables() {
        // As posted in huggingface/text-generation-inference#2238.
        let cmd = parse("model=HuggingFaceH4/zephyr-7b-beta\n# share a volume with the Docker container to avoid downloading weights every run\nvolume=$PWD/data\n\ndocker run --gpus all --shm-size 1g -p 8080:80 -v $volume:/data \\\n    ghcr.io/huggingface/text-generation-inference:2.0.4 --model-id $model --num-shard 2 -e NCCL_DEBUG=INFO")
            .expect("parses");
        let w = &cmd.workload;
        assert_eq!(w.engine.as_deref(), Some("tgi"));
        assert_eq!(w.model.as_deref(), Some("HuggingFaceH4/zephyr-7b-beta"));
        assert_eq!(w.tensor_parallel_size, Some(2));
        assert_eq!(
            cmd.image.as_deref(),
            Some("ghcr.io/huggingface/text-generation-inference:2.0.4")
        );
        assert_eq!(cmd.shm_size_mib, Some(1024));
        assert_eq!(cmd.container_engine.as_deref(), Some("docker"));
        assert_eq!(cmd.gpu_request.as_deref(), Some("gpus_flag"));
    }

    #[test]
    fn a_command_that_names_no_engine_claims_none() {
        let cmd = parse("python train.py --batch_size=32 --compile=False").expect("parses");
        assert_eq!(cmd.workload.engine, None);
        let bare = parse("--model m -tp 2").expect("parses");
        assert_eq!(
            bare.workload.engine.as_deref(),
            Some("vllm"),
            "--from-vllm-args' bare arguments"
        );
    }

    #[test]
    fn docker_run_in_a_sentence_is_no_command() {
        let cmd = parse("When I docker run a container, its something wrong with").expect("parses");
        assert_eq!((cmd.image, cmd.container_engine), (None, None));
        let cmd =
            parse("alice@box:~$ sudo docker run --gpus all vllm/vllm-openai:v0.6.3 --model m")
                .expect("parses");
        assert_eq!(cmd.image.as_deref(), Some("vllm/vllm-openai:v0.6.3"));
    }
}
