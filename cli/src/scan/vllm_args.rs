//! A vLLM command line (`vllm serve MODEL --dtype bfloat16 -tp 2 ...`, or
//! `python -m vllm.entrypoints.openai.api_server --model MODEL ...`) → the
//! workload, and the environment variables set in front of it.

use anyhow::{Context, bail};
use pitfall_contract::manifest::Workload;

/// What a vLLM command line says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct VllmCommand {
    /// `engine` is always `vllm`.
    pub(crate) workload: Workload,
    /// `NAME=value` words before the command (filtered later by the allowlist).
    pub(crate) env: Vec<(String, String)>,
}

/// vLLM flags that take no value: an unknown flag followed by a word takes
/// it as its value, so these are named to keep the word that follows.
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
];

/// Parses a command line given as one string, quoted as in a shell.
pub(crate) fn parse(command_line: &str) -> anyhow::Result<VllmCommand> {
    let words = split_words(command_line)?;
    let mut out = VllmCommand::default();
    let mut words = words.into_iter().peekable();
    // `VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve ...`
    while let Some(word) = words.next_if(|w| is_assignment(w)) {
        if let Some((name, value)) = word.split_once('=') {
            out.env.push((name.to_owned(), value.to_owned()));
        }
    }
    let w = &mut out.workload;
    w.engine = Some("vllm".to_owned());
    let mut previous_positional: Option<String> = None;
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix('-').filter(|f| !f.is_empty()) else {
            // `vllm serve MODEL`: the positional after `serve` is the model.
            if previous_positional.as_deref() == Some("serve") && w.model.is_none() {
                w.model = Some(word.clone());
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
        let mut value = || -> anyhow::Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => words
                    .next_if(|w| !w.starts_with('-') || w.parse::<f64>().is_ok())
                    .with_context(|| format!("--{name} needs a value")),
            }
        };
        match name.as_str() {
            "model" => w.model = Some(value()?),
            "dtype" => w.dtype = Some(value()?),
            "tensor-parallel-size" | "tp" => {
                w.tensor_parallel_size = Some(number(&name, &value()?)?)
            }
            "pipeline-parallel-size" | "pp" => {
                w.pipeline_parallel_size = Some(number(&name, &value()?)?)
            }
            "max-model-len" => w.max_model_len = Some(context_length(&name, &value()?)?),
            "max-num-seqs" => w.max_num_seqs = Some(number(&name, &value()?)?),
            "gpu-memory-utilization" => w.gpu_memory_utilization = Some(number(&name, &value()?)?),
            "quantization" | "q" => w.quantization = Some(value()?),
            "kv-cache-dtype" => w.kv_cache_dtype = Some(value()?),
            "attention-backend" => w.attention_backend = Some(value()?),
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

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> anyhow::Result<T> {
    value.parse().map_err(|_| anyhow::anyhow!("--{flag}: {value:?} is not a number"))
}

fn parse_bool(flag: &str, value: &str) -> anyhow::Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => bail!("--{flag}: {value:?} is not true or false"),
    }
}

/// `8192`, or vLLM's human-readable `32k` (×1000) / `32K` (×1024), `1m` / `1M`.
fn context_length(flag: &str, value: &str) -> anyhow::Result<u64> {
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
pub(crate) fn split_words(line: &str) -> anyhow::Result<Vec<String>> {
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
                        None => bail!("unterminated ' quote"),
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
                            None => bail!("unterminated \" quote"),
                        },
                        Some(c) => word.push(c),
                        None => bail!("unterminated \" quote"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => bail!("a trailing backslash escapes nothing"),
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
        assert_eq!(cmd.env, vec![("VLLM_ATTENTION_BACKEND".to_owned(), "FLASH_ATTN".to_owned())]);
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
}
