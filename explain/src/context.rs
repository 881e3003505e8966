//! What the rest of a log says about a rule, beyond its signature line:
//! how much of the rule's stack it names (its component and each package
//! it applies to: a vLLM path, a TGI log prefix, `nccl`), and which of the
//! rule's own words (its id, title and message: `aarch64`, `Blackwell`,
//! `fp8`) it holds. Several rules share a signature ("no
//! kernel image is available"); this is what tells them apart, and what
//! keeps a generic error (CUDA out of memory) from being blamed on a rule
//! about a stack the log never mentions.

use std::collections::{HashMap, HashSet};

use pitfall_contract::meta::RuleMeta;

/// Words a GPU's name is preceded by that say nothing about the model.
const GPU_NOISE: &[&str] = &["nvidia", "tesla", "geforce", "amd", "radeon", "instinct"];

/// The longest GPU name looked for, in words (`RTX PRO 6000 Blackwell`).
const GPU_NAME_WORDS: usize = 4;

/// Words too common to tell rules apart.
const STOPWORDS: &[&str] = &[
    "model",
    "gib",
    "mib",
    "kib",
    "gb",
    "mb",
    "kb",
    "install",
    "installed",
    "pip",
    "run",
    "running",
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "are",
    "was",
    "not",
    "but",
    "its",
    "has",
    "have",
    "can",
    "all",
    "any",
    "one",
    "when",
    "than",
    "then",
    "into",
    "only",
    "each",
    "which",
    "their",
    "they",
    "them",
    "there",
    "been",
    "before",
    "after",
    "below",
    "above",
    "over",
    "under",
    "fails",
    "fail",
    "failed",
    "error",
    "errors",
    "needs",
    "need",
    "lacks",
    "lack",
    "no",
    "on",
    "in",
    "of",
    "to",
    "is",
    "be",
    "or",
    "an",
    "at",
    "by",
    "as",
    "it",
    "if",
    "so",
    "up",
    "does",
    "do",
    "get",
    "gets",
    "use",
    "uses",
    "used",
    "without",
    "newer",
    "older",
    "new",
    "old",
    "version",
    "versions",
    "support",
    "supported",
    "supports",
];

/// Error texts with many causes outside any registry: a process running
/// out of GPU memory, killed, or crashing; a model path without a config.
/// A rule whose signature is one of these explains a log only in a log
/// that names the rule's stack.
pub const GENERIC_SYMPTOMS: &[&str] = &[
    "out of memory",
    "OutOfMemoryError",
    "Segmentation fault",
    "illegal memory access",
    "unhandled system error",
    "unspecified launch failure",
    // The shell's words for SIGILL: a CPU lacking an instruction set the
    // binary assumes (AVX in a VM, an x86 image under emulation, Arm flags
    // beyond the host's), or a bug.
    "Illegal instruction",
    // The kernel log's line for the same SIGILL on x86.
    "trap invalid opcode",
    // Hugging Face's loader on any path or repository without a config:
    // a typo, a directory of GGUF files, a private repo, a GGUF-only repo.
    "does not appear to have a file named config.json",
];

/// Messages that say what failed but not whose it is unless the line
/// goes on: the loader's `undefined symbol: X` names a library only with
/// the path before it (`.../torchtext/lib/libtorchtext.so: undefined
/// symbol: ...`). A template holding nothing else is a generic symptom;
/// one with the path is not.
pub const BARE_SYMPTOMS: &[&str] = &["undefined symbol"];

/// Whether a template's literal text (its holes left out) is nothing but
/// a generic symptom: one of [`GENERIC_SYMPTOMS`] or [`BARE_SYMPTOMS`],
/// punctuation and blanks aside.
pub fn is_bare_symptom(literal: &str) -> bool {
    fn words(text: &str) -> String {
        let words: Vec<&str> =
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        words.join(" ").to_lowercase()
    }
    let said = words(literal);
    !said.is_empty() && BARE_SYMPTOMS.iter().chain(GENERIC_SYMPTOMS).any(|s| said == words(s))
}

/// Whether `text` is one of the [`GENERIC_SYMPTOMS`].
pub fn is_symptom(text: &str) -> bool {
    GENERIC_SYMPTOMS.iter().any(|s| text.contains(s))
}

/// Every rule's words, with how many rules use each.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    /// Word → id.
    words: HashMap<String, u32>,
    /// By word id: how many rules use it.
    rules_using: Vec<u32>,
    /// By word id: the word.
    spelled: Vec<String>,
    rules: usize,
    /// A GPU name's words joined by spaces → what the GPU is, from the
    /// hardware table: a log that says "RTX 5090" says "Blackwell".
    gpus: HashMap<String, GpuFacts>,
}

