//! Facts stated in sentences and in the start-up lines engines log, for
//! the many bug reports whose "environment" is prose ("the machine I am
//! using is NVIDIA H100", "torch version 2.0.1, python 3.11") or a pasted
//! server log (`Initializing an LLM engine (v0.6.4) with config: ...`).
//!
//! Prose is loose, so only what cannot be misread is taken:
//! - a GPU named in a way the hardware table resolves to exactly one model,
//!   and only when the whole text names one model ("works on A100, fails on
//!   V100" names two: neither is taken, and a note says so);
//! - a version written right after a known package's name (`vllm 0.4.0`,
//!   `torch version 2.0.1`, `flash_attn==2.7.4`), and only when the text
//!   gives that package one version ("upgraded 0.1.16 to 0.1.17" gives two:
//!   neither is taken);
//! - an operating system named with its version (`Ubuntu 22.04`);
//! - the fields of vLLM's engine start-up line, which vLLM prints itself.
//!
//! Words inside paths, URLs and `key=value` pairs are not prose and are
//! skipped (a path's `python3.12-torch-2.2.1` is a store path, not a claim).

use pitfall_contract::manifest::{Os, Workload};
use pitfall_facts::gpus::{self, Resolution};

use crate::os_release;

/// What the prose of a text states.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Prose {
    /// Each GPU mention: the words as written, and the model they resolve to.
    gpus: Vec<(String, String)>,
    /// How many devices a mention counts (`2x RTX 5090`), when it says.
    gpu_count: Option<usize>,
    /// Each package mention with a version, in order.
    versions: Vec<(&'static str, String)>,
    pub(crate) os: Option<Os>,
    /// What vLLM's engine start-up line says.
    pub(crate) engine_log: Option<EngineLog>,
}

/// vLLM's `Initializing an LLM engine (v0.6.4) with config: model='...',
/// dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, ...`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EngineLog {
    pub(crate) version: Option<String>,
    pub(crate) workload: Workload,
}

/// Package names as people write them → the distribution name rules read.
const PACKAGES: &[(&str, &str)] = &[
    ("vllm", "vllm"),
    ("torch", "torch"),
    ("pytorch", "torch"),
    ("transformers", "transformers"),
    ("flash-attn", "flash-attn"),
    ("flash_attn", "flash-attn"),
    ("flash-attention", "flash-attn"),
    ("flashattention", "flash-attn"),
    ("xformers", "xformers"),
    ("bitsandbytes", "bitsandbytes"),
    ("sglang", "sglang"),
    ("triton", "triton"),
    ("numpy", "numpy"),
    ("python", "python"),
    ("tensorrt-llm", "tensorrt-llm"),
    ("tensorrt_llm", "tensorrt-llm"),
    ("flashinfer", "flashinfer-python"),
    ("accelerate", "accelerate"),
    ("deepspeed", "deepspeed"),
];

/// Words between a package's name and its version: `torch version 2.0.1`,
/// `vllm is 0.6.3`, `python = 3.11`.
const FILLERS: &[&str] = &["version", "ver", "is", "=", "==", ":", "v", "of", "was"];

impl Prose {
    /// Reads one line of prose or log.
    pub(crate) fn read_line(&mut self, line: &str) {
        if let Some(log) = engine_log(line) {
            let held = self.engine_log.get_or_insert_with(EngineLog::default);
            held.version = held.version.take().or(log.version);
            if held.workload.engine.is_none() || held.workload == log_engine_only() {
                held.workload = log.workload;
            }
            return;
        }
        let words = prose_words(line);
        self.read_gpus(&words);
        self.read_versions(&words);
        if self.os.is_none() {
            self.os = os_mention(&words);
        }
    }

