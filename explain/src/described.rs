//! Messages a reporter described instead of pasting: an issue's title
//! (`CUDA kernel image not available for GTX 1080 Ti` for `CUDA error: no
//! kernel image is available for execution on the device`), a summary line
//! (`FlashAttention only supports head dimensions up to 256` for
//! `FlashAttention forward only supports head dimension at most 256`).
//! Words are reordered, changed (`at most`, `up to`) or dropped, so neither
//! the exact matcher ([`crate::signature`]) nor the retyped one
//! ([`crate::retyped`]) finds them.
//!
//! A signature's message is read as a set of telling words, each weighed by
//! how few rules' messages have it (a word every CUDA rule says tells
//! little). A line describes a signature when it holds much of that weight
//! ([`MIN_COVERAGE`]), at least [`MIN_SHARED`] of its words and enough
//! weight that common words alone do not make it. A reporter who names a
//! code identifier only one rule's messages hold (an exception class,
//! `AmbiguousGlobalPerLayerAttributeError`; a symbol, `ncclCommRegister`)
//! describes that rule's messages as well, whatever else the line says.
//!
//! A description is weaker evidence than a quote: its strength is the
//! share of the message's weight it holds, and the explainer counts it
//! only in a log that names the rule's stack (as it does a generic
//! symptom) or a GPU within the rule's capability ranges. Words shared by more than [`MAX_WORD_RULES`] rules are not
//! indexed at all and a long line is not read, so a line's cost follows
//! its own words, not the registry's size.

use std::collections::HashMap;

use pitfall_contract::template::Segment;

use crate::signature::Signature;

/// The share of a message's word weight a line must hold.
pub const MIN_COVERAGE: f64 = 0.45;

/// The fewest of a message's telling words a line must hold: fewer is a
/// phrase many messages share.
const MIN_SHARED: usize = 3;

/// A message with fewer telling words than this is never described (a
/// line holding two words of a three-word message says little).
const MIN_MESSAGE_WORDS: usize = 4;

/// The least weight of a message's words a line must hold, a word said
/// by one rule weighing 1: about two words a few rules say. Common words
/// alone (`cuda`, `error`, `device`, `supported`) describe nothing, however
/// much of a short message they make.
const MIN_HELD: f64 = 1.25;

/// A word more rules than this say is left out of the index and of every
/// message's weight: it neither finds nor tells messages apart.
pub const MAX_WORD_RULES: u32 = 48;

/// The coverage a named identifier stands for, when the line holds little
/// else of the message.
const IDENTIFIER_NAMED: f64 = 0.7;

/// The shortest camel-case word taken as one place's identifier
/// (`KeyError`, `ValueError`, `CudaError` are everywhere).
const MIN_IDENTIFIER: usize = 14;

/// A line of more telling words than this is not a description: a
/// settings dump (`non-default args: {...}`) holds many messages' words
/// without saying any of them; a title or an exception line is shorter.
const MAX_LINE_WORDS: usize = 40;

/// The most signatures one line is weighed against, best covered first.
const MAX_CANDIDATES: usize = 64;

/// Words that carry no message of their own.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "for", "on", "in", "to",
    "at", "by", "with", "and", "or", "it", "its", "this", "that", "than", "as", "from", "please",
    "use", "your", "you", "no", "not", "does", "do", "can", "cannot", "but", "if", "so", "into",
    "any", "one", "has", "have", "which", "only", "most", "up", "there", "these", "instead",
];

/// Every rule's messages as weighed word sets.
#[derive(Debug, Default)]
pub struct Index {
    words: HashMap<String, u32>,
    /// By word id: how many rules' messages have it.
    rules_using: Vec<u32>,
    /// By word id: the signatures that have it (filled by [`Index::finish`]).
    signatures_with: Vec<Vec<u32>>,
    /// By signature: its rule and its distinct word ids.
    messages: Vec<(u32, Vec<u32>)>,
    /// By word id: whether a template spells it as a code identifier.
    identifier: Vec<bool>,
    /// By signature: its words' total weight, its two rarest words (a
    /// line that has neither is another message, `mxfp4` for `awq`), and
    /// the identifier only its rule's messages hold, if it has one.
    totals: Vec<f64>,
    rarest: Vec<[u32; 2]>,
    identifiers: Vec<Option<u32>>,
    rules: u32,
}