/// What a GPU name the log holds says.
#[derive(Debug, Clone, Default)]
struct GpuFacts {
    /// The vocabulary's words for it (its architecture, `sm_120`, `12.0`).
    words: Vec<u32>,
    /// Its compute capability (NVIDIA).
    capability: Option<String>,
}

/// What a log's lines say in the vocabulary's terms.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// The ids of the vocabulary's words found.
    pub words: HashSet<u32>,
    /// The compute capabilities of the GPUs named, each once.
    pub capabilities: Vec<String>,
}

/// One rule's profile.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Its distinct word ids (its component's names apart: naming the
    /// component is counted on its own).
    pub words: Vec<u32>,
    /// Those of its title: what a log of this breakage usually shows.
    pub title_words: Vec<u32>,
    /// The stack it is about: its component, each package, engine and CPU
    /// architecture its `applies_to` names and any package its title
    /// names, each as the texts any of which, found in a
    /// log, names it. A rule about vLLM over NCCL is named by a log that
    /// says both, half by one that says only NCCL.
    pub stack: Vec<Vec<String>>,
    /// The model families its title names (`gemma`), one more part of its
    /// stack, named when the log names any of them, and only as a model's
    /// name (`gemma-4-E4B`, `Gemma 4`), not inside a class name
    /// (`Gemma2ForCausalLM` in a list of supported architectures).
    pub families: Vec<String>,
}