    fn read_gpus(&mut self, words: &[Word<'_>]) {
        let mut i = 0;
        while i < words.len() {
            // The longest run of words from here that names one model.
            let found = (1..=6.min(words.len() - i)).rev().find_map(|len| {
                let run = &words[i..i + len];
                if run.iter().any(|w| w.in_path) || !plausible_gpu_words(run) {
                    return None;
                }
                let text = run.iter().map(|w| w.text).collect::<Vec<_>>().join(" ");
                match gpus::resolve(&text, None) {
                    Resolution::Found(found) => Some((len, text, found.gpu.model.clone())),
                    _ => None,
                }
            });
            match found {
                Some((len, text, model)) => {
                    if let Some(n) = i.checked_sub(1).and_then(|p| device_count(words[p].text)) {
                        self.gpu_count.get_or_insert(n);
                    }
                    self.gpus.push((text, model));
                    i += len;
                }
                None => i += 1,
            }
        }
    }

    fn read_versions(&mut self, words: &[Word<'_>]) {
        for (i, word) in words.iter().enumerate() {
            if word.in_path {
                continue;
            }
            // `flash_attn==2.7.4`, `vllm-0.3.3` as one word.
            let lower = word.text.to_ascii_lowercase();
            for (written, name) in PACKAGES {
                if let Some(rest) = lower.strip_prefix(written)
                    && let Some(v) = rest.strip_prefix("==").and_then(version)
                {
                    self.versions.push((*name, v));
                }
            }
            let Some((_, name)) = PACKAGES.iter().find(|(written, _)| *written == lower) else {
                continue;
            };
            let mut j = i + 1;
            while j < words.len() && j <= i + 2 && FILLERS.contains(&words[j].lower().as_str()) {
                j += 1;
            }
            if let Some(v) = words.get(j).filter(|w| !w.in_path).and_then(|w| version(w.text)) {
                self.versions.push((*name, v));
            }
        }
    }

    /// The GPUs the text names, when it names exactly one model; else none,
    /// with a note naming what it could not choose between.
    pub(crate) fn gpus(&self) -> (Option<(String, usize)>, Option<String>) {
        let mut models: Vec<&str> = self.gpus.iter().map(|(_, m)| m.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        match models.as_slice() {
            [] => (None, None),
            [_] => {
                let written = self.gpus[0].0.clone();
                (Some((written, self.gpu_count.unwrap_or(1))), None)
            }
            several => (
                None,
                Some(format!(
                    "the text names several GPU models ({}); none was taken as this machine's",
                    several.join(", ")
                )),
            ),
        }
    }

    /// Each package the text gives exactly one version, and a note for each
    /// it gives several.
    pub(crate) fn versions(&self) -> (Vec<(&'static str, String)>, Vec<String>) {
        let mut taken: Vec<(&'static str, String)> = Vec::new();
        let mut notes = Vec::new();
        let mut names: Vec<&'static str> = self.versions.iter().map(|(n, _)| *n).collect();
        names.dedup();
        let mut seen = Vec::new();
        for name in names {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let mut versions: Vec<&str> =
                self.versions.iter().filter(|(n, _)| *n == name).map(|(_, v)| v.as_str()).collect();
            versions.sort_unstable();
            versions.dedup();
            match versions.as_slice() {
                [one] => taken.push((name, (*one).to_owned())),
                several => notes.push(format!(
                    "the text gives {name} several versions ({}); none was taken",
                    several.join(", ")
                )),
            }
        }
        (taken, notes)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.gpus.is_empty()
            && self.versions.is_empty()
            && self.os.is_none()
            && self.engine_log.is_none()
    }
}

/// A word of prose with its surrounding punctuation removed.
#[derive(Debug, Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    /// Part of a path, URL, `key=value` or code identifier.
    in_path: bool,
}

impl Word<'_> {
    fn lower(&self) -> String {
        self.text.to_ascii_lowercase()
    }
}

fn prose_words(line: &str) -> Vec<Word<'_>> {
    line.split_whitespace()
        .map(|raw| {
            let in_path = raw.contains('/')
                || raw.contains('\\')
                || raw.contains("://")
                || (raw.contains('=') && !raw.contains("=="))
                || raw.contains("site-packages");
            let text = raw.trim_matches(|c: char| {
                matches!(
                    c,
                    ',' | ';' | ':' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '*' | '!' | '?'
                )
            });
            let text = text.strip_suffix('.').unwrap_or(text);
            Word { text, in_path }
        })
        .filter(|w| !w.text.is_empty())
        .collect()
}

/// Whether a run of words could be a GPU's name: some word holds both a
/// letter and a digit (`A100`, `2080ti`), or several words hold a model
/// number (`RTX 4090`). A lone number (`8000`, a port as easily as a Quadro)
/// never is.
fn plausible_gpu_words(run: &[Word<'_>]) -> bool {
    let mixed = |w: &str| {
        w.bytes().any(|b| b.is_ascii_digit()) && w.bytes().any(|b| b.is_ascii_alphabetic())
    };
    let numeric = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    match run {
        [one] => mixed(one.text) && one.text.len() >= 2 && !looks_like_version(one.text),
        several => {
            let has_number = several.iter().any(|w| mixed(w.text) || numeric(w.text));
            // The run starts with a word a GPU's name starts with, so that
            // "version 4090" or "in 2080" are not names.
            let first = several[0].lower();
            has_number
                && (mixed(several[0].text)
                    || matches!(
                        first.as_str(),
                        "nvidia"
                            | "geforce"
                            | "tesla"
                            | "quadro"
                            | "rtx"
                            | "gtx"
                            | "titan"
                            | "amd"
                            | "radeon"
                            | "instinct"
                            | "jetson"
                            | "rx"
                            | "mi"
                    ))
        }
    }
}

/// `v0.6.3`, `cu121`, `sm80` are not GPU names (`V100` is).
fn looks_like_version(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    let after = |prefix: &str| {
        lower.strip_prefix(prefix).filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    };
    after("v").is_some_and(|r| r.contains('.'))
        || ["cu", "sm", "sm_", "py", "cp", "gfx", "gcc", "glibc", "rocm"]
            .iter()
            .any(|p| after(p).is_some())
}

/// `2x`, `8×`, `4` before a GPU's name: how many devices.
fn device_count(word: &str) -> Option<usize> {
    let digits = word.trim_end_matches(['x', 'X', '×']);
    let n: usize = digits.parse().ok()?;
    (1..=64).contains(&n).then_some(n)
}

/// A version as people write it: digits and dots first (`0.6.3`,
/// `2.7.0.dev20250310+cu124`, `v0.4.0`), at least `major.minor`.
fn version(word: &str) -> Option<String> {
    let word = word.trim_start_matches(['v', 'V']).trim_end_matches(['.', ',']);
    let release = word.split(['+', '-']).next()?;
    let mut parts = release.split('.');
    let major = parts.next()?;
    let minor = parts.next()?;
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (numeric(major)
        && minor.starts_with(|c: char| c.is_ascii_digit())
        && !word.contains(['/', '\\']))
    .then(|| word.to_owned())
}

/// `Ubuntu 22.04`, `CentOS Linux 7`, `Red Hat Enterprise Linux
/// Workstation release 6.4`, `RHEL 9.6`: a distribution's name and, right
/// after it (past words such as `Linux` or `release`), its version.
fn os_mention(words: &[Word<'_>]) -> Option<Os> {
    const NAMES: &[(&[&str], &str)] = &[
        (&["ubuntu"], "Ubuntu"),
        (&["debian"], "Debian"),
        (&["centos"], "CentOS"),
        (&["fedora"], "Fedora"),
        (&["almalinux"], "AlmaLinux"),
        (&["rocky"], "Rocky Linux"),
        (&["rhel"], "Red Hat Enterprise Linux"),
        (&["red", "hat", "enterprise", "linux"], "Red Hat Enterprise Linux"),
    ];
    const BETWEEN: &[&str] =
        &["linux", "release", "server", "workstation", "workstaion", "rhel", "version"];
    let lower: Vec<String> = words.iter().map(Word::lower).collect();
    for i in 0..words.len() {
        if words[i].in_path {
            continue;
        }
        let Some((name, pretty)) = NAMES.iter().find(|(name, _)| {
            name.iter().enumerate().all(|(k, n)| lower.get(i + k).is_some_and(|w| w == n))
        }) else {
            continue;
        };
        let mut j = i + name.len();
        while j < words.len() && j < i + name.len() + 3 && BETWEEN.contains(&lower[j].as_str()) {
            j += 1;
        }
        let Some(v) = words.get(j).map(|w| w.text) else { continue };
        let is_version = v.starts_with(|c: char| c.is_ascii_digit())
            && v.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if is_version {
            return os_release::from_pretty_name(&format!("{pretty} {v}"));
        }
    }
    None
}

/// The workload of a log line that names only the engine.
fn log_engine_only() -> Workload {
    Workload { engine: Some("vllm".to_owned()), ..Workload::default() }
}

/// vLLM's start-up lines: `vLLM API server version 0.4.0.post1` (the
/// release), and the engine's (V0 `Initializing an LLM engine (v0.6.4)`,
/// V1 `Initializing a V1 LLM engine (v0.8.5)`), read for the release and
/// the workload it was started with.
fn engine_log(line: &str) -> Option<EngineLog> {
    if let Some((_, rest)) = line.split_once("vLLM API server version ") {
        let version = rest.split_whitespace().next().and_then(version);
        return Some(EngineLog { version, workload: log_engine_only() });
    }
    let at = line.find("LLM engine (v")?;
    if !line[..at].contains("Initializing") {
        return None;
    }
    let rest = &line[at + "LLM engine (v".len()..];
    let version = rest.split(')').next().and_then(version);
    let config = rest.split_once("with config:").map(|(_, c)| c).unwrap_or_default();
    let mut w = Workload { engine: Some("vllm".to_owned()), ..Workload::default() };
    for (key, value) in config_pairs(config) {
        match key {
            "model" => w.model = Some(model_name(value).to_owned()),
            "dtype" => w.dtype = Some(value.trim_start_matches("torch.").to_owned()),
            "max_seq_len" => w.max_model_len = value.parse().ok(),
            "tensor_parallel_size" => w.tensor_parallel_size = value.parse().ok(),
            "pipeline_parallel_size" => w.pipeline_parallel_size = value.parse().ok(),
            "quantization" if value != "None" => w.quantization = Some(value.to_owned()),
            "kv_cache_dtype" if value != "auto" => w.kv_cache_dtype = Some(value.to_owned()),
            "rope_scaling" => w.rope_scaling_type = crate::rope_scaling::rope_scaling_type(value),
            _ => {}
        }
    }
    Some(EngineLog { version, workload: w })
}

/// A model as the log names it: a hub id stays whole (`org/name`); a local
/// directory keeps only its last component, since the rest of the path
/// (`/home/alice/models/...`) says nothing about the model and may name
/// its user.
fn model_name(value: &str) -> &str {
    let local = value.starts_with(['/', '.', '~'])
        || value.contains('\\')
        || value.matches('/').count() > 1;
    if local {
        value.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or(value)
    } else {
        value
    }
}

/// `model='/m/x', dtype=torch.float16, quantization=None` → the pairs,
/// quotes removed. A value with a comma inside quotes stays whole.
fn config_pairs(config: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = config.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let (value, next) = match after.chars().next() {
            Some(q @ ('\'' | '"')) => match after[1..].find(q) {
                Some(end) => (&after[1..1 + end], &after[end + 2..]),
                None => (&after[1..], ""),
            },
            // A nested structure (`speculative_config=SpeculativeConfig(...)`)
            // is not read: skip to the next top-level comma.
            _ => match top_level_comma(after) {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            },
        };
        if key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !key.is_empty() {
            out.push((key, value.trim()));
        }
        rest = next.trim_start_matches([',', ' ']);
    }
    out
}

fn top_level_comma(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth <= 0 => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Prose {
        let mut prose = Prose::default();
        for line in text.lines() {
            prose.read_line(line);
        }
        prose
    }

    #[test]
    fn wide_characters_anywhere_are_read_without_a_boundary_problem() {
        let texts = [
            "Initializing an LLM engine (vé) with config: model='é, dtype=✓",
            "Initializing an LLM engine (v0.6.4) with config: model=\"",
            "Initializing an LLM engine (v0.6.4) with config: a=(é, b='✓'",
            "vLLM API server version é",
            "torch version ✓2.0 python é3.11",
            "Ubuntu é Red Hat Enterprise Linux ✓ release",
            "2× RTX 5090 ✓ A100é",
            "\u{80}@ \u{80}= =\u{80} '\u{80}",
        ];
        for text in texts {
            let _ = read(text);
            for cut in 0..text.len() {
                if text.is_char_boundary(cut) {
                    let _ = read(&text[..cut]);
                }
            }
        }
    }

    #[test]
    fn one_gpu_named_in_a_sentence_is_taken() {
        let prose = read("First of all, the machine I am using is \"NVIDIA H100\"");
        assert_eq!(prose.gpus().0, Some(("NVIDIA H100".to_owned(), 1)));
        assert_eq!(
            read("Sorry, My GPU is Tesla V100. Is it too old?").gpus().0.expect("read").0,
            "Tesla V100"
        );
        assert_eq!(read("V100 GPU").gpus().0.expect("read").0, "V100");
        assert_eq!(read("I have 2x RTX 5090 cards").gpus().0, Some(("RTX 5090".to_owned(), 2)));
    }

    #[test]
    fn two_gpu_models_or_a_bare_number_are_not_taken() {
        let (gpus, note) = read("It works on the A100 but fails on a V100").gpus();
        assert_eq!(gpus, None);
        assert!(note.expect("read").contains("several GPU models"));
        assert_eq!(read("the server listens on port 8000").gpus(), (None, None));
        assert_eq!(read("vllm v0.6.3 with cu121 on sm80").gpus(), (None, None));
        assert_eq!(read("see /data/models/a100-runs/x").gpus(), (None, None));
    }

    #[test]
    fn versions_after_package_names() {
        let prose =
            read("torch version 2.0.1, python 3.11\nI use vllm==0.4.0 and flash_attn 2.7.4.post1");
        let (versions, notes) = prose.versions();
        assert!(notes.is_empty());
        assert_eq!(
            versions,
            vec![
                ("torch", "2.0.1".to_owned()),
                ("python", "3.11".to_owned()),
                ("vllm", "0.4.0".to_owned()),
                ("flash-attn", "2.7.4.post1".to_owned())
            ]
        );
    }

    #[test]
    fn a_package_given_two_versions_is_not_taken() {
        let (versions, notes) = read("upgraded sglang 0.1.16 to sglang 0.1.17").versions();
        assert!(versions.is_empty());
        assert!(notes[0].contains("sglang"));
    }

    #[test]
    fn paths_are_not_prose() {
        let prose = read(
            "File \"/nix/store/abc-python3.12-torch-2.2.1/lib/python3.12/site-packages/torch/x.py\"",
        );
        assert!(prose.versions().0.is_empty());
    }

    #[test]
    fn operating_systems_with_their_version() {
        let os = read("On a server running Ubuntu 22.04 LTS with CUDA 12.1").os.expect("read");
        assert_eq!((os.id.as_deref(), os.version.as_deref()), (Some("ubuntu"), Some("22.04")));
        assert_eq!(read("an ubuntu box with 2 GPUs").os, None);
        let rhel =
            read("running Red Hat Enterprise Linux (RHEL) Workstaion release 6.4 (Santiago)");
        let os = rhel.os.expect("read");
        assert_eq!((os.id.as_deref(), os.version.as_deref()), (Some("rhel"), Some("6.4")));
    }

    #[test]
    fn vllm_engine_start_up_line() {
        let line = "INFO 12-27 08:52:17 llm_engine.py:249] Initializing an LLM engine (v0.6.4) with config: model='/data/m/Qwen2-VL-72B-Instruct', speculative_config=None, tokenizer='/data/m/Qwen2-VL-72B-Instruct', dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, kv_cache_dtype=auto, seed=0";
        let log = read(line).engine_log.expect("read");
        assert_eq!(log.version.as_deref(), Some("0.6.4"));
        let w = log.workload;
        assert_eq!(w.model.as_deref(), Some("Qwen2-VL-72B-Instruct"), "a local path's last part");
        assert_eq!(w.dtype.as_deref(), Some("bfloat16"));
        assert_eq!((w.max_model_len, w.tensor_parallel_size), (Some(32768), Some(1)));
        assert_eq!((w.quantization, w.kv_cache_dtype), (None, None));
        assert_eq!(w.rope_scaling_type, None);

        // vLLM 0.5.x prints the `--rope-scaling` it was given, else None.
        let scaled = read(
            "INFO 07-24 llm_engine.py:176] Initializing an LLM engine (v0.5.3) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', revision=None, rope_scaling={'type': 'dynamic', 'factor': 2.0}, rope_theta=None, dtype=torch.bfloat16",
        );
        let w = scaled.engine_log.expect("read").workload;
        assert_eq!(w.rope_scaling_type.as_deref(), Some("dynamic"));
        assert_eq!(w.dtype.as_deref(), Some("bfloat16"), "read on past the dict");
        let unscaled = read(
            "INFO llm_engine.py:176] Initializing an LLM engine (v0.5.3) with config: model='m', rope_scaling=None, rope_theta=None",
        );
        assert_eq!(unscaled.engine_log.expect("read").workload.rope_scaling_type, None);

        let both = read(
            "INFO 04-09 api_server.py:149] vLLM API server version 0.4.0.post1\nINFO llm_engine.py:74] Initializing an LLM engine (v0.4.0.post1) with config: model='/data/q/Qwen1.5-32B-Chat-AWQ', tensor_parallel_size=1, quantization=None",
        );
        let log = both.engine_log.expect("read");
        assert_eq!(log.version.as_deref(), Some("0.4.0.post1"));
        assert_eq!(log.workload.model.as_deref(), Some("Qwen1.5-32B-Chat-AWQ"));
    }
}