impl Index {
    /// Adds the next signature (its position is the count added so far),
    /// of rule `rule`.
    pub fn add(&mut self, rule: u32, signature: &Signature) {
        let mut ids: Vec<u32> = Vec::new();
        for (i, segment) in signature.segments().iter().enumerate() {
            if let Segment::Literal(l) = segment {
                let text = if i == 0 { &l[signature.core_start()..] } else { l.as_str() };
                for (word, spelled) in telling_words_spelled(text) {
                    let next = self.words.len() as u32;
                    let id = *self.words.entry(word).or_insert(next);
                    if id == next {
                        self.rules_using.push(0);
                        self.identifier.push(false);
                    }
                    self.identifier[id as usize] |= is_identifier(spelled);
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        }
        self.rules = self.rules.max(rule + 1);
        self.messages.push((rule, ids));
    }

    /// Counts each word's rules, weighs the words and indexes the
    /// signatures by their telling words.
    pub fn finish(&mut self) {
        let mut last_rule = vec![u32::MAX; self.rules_using.len()];
        for (rule, ids) in &self.messages {
            for &w in ids {
                if last_rule[w as usize] != *rule {
                    last_rule[w as usize] = *rule;
                    self.rules_using[w as usize] += 1;
                }
            }
        }
        self.signatures_with = vec![Vec::new(); self.words.len()];
        self.totals = Vec::with_capacity(self.messages.len());
        self.identifiers = Vec::with_capacity(self.messages.len());
        self.rarest = Vec::with_capacity(self.messages.len());
        for (s, (_, ids)) in self.messages.iter().enumerate() {
            let identifier = ids
                .iter()
                .copied()
                .find(|&w| self.rules_using[w as usize] == 1 && self.identifier[w as usize]);
            self.identifiers.push(identifier);
            let telling: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|&w| self.rules_using[w as usize] <= MAX_WORD_RULES)
                .collect();
            let mut by_rarity = telling.clone();
            by_rarity.sort_by_key(|&w| (self.rules_using[w as usize], w));
            self.rarest.push([
                by_rarity.first().copied().unwrap_or(u32::MAX),
                by_rarity.get(1).copied().unwrap_or(u32::MAX),
            ]);
            if telling.len() < MIN_MESSAGE_WORDS {
                // Too short to describe; its identifier still names it.
                self.totals.push(0.0);
                if let Some(w) = identifier {
                    self.signatures_with[w as usize].push(s as u32);
                }
                continue;
            }
            for &w in &telling {
                self.signatures_with[w as usize].push(s as u32);
            }
            self.totals.push(telling.iter().map(|&w| self.weight(w)).sum());
        }
    }

    /// How much a word tells messages apart, in (0, 1]: the fewer rules
    /// say it, the more; 1 for a word only one rule says.
    fn weight(&self, word: u32) -> f64 {
        let rules = f64::from(self.rules.max(1));
        (1.0 + rules / f64::from(self.rules_using[word as usize].max(1))).ln() / (1.0 + rules).ln()
    }

    /// The signatures `line` describes, best described first, each with
    /// its strength in [0, 1].
    pub fn describe(&self, line: &str) -> Vec<(u32, f64)> {
        let words: Vec<String> = telling_words(line).take(MAX_LINE_WORDS + 1).collect();
        if words.len() > MAX_LINE_WORDS {
            return Vec::new();
        }
        let mut ids: Vec<u32> = words.iter().filter_map(|w| self.words.get(w).copied()).collect();
        ids.sort_unstable();
        ids.dedup();
        // Signature → (weight held, words held, its identifier named, one
        // of its two rarest words held).
        let mut held: HashMap<u32, (f64, usize, bool, bool)> = HashMap::new();
        for &w in &ids {
            for &s in &self.signatures_with[w as usize] {
                let h = held.entry(s).or_default();
                h.0 += self.weight(w);
                h.1 += 1;
                h.2 |= self.identifiers[s as usize] == Some(w);
                h.3 |= self.rarest[s as usize].contains(&w);
            }
        }
        let mut found: Vec<(u32, f64)> = held
            .into_iter()
            .filter_map(|(s, (weight, count, identifier, rare))| {
                let total = self.totals[s as usize];
                let coverage = if total > 0.0 { weight / total } else { 0.0 };
                let described =
                    rare && count >= MIN_SHARED && weight >= MIN_HELD && coverage >= MIN_COVERAGE;
                let named = if identifier { IDENTIFIER_NAMED } else { 0.0 };
                (described || identifier).then(|| (s, coverage.max(named).min(1.0)))
            })
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(MAX_CANDIDATES);
        found
    }
}

/// Whether `word`, as a template spells it, is a code identifier long
/// enough to be one place's: camel case (`ncclCommRegister`,
/// `AmbiguousGlobalPerLayerAttributeError`), ASCII letters and digits.
fn is_identifier(word: &str) -> bool {
    let bytes = word.as_bytes();
    word.len() >= MIN_IDENTIFIER
        && bytes.iter().all(u8::is_ascii_alphanumeric)
        && bytes.windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
}

/// The telling words of `text`, lowercased, a plural's `s` dropped: no
/// function words, no single characters (a one-digit number among them). A
/// dotted name (`configuration_utils.AmbiguousGlobal...Error`) gives each
/// of its parts; a dotted number (`7.0`) stays one word.
fn telling_words(text: &str) -> impl Iterator<Item = String> + '_ {
    telling_words_spelled(text).map(|(word, _)| word)
}