impl Vocabulary {
    /// The vocabulary and profiles of `rules`, in order.
    pub fn build<'a>(rules: impl IntoIterator<Item = &'a RuleMeta>) -> (Vocabulary, Vec<Profile>) {
        let mut vocabulary = Vocabulary::default();
        let mut profiles = Vec::new();
        let rules: Vec<&RuleMeta> = rules.into_iter().collect();
        // Every package some rule applies to, by each of its names: a
        // title's words are looked up, so building stays linear in the
        // number of rules.
        let mut packages: HashMap<String, Vec<String>> = HashMap::new();
        for group in rules.iter().flat_map(|m| package_names(m)) {
            for name in &group {
                packages.entry(name.clone()).or_insert_with(|| group.clone());
            }
        }
        let families = model_families();
        for meta in &rules {
            let stack = with_titled_stack(&stack_names(meta), &meta.title, &packages);
            let title_lower = meta.title.to_lowercase();
            let families: Vec<String> =
                families.iter().filter(|f| contains_word(&title_lower, f)).cloned().collect();
            let mut text = meta.id.replace('-', " ");
            for part in [&meta.title, &meta.message] {
                text.push(' ');
                text.push_str(part);
            }
            let title: Vec<String> = tokens(&meta.title).collect();
            let mut words: Vec<u32> = Vec::new();
            let mut title_words: Vec<u32> = Vec::new();
            for word in tokens(&text) {
                if word.len() < 2
                    || STOPWORDS.contains(&word.as_str())
                    || stack.iter().flatten().any(|n| *n == word)
                {
                    continue;
                }
                let next = vocabulary.words.len() as u32;
                let id = *vocabulary.words.entry(word.clone()).or_insert(next);
                if id == next {
                    vocabulary.rules_using.push(0);
                    vocabulary.spelled.push(word);
                }
                if !words.contains(&id) {
                    words.push(id);
                    vocabulary.rules_using[id as usize] += 1;
                }
                if title.contains(&vocabulary.spelled[id as usize]) && !title_words.contains(&id) {
                    title_words.push(id);
                }
            }
            profiles.push(Profile { words, title_words, stack, families });
            vocabulary.rules += 1;
        }
        vocabulary.gpus = vocabulary.gpu_facts();
        (vocabulary, profiles)
    }

    /// Every GPU name of the hardware table, with what it says.
    fn gpu_facts(&self) -> HashMap<String, GpuFacts> {
        let mut out = HashMap::new();
        for gpu in pitfall_facts::gpus::table() {
            let mut facts = vec![gpu.architecture.to_lowercase()];
            if let Some(cc) = &gpu.compute_capability {
                facts.push(format!("sm_{}", cc.replace('.', "")));
                facts.push(cc.clone());
            }
            if let Some(gfx) = &gpu.gfx_target {
                facts.push(gfx.to_lowercase());
            }
            let words: Vec<u32> = facts.iter().filter_map(|f| self.words.get(f).copied()).collect();
            let found = GpuFacts { words, capability: gpu.compute_capability.clone() };
            let names = std::iter::once(&gpu.model).chain(&gpu.aliases).chain(
                gpu.variants.iter().flat_map(|v| std::iter::once(&v.name).chain(&v.aliases)),
            );
            for name in names {
                let words = gpu_name_words(name);
                if !words.is_empty() && words.len() <= GPU_NAME_WORDS {
                    out.insert(words.join(" "), found.clone());
                }
            }
        }
        out
    }

    /// The ids of the vocabulary's words found in `lines`.
    pub fn words_in<'l>(&self, lines: impl IntoIterator<Item = &'l str>) -> HashSet<u32> {
        self.read(lines).words
    }

    /// The vocabulary's words found in `lines`, and the compute
    /// capabilities of the GPUs they name: one pass over each line.
    pub fn read<'l>(&self, lines: impl IntoIterator<Item = &'l str>) -> Read {
        let mut read = Read::default();
        for line in lines {
            for word in tokens(line) {
                if let Some(id) = self.words.get(&word) {
                    read.words.insert(*id);
                }
            }
            if self.gpus.is_empty() {
                continue;
            }
            let words = gpu_name_words(line);
            for start in 0..words.len() {
                let mut name = String::new();
                for word in words.iter().skip(start).take(GPU_NAME_WORDS) {
                    if !name.is_empty() {
                        name.push(' ');
                    }
                    name.push_str(word);
                    if let Some(facts) = self.gpus.get(&name) {
                        read.words.extend(facts.words.iter().copied());
                        if let Some(cc) = &facts.capability
                            && !read.capabilities.contains(cc)
                        {
                            read.capabilities.push(cc.clone());
                        }
                    }
                }
            }
        }
        read
    }

    /// How much a word tells rules apart: rarer is more.
    fn weight(&self, rules_using: u32) -> f64 {
        (1.0 + self.rules as f64 / f64::from(rules_using.max(1))).ln()
    }

    /// The share of `profile`'s words the log holds (those of the matched
    /// signature's text apart, which the match already counted), as
    /// evidence in [0, 1], and those words.
    pub fn overlap(
        &self,
        profile: &Profile,
        log: &HashSet<u32>,
        matched: &HashSet<u32>,
    ) -> (f64, Vec<String>) {
        let found: Vec<u32> = profile
            .words
            .iter()
            .copied()
            .filter(|w| log.contains(w) && !matched.contains(w))
            .collect();
        let sum: f64 = found
            .iter()
            .map(|&w| self.weight(self.rules_using.get(w as usize).copied().unwrap_or(1)))
            .sum();
        let words = found.iter().filter_map(|&w| self.spelled.get(w as usize).cloned()).collect();
        (1.0 - (-sum / 6.0).exp(), words)
    }

    /// The share of `profile`'s title words (by weight) the log holds: a
    /// rule about one model family or GPU generation whose name the log
    /// never mentions explains it less well than a general one.
    pub fn title_coverage(&self, profile: &Profile, log: &HashSet<u32>) -> f64 {
        let weight = |&w: &u32| self.weight(self.rules_using.get(w as usize).copied().unwrap_or(1));
        let total: f64 = profile.title_words.iter().map(weight).sum();
        if total == 0.0 {
            return 1.0;
        }
        profile.title_words.iter().filter(|w| log.contains(w)).map(weight).sum::<f64>() / total
    }
}

/// Lowercased alphanumeric runs, `_` and `.` inside kept (`sm_120`,
/// `12.0`, `flash_attn`); a plural's `s` dropped (`architectures`).
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map(|t| t.trim_matches(|c| c == '.' || c == '_'))
        .filter(|t| !t.is_empty())
        .map(|t| {
            let t = t.to_lowercase();
            match t.strip_suffix('s') {
                Some(stem) if stem.len() >= 4 && stem.chars().all(char::is_alphabetic) => {
                    stem.to_owned()
                }
                _ => t,
            }
        })
}

/// A GPU name's words as the hardware table compares them: lowercase
/// alphanumeric runs, a leading vendor or brand word dropped.
fn gpu_name_words(text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let noise = words.iter().take_while(|w| GPU_NOISE.contains(&w.as_str())).count();
    words.into_iter().skip(noise).filter(|w| !GPU_NOISE.contains(&w.as_str())).collect()
}

/// How a log names a rule's component and each package it applies to:
/// one group of aliases per thing named (a package that is also the
/// component is one group).
fn stack_names(meta: &RuleMeta) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let names = meta.component.iter().map(String::as_str).chain(selector_packages(meta));
    // x86_64 is where most logs come from and few say so: a log not naming
    // it says nothing against a rule about it. Other CPUs must be named.
    let arches = meta
        .applies_to
        .iter()
        .filter_map(|s| s.strip_prefix("arch:"))
        .filter(|arch| *arch != "x86_64")
        .map(arch_aliases);
    // A rule about stacks in a container image: a log of `docker run` or
    // podman names where it runs.
    let container = meta
        .applies_to
        .iter()
        .filter(|s| *s == "container")
        .map(|_| ["docker", "podman", "container"].map(str::to_owned).to_vec());
    for group in names.map(aliases).chain(arches).chain(container) {
        if !group.is_empty() && !groups.iter().any(|g| same_thing(g, &group)) {
            groups.push(group);
        }
    }
    groups
}

/// Whether two alias groups name the same thing: a name of one is a name
/// of the other, or one with a dashed part more (`nvidia-container` and
/// `nvidia-container-toolkit`, `fabricmanager` and
/// `nvidia-fabricmanager`; not `torch` and `torchvision`).
fn same_thing(a: &[String], b: &[String]) -> bool {
    fn part_of(long: &str, short: &str) -> bool {
        let sep = |c: char| matches!(c, '-' | '_' | ' ');
        long == short
            || long.strip_prefix(short).is_some_and(|rest| rest.starts_with(sep))
            || long.strip_suffix(short).is_some_and(|rest| rest.ends_with(sep))
    }
    a.iter().any(|x| b.iter().any(|y| part_of(x, y) || part_of(y, x)))
}

/// The packages and engines of a rule's `applies_to`, each as its aliases.
fn package_names(meta: &RuleMeta) -> Vec<Vec<String>> {
    selector_packages(meta).map(aliases).filter(|g| !g.is_empty()).collect()
}

/// The names in `package:` and `engine:` selectors (`package:vllm<0.11.0`
/// is `vllm`).
fn selector_packages(meta: &RuleMeta) -> impl Iterator<Item = &str> {
    meta.applies_to.iter().filter_map(|selector| {
        let rest = selector.strip_prefix("package:").or(selector.strip_prefix("engine:"))?;
        let end = rest.find(['<', '>', '=', '!', '~', '[']).unwrap_or(rest.len());
        Some(&rest[..end])
    })
}

/// The texts any of which, found in a log, names the CPU architecture
/// `arch` (as `arch:` selectors spell it).
fn arch_aliases(arch: &str) -> Vec<String> {
    let aliases: &[&str] = match arch {
        "aarch64" => &["aarch64", "arm64", "sbsa"],
        "x86_64" => &["x86_64", "amd64"],
        other => return vec![other.to_lowercase()],
    };
    aliases.iter().map(|a| (*a).to_owned()).collect()
}

/// The texts any of which, found in a log, names `name`.
fn aliases(name: &str) -> Vec<String> {
    {
        let aliases: Vec<&str> = match name {
            "tgi" | "text-generation-inference" => {
                vec!["text-generation", "text_generation", "tgi"]
            }
            "flash-attn" | "flash_attn" => {
                vec!["flash_attn", "flash-attn", "flashattention", "flash attention"]
            }
            "nvidia-driver" => vec!["nvidia driver", "nvrm", "driver version", "nvidia-smi"],
            "container-toolkit" => {
                vec!["nvidia-container", "container toolkit", "nvidia container"]
            }
            "fabricmanager" => vec!["fabricmanager", "fabric manager", "nvswitch"],
            "tensorrt-llm" => vec!["tensorrt_llm", "tensorrt-llm", "trtllm"],
            "rocm" => vec!["rocm", "hip "],
            // torch's core library and namespace: a C++ symbol or frame
            // of `c10::` is torch's, whatever else the log says
            // (mangled, `_ZN3c10`, `_ZNK3c10`).
            "torch" => vec!["torch", "c10::", "libc10", "_zn3c10", "_znk3c10"],
            "os" | "hardware" | "health-check" | "python" => Vec::new(),
            other => vec![other],
        };
        // A package published under an older name is named by it too
        // (`flashinfer-python`'s wheels, module and paths say `flashinfer`).
        let renamed = pitfall_contract::normalize::PACKAGE_RENAMES
            .iter()
            .filter(|(_, current)| *current == name)
            .map(|(old, _)| *old);
        aliases.into_iter().chain(renamed).map(str::to_lowercase).collect()
    }
}

/// `own` and every package (one some rule applies to) its title names as
/// a word: a rule about "vLLM on an AMD GPU" filed under `rocm` is about
/// vLLM too. (Components are left out: "in a Docker container" says
/// where, not what breaks.)
fn with_titled_stack(
    own: &[Vec<String>],
    title: &str,
    packages: &HashMap<String, Vec<String>>,
) -> Vec<Vec<String>> {
    let mut stack = own.to_vec();
    for word in tokens(title) {
        if let Some(group) = packages.get(&word)
            && !stack.iter().any(|g| same_thing(g, group))
        {
            stack.push(group.clone());
        }
    }
    stack
}