/// [`telling_words`], each with its spelling in `text`.
fn telling_words_spelled(text: &str) -> impl Iterator<Item = (String, &str)> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '.'))
        .flat_map(|token| {
            let number = token.chars().all(|c| c.is_ascii_digit() || c == '.');
            let parts: Vec<&str> =
                if number { vec![token.trim_matches('.')] } else { token.split('.').collect() };
            parts.into_iter()
        })
        .filter_map(|word| {
            let lower = word.to_lowercase();
            if lower.chars().count() < 2 || FUNCTION_WORDS.contains(&lower.as_str()) {
                return None;
            }
            Some((singular(lower), word))
        })
}

/// `dimensions` → `dimension`, `gpus` → `gpu`; `class`, `cuda`, `bus` stay.
fn singular(word: String) -> String {
    let plural = word.len() > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
        && word.chars().all(|c| c.is_alphabetic());
    if plural { word[..word.len() - 1].to_owned() } else { word }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(messages: &[(u32, &str)]) -> (Index, Vec<Signature>) {
        let mut index = Index::default();
        let mut signatures = Vec::new();
        for (rule, template) in messages {
            let s = Signature::compile(template).expect("a template");
            index.add(*rule, &s);
            signatures.push(s);
        }
        index.finish();
        (index, signatures)
    }

    fn described(index: &Index, _: &[Signature], line: &str) -> Vec<(u32, f64)> {
        index.describe(line)
    }

    #[test]
    fn a_title_describing_a_message_in_other_words_finds_it() {
        let (index, signatures) = index(&[
            (0, "FlashAttention forward only supports head dimension at most 256"),
            (1, "FlashAttention only supports Ampere GPUs or newer."),
            (2, "RuntimeError: CUDA error: out of memory while allocating the cache"),
        ]);
        let found = described(
            &index,
            &signatures,
            "RuntimeError: FlashAttention only supports head dimensions up to 256",
        );
        assert_eq!(found.first().map(|f| f.0), Some(0), "{found:?}");
        assert!(found.iter().all(|f| f.0 != 1), "Ampere is not said: {found:?}");
    }

    #[test]
    fn common_words_alone_describe_nothing() {
        let (index, signatures) = index(&[
            (0, "CUDA error: no kernel image is available for execution on the device"),
            (1, "CUDA error: an illegal memory access was encountered on the device"),
        ]);
        assert!(described(&index, &signatures, "CUDA error on the device, please help").is_empty());
        let found =
            described(&index, &signatures, "CUDA kernel image not available for GTX 1080 Ti");
        assert_eq!(found.first().map(|f| f.0), Some(0), "{found:?}");
    }

    #[test]
    fn an_exception_class_one_rule_raises_names_its_messages() {
        let (index, signatures) = index(&[
            (
                0,
                "transformers.integrations.heterogeneity.configuration_utils.AmbiguousGlobalPerLayerAttributeError: '{word}' is a per-layer attribute and may vary across layers.",
            ),
            (
                1,
                "ValueError: The model type '{word}' does not support float16. Reason: Numerical instability.",
            ),
        ]);
        let found = described(
            &index,
            &signatures,
            "[Bug]: Gemma4 crashes at startup in v0.27.1 with `AmbiguousGlobalPerLayerAttributeError`",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 0);
        // A class every engine raises names nothing.
        assert!(described(&index, &signatures, "ValueError: bad model").is_empty());
    }

    #[test]
    fn a_symbol_only_one_rule_names_finds_its_short_message() {
        let (index, signatures) = index(&[
            (0, "{path}: undefined symbol: ncclCommRegister"),
            (1, "{path}: undefined symbol: {word}"),
        ]);
        let found = described(
            &index,
            &signatures,
            "Importing Torch is giving me an error undefined symbol: ncclCommRegister",
        );
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [0], "{found:?}");
        assert!(is_identifier("AmbiguousGlobalPerLayerAttributeError"));
        assert!(!is_identifier("ValueError") && !is_identifier("flash_attn_2_cuda"));
    }

    #[test]
    fn words_are_read_singular_and_dotted_names_apart() {
        let words: Vec<String> =
            telling_words("utils.AmbiguousGlobalError heads dimensions 7.0 a 8 class cuda")
                .collect();
        assert_eq!(
            words,
            ["util", "ambiguousglobalerror", "head", "dimension", "7.0", "class", "cuda"]
        );
    }
}