/// The model families of the model table by their name's stem, the
/// part before any version (`gemma-4` and `gemma-3` are `gemma`, `qwen2.5`
/// is `qwen`, `gpt-oss` stays): the words a log or a title names a model
/// family by. Stems shorter than three letters (`yi`) are left out: too
/// many other words contain them.
fn model_families() -> Vec<String> {
    let mut stems: Vec<String> = Vec::new();
    for model in pitfall_facts::models::table() {
        let family = model.family.to_lowercase();
        let mut parts = Vec::new();
        for part in family.split('-') {
            if part.chars().any(|c| c.is_ascii_digit()) {
                let alpha: String = part.chars().take_while(char::is_ascii_alphabetic).collect();
                if parts.is_empty() && !alpha.is_empty() {
                    parts.push(alpha);
                }
                break;
            }
            parts.push(part.to_owned());
        }
        let stem = parts.join("-");
        if stem.len() >= 3 && !stems.contains(&stem) {
            stems.push(stem);
        }
    }
    stems
}

/// Whether `text` names the model family `stem` as a model's name: the
/// stem as a word, a version after it or not (`gemma 4`, `gemma-4-e4b`,
/// `qwen2.5-7b`), and no letter right after (`gemma2forcausallm` is a
/// class, `gemmas` another word).
fn contains_word(text: &str, stem: &str) -> bool {
    text.match_indices(stem).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let rest =
            text[i + stem.len()..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        !before.is_some_and(char::is_alphanumeric) && !rest.starts_with(char::is_alphanumeric)
    })
}

/// The share of `stack`'s groups the lowercased log names, or its
/// prefixes named; 0 for a rule that names no stack (nothing in the log
/// can then speak for it).
pub fn stack_named(log_lower: &str, prefixed: &[&str], profile: &Profile) -> f64 {
    let families = usize::from(!profile.families.is_empty());
    let groups = profile.stack.len() + families;
    if groups == 0 {
        return 0.0;
    }
    let named = profile
        .stack
        .iter()
        .filter(|g| {
            g.iter().any(|n| prefixed.contains(&n.as_str()) || log_lower.contains(n.as_str()))
        })
        .count()
        + usize::from(profile.families.iter().any(|f| contains_word(log_lower, f)));
    named as f64 / groups as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_family_is_named_by_a_models_name_not_a_class_name() {
        assert!(contains_word("model='google/gemma-4-e4b-it'", "gemma"));
        assert!(contains_word("gemma 4 e2b/e4b unquantized", "gemma"));
        assert!(contains_word("/data/qwen2.5-7b-instruct", "qwen"));
        assert!(contains_word("gpt-oss-120b", "gpt-oss"));
        assert!(!contains_word("['gemmaforcausallm', 'gemma2forcausallm']", "gemma"));
        assert!(!contains_word("qwen3forcausallm", "qwen"));
    }

    #[test]
    fn a_template_saying_only_a_symptom_is_bare() {
        assert!(is_bare_symptom("undefined symbol: "));
        assert!(is_bare_symptom(" out of memory. "));
        assert!(!is_bare_symptom("CUDA out of memory. Tried to allocate "));
        assert!(!is_bare_symptom(
            "ImportError: /torchtext/lib/libtorchtext.so: undefined symbol: "
        ));
        assert!(!is_bare_symptom("undefined symbol: ncclCommRegister"));
        assert!(!is_bare_symptom(""));
    }

    #[test]
    fn a_package_and_its_dashed_name_are_one_thing() {
        let g = |n: &[&str]| n.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert!(same_thing(&g(&["nvidia-container"]), &g(&["nvidia-container-toolkit"])));
        assert!(same_thing(&g(&["fabricmanager"]), &g(&["nvidia-fabricmanager"])));
        assert!(!same_thing(&g(&["torch"]), &g(&["torchvision"])));
    }

    #[test]
    fn a_renamed_package_is_named_by_its_old_name_too() {
        assert!(aliases("flashinfer-python").contains(&"flashinfer".to_owned()));
        assert_eq!(aliases("vllm"), ["vllm"]);
    }

    #[test]
    fn tokens_keep_versions_and_sm_names() {
        let t: Vec<String> = tokens("RTX 5090 (sm_120), torch 2.7.0+cu128: Flash_Attn.").collect();
        assert_eq!(t, ["rtx", "5090", "sm_120", "torch", "2.7.0", "cu128", "flash_attn"]);
    }
}
