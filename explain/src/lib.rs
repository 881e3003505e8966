//! # pitfall-explain
//!
//! Paste an error, get the cause: ranks rules by how well their error
//! signatures explain a log.
//!
//! An [`Explainer`] is compiled once per ruleset revision from every rule's
//! `error_signatures`: one Aho-Corasick automaton over each template's
//! literal anchor, so [`Explainer::explain`] scans the log once and then
//! checks the holes of the few signatures whose anchor it found, on the
//! lines it found them on. A line that retypes a message by hand (a word
//! added, its ends missing) is matched word by word ([`retyped`]); a short
//! line that quotes no message but describes one in other words (an
//! issue's title, an exception's class) by the message's telling words
//! ([`described`]), counted only where the log names the rule's stack or
//! a GPU within the rule's capability ranges. Its
//! cost grows with the log's length and the anchors and words found, not
//! with the number of rules.
//!
//! Before matching, the log is normalised ([`normalize`]: colours,
//! timestamps, log and rank prefixes, repeated lines) and its Python
//! exception chains read ([`traceback`]), so a match on the root cause's
//! exception line counts more than one on a log message. A rule's score
//! ([`Cause::score`], in [0, 1]) is its best signature match's strength
//! (how much literal text it covered, how complete, with typed holes
//! filled), weighed by the line's role, by what the rest of the log says
//! about the rule ([`context`]: how much of its stack the log names, its
//! own words) and by the releases and GPUs the log states ([`versions`]);
//! below [`SCORE_THRESHOLD`] nothing is returned. Of rules scoring alike,
//! the one whose conditions the log leaves fewer unconfirmed ranks first.
//!
//! No HTTP, no SQL: the server, the CLI and the web page all call this.

pub mod context;
pub mod described;
pub mod normalize;
pub mod outcome;
pub mod retyped;
pub mod signature;
pub mod traceback;
pub mod versions;

use std::collections::{HashMap, HashSet};

use aho_corasick::{AhoCorasick, MatchKind};
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::template::TemplateError;
use pitfall_version::Version;

use context::{Profile, Vocabulary};
use signature::Signature;
use traceback::Role;

/// Causes scoring below this are not returned. Calibrated on the
/// evaluation set (`tests/reports`, `explain/tests/reports.rs`): a long,
/// specific signature matched whole on the exception line scores 0.75 to
/// 1.0; a generic one (CUDA out of memory, shared by several rules) on a log
/// that names none of the rule's stack scores about 0.5, and a short one
/// (`KeyError: '{word}'`) about 0.4.
pub const SCORE_THRESHOLD: f64 = 0.55;

/// A match's share of the score that needs no corroboration from the rest
/// of the log, when the line is claimed by this rule alone...
const UNIQUE_FLOOR: f64 = 0.8;
/// ...by several rules (the log must say which)...
const SHARED_FLOOR: f64 = 0.7;
/// ...and when the line is a symptom with many causes outside any
/// registry (`context::GENERIC_SYMPTOMS`): without the log naming the
/// rule's stack it stays below the threshold, whatever of the rule's own
/// words the log holds.
const SYMPTOM_FLOOR: f64 = 0.5;

/// The share of a match's corroboration that is the log naming the rule's
/// stack; the rest is the rule's own words in the log. Naming the stack
/// weighs more: a GPU's generation (`Pascal`) is said by many rules about
/// many stacks, while a log about torch.compile that never says vLLM is
/// not vLLM's.
const NAMED_SHARE: f64 = 0.6;

/// What a rule's score is worth when another rule's signature matched the
/// same line and covered it: the same text, and this much more literal
/// text (flashinfer's `CUDA Error: no kernel image ... (209) {path}: line
/// {int} at function` over the bare CUDA message). The more exact match
/// says which component failed.
const SUBSUMED: f64 = 0.85;

/// The literal bytes a covering match must add to subsume another.
const SUBSUME_MARGIN: usize = 12;

/// How much of what is left to certainty a second signature of the same
/// rule, matched on another line, adds (`... is not compatible with the
/// current PyTorch installation` followed by `The current PyTorch install
/// supports CUDA capabilities ...`).
const CORROBORATION: f64 = 0.25;

/// What a rule's score is worth when the log states only releases of a
/// package its `applies_to` leaves out, or names only GPUs outside its
/// capability range ([`versions`]): it may still be the cause (the log may
/// quote another release than the one installed, or another machine's
/// GPU), but a rule about what the log states explains it better.
const CONTRADICTED: f64 = 0.85;

/// How much of what is left to certainty a GPU the log names within the
/// rule's capability ranges adds: the log says the hardware the rule is
/// about.
const CAPABILITY_CONFIRMED: f64 = 0.1;

/// What each condition of a rule (a release range, a capability range)
/// the log does not confirm costs in the ranking (not in the score the
/// threshold judges): of two rules a line matches alike, the one asking
/// less of the machine is the likelier (flash-attn's `only supports Ampere
/// GPUs or newer` on a log naming no GPU: a GPU below 8.0, rather than
/// Blackwell with flash-attn before 2.8).
const UNCONFIRMED: f64 = 0.01;

/// The most causes an explanation lists.
pub const MAX_CAUSES: usize = 10;

/// The most line numbers a cause lists (a line repeated by every rank of
/// a large job is listed up to this).
pub const MAX_LINES: usize = 32;

/// A signature that did not compile, with its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {rule_id}: error_signatures[{index}]: {error}")]
pub struct SignatureError {
    /// The rule's id.
    pub rule_id: String,
    /// The signature's position in the rule's list.
    pub index: usize,
    /// What is wrong with its template.
    pub error: TemplateError,
}

/// Every rule's signatures, compiled for matching.
#[derive(Debug)]
pub struct Explainer {
    rule_ids: Vec<String>,
    signatures: Vec<Compiled>,
    /// Anchor pattern id → the signatures anchored on it.
    by_anchor: Vec<Vec<u32>>,
    automaton: Option<AhoCorasick>,
    vocabulary: Vocabulary,
    profiles: Vec<Profile>,
    /// By rule: the releases of each package it is about.
    ranges: Vec<versions::Ranges>,
    /// Every signature's message as words, for lines that retype one.
    retyped: retyped::Index,
    /// Every signature's telling words, for lines that describe one.
    described: described::Index,
    /// Signatures that did not compile (left out; the lint refuses them at
    /// publish, so only an old or foreign module has any).
    pub skipped: Vec<SignatureError>,
}

#[derive(Debug)]
struct Compiled {
    rule: u32,
    index: u32,
    signature: Signature,
    /// The vocabulary's words in the template's literal text: the match
    /// already counted them, so the context does not count them again
    /// (the holes' values, the user's own, it does count).
    literal_words: HashSet<u32>,
    /// The template says nothing but a generic symptom (`undefined symbol:
    /// {word}` with no library's path): a match is its rule's only in a
    /// log that names the rule's stack.
    bare_symptom: bool,
}

/// One rule that explains the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// The rule's position in the list the explainer was built from.
    pub rule: usize,
    /// Its id.
    pub rule_id: String,
    /// How well it explains the log, in [0, 1].
    pub score: f64,
    /// The signature that matched best, as the rule wrote it.
    pub signature: String,
    /// Its position in the rule's `error_signatures`.
    pub signature_index: usize,
    /// The signature with its holes filled by the log's own values.
    pub filled: String,
    /// The holes' kinds and values, in order.
    pub holes: Vec<(&'static str, String)>,
    /// The user's line numbers (1-based) the signature matched, first
    /// occurrence first, at most [`MAX_LINES`].
    pub lines: Vec<usize>,
    /// The matched text, normalised (no prefixes or colours).
    pub line_text: String,
    /// Whether the log names the rule's component or a package it applies
    /// to (`vllm`, `tgi`, `nccl`, ...).
    pub names_component: bool,
    /// The rule's own words (id, title, message) the rest of the log
    /// holds, a GPU's architecture among them when the log names the GPU.
    pub shared_words: Vec<String>,
    /// The line describes the signature's message in other words (an
    /// issue's title) rather than quoting it ([`described`]).
    pub described: bool,
}

/// What a log is explained by.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Explanation {
    /// The causes scoring at least [`SCORE_THRESHOLD`], best first.
    pub causes: Vec<Cause>,
    /// The lines the user's text had.
    pub lines_total: usize,
    /// The distinct lines left after normalisation.
    pub lines_distinct: usize,
}

impl Explainer {
    /// Compiles the signatures of `rules` (in the order given; a
    /// [`Cause::rule`] is a position in it).
    pub fn new<'a>(rules: impl IntoIterator<Item = &'a RuleMeta> + Clone) -> Explainer {
        let (vocabulary, profiles) = Vocabulary::build(rules.clone());
        let ranges = rules.clone().into_iter().map(versions::Ranges::of).collect();
        let mut rule_ids = Vec::new();
        let mut signatures = Vec::new();
        let mut skipped = Vec::new();
        let mut anchors: Vec<String> = Vec::new();
        let mut anchor_ids: std::collections::HashMap<String, u32> = Default::default();
        let mut by_anchor: Vec<Vec<u32>> = Vec::new();
        let mut retyped = retyped::Index::default();
        let mut described = described::Index::default();
        for (r, meta) in rules.into_iter().enumerate() {
            rule_ids.push(meta.id.clone());
            for (i, sig) in meta.error_signatures.iter().enumerate() {
                let signature = match Signature::compile(&sig.template) {
                    Ok(s) => s,
                    Err(error) => {
                        skipped.push(SignatureError { rule_id: meta.id.clone(), index: i, error });
                        continue;
                    }
                };
                let anchor = signature.anchor().to_owned();
                let next = anchors.len() as u32;
                let id = *anchor_ids.entry(anchor.clone()).or_insert(next);
                if id == next {
                    anchors.push(anchor);
                    by_anchor.push(Vec::new());
                }
                by_anchor[id as usize].push(signatures.len() as u32);
                let literal_words = vocabulary.words_in([signature.literal_text().as_str()]);
                let bare_symptom = context::is_bare_symptom(&signature.literal_text());
                retyped.add(&signature);
                described.add(r as u32, &signature);
                signatures.push(Compiled {
                    rule: r as u32,
                    index: i as u32,
                    signature,
                    literal_words,
                    bare_symptom,
                });
            }
        }
        retyped.finish();
        described.finish();
        // Standard semantics: every anchor found, overlapping ones too.
        let automaton = (!anchors.is_empty())
            .then(|| AhoCorasick::builder().match_kind(MatchKind::Standard).build(&anchors).ok())
            .flatten();
        Explainer {
            rule_ids,
            signatures,
            by_anchor,
            automaton,
            vocabulary,
            profiles,
            ranges,
            retyped,
            described,
            skipped,
        }
    }

    /// How many signatures it matches with.
    pub fn signatures(&self) -> usize {
        self.signatures.len()
    }

    /// The rules ranked by how well they explain `log`: those scoring at
    /// least [`SCORE_THRESHOLD`].
    pub fn explain(&self, log: &str) -> Explanation {
        self.explain_above(log, SCORE_THRESHOLD)
    }

    /// The rules scoring at least `threshold` (0 lists every rule a
    /// signature matched, for calibrating the threshold).
    pub fn explain_above(&self, log: &str, threshold: f64) -> Explanation {
        let mut log = normalize::normalize(log);
        let mut roles = traceback::roles(&log);
        let has_exceptions = roles.iter().any(|r| *r != Role::Other);
        let mut explanation = Explanation {
            causes: Vec::new(),
            lines_total: log.lines_total,
            lines_distinct: log.lines.len(),
        };
        // Messages a paste wrapped over two lines, read as one line after
        // the log's own (with the role of their second half, where an
        // exception's message goes on): only a match across the join counts.
        let mut joins: Vec<Option<usize>> = vec![None; log.lines.len()];
        for wrapped in normalize::wrapped(&log) {
            roles.push(roles[wrapped.second]);
            joins.push(Some(wrapped.split));
            log.lines.push(wrapped.line);
        }
        let Some(automaton) = &self.automaton else { return explanation };

        // Each rule's best match: (rule, line, match, weighted strength).
        let mut best: Vec<(u32, usize, u32, signature::LineMatch, f64)> = Vec::new();
        // Every (rule, signature, line) matched, for corroboration.
        let mut seen: Vec<(u32, u32, usize)> = Vec::new();
        let mut tried: HashSet<u32> = HashSet::new();
        let mut matched: HashSet<u32> = HashSet::new();
        let mut cells = retyped::MAX_CELLS;
        for (l, line) in log.lines.iter().enumerate() {
            tried.clear();
            matched.clear();
            // Where no line is an exception, no line is less of one.
            let role = if has_exceptions { roles[l] } else { Role::RootCause };
            let mut keep = |s: u32, m: signature::LineMatch| {
                let rule = self.signatures[s as usize].rule;
                let index = self.signatures[s as usize].index;
                if !seen.iter().any(|&(r, i, _)| r == rule && i == index) {
                    seen.push((rule, index, l));
                }
                let weighted = m.strength * role.weight();
                match best.iter_mut().find(|b| b.0 == rule) {
                    Some(b) if b.4 >= weighted => {}
                    Some(b) => *b = (rule, l, s, m, weighted),
                    None => best.push((rule, l, s, m, weighted)),
                }
            };
            let join = joins[l];
            for hit in automaton.find_overlapping_iter(line.text.as_str()) {
                for &s in &self.by_anchor[hit.pattern().as_usize()] {
                    if !tried.insert(s) {
                        continue;
                    }
                    let compiled = &self.signatures[s as usize];
                    let Some(m) = compiled.signature.match_line(&line.text) else { continue };
                    if join.is_some_and(|j| m.start >= j || m.end <= j) {
                        continue;
                    }
                    matched.insert(s);
                    keep(s, m);
                }
            }
            if join.is_some() {
                continue;
            }
            // A message typed again by hand: word by word, for signatures
            // the line did not match as written.
            let words = self.retyped.words(&line.text);
            for s in self.retyped.candidates(&words) {
                if matched.contains(&s) {
                    continue;
                }
                let compiled = &self.signatures[s as usize];
                if let Some(m) =
                    self.retyped.match_line(s, &compiled.signature, &line.text, &words, &mut cells)
                {
                    matched.insert(s);
                    keep(s, m);
                }
            }
            // A line quoting no message may describe one in other words
            // (an issue's title, an exception retold); a line that quotes
            // one is not a description of another. A bare symptom
            // (`undefined symbol: X`) quotes no rule's own message. In a log with
            // exceptions only they are read so: its other lines are
            // settings, frames and progress, full of the words messages
            // use (`max_model_len`, `attention backend`).
            let quotes = matched.iter().any(|&s| !self.signatures[s as usize].bare_symptom);
            if !quotes && role != Role::Other {
                for (s, strength) in self.described.describe(&line.text) {
                    let compiled = &self.signatures[s as usize];
                    keep(
                        s,
                        signature::LineMatch {
                            start: 0,
                            end: line.text.len(),
                            holes: Vec::new(),
                            strength,
                            literal: 0,
                            filled: compiled.signature.template.clone(),
                            described: true,
                        },
                    );
                }
            }
        }
        if best.is_empty() {
            return explanation;
        }

        let lower = log.lines.iter().map(|l| l.text.to_lowercase()).collect::<Vec<_>>().join("\n");
        let context::Read { words, capabilities } =
            self.vocabulary.read(log.lines.iter().map(|l| l.text.as_str()));
        // The GPUs the log names, parsed once for every rule's ranges.
        let gpus: Vec<Version> =
            capabilities.iter().filter_map(|cc| Version::parse(cc).ok()).collect();
        // Whether the log names each matched rule's stack, by rule.
        let named_by: HashMap<u32, f64> = best
            .iter()
            .map(|b| {
                (b.0, context::stack_named(&lower, &log.components, &self.profiles[b.0 as usize]))
            })
            .collect();
        // Each cause with the key it is ranked by.
        let mut ranked: Vec<(f64, Cause)> = Vec::with_capacity(best.len());
        for (rule, l, s, m, weighted) in &best {
            let line = &log.lines[*l];
            // A match another rule's match on the same line covers, with
            // more of its own text, says less of what failed: the more
            // exact text names the component. Not when the log names the
            // covered rule's stack and not the covering one's: then the
            // text it adds is a tool's common wording (pip's `(from
            // versions: ...)`), not the component's.
            let covers = |o: &(u32, usize, u32, signature::LineMatch, f64),
                          (r, m): (u32, &signature::LineMatch)| {
                o.1 == *l
                    && o.3.start <= m.start
                    && o.3.end >= m.end
                    && o.3.literal >= m.literal + SUBSUME_MARGIN
                    && (named_by[&o.0] > 0.0 || named_by[&r] == 0.0)
            };
            let subsumed = best.iter().any(|o| o.0 != *rule && covers(o, (*rule, m)));
            // How many rules this line is explained by: a line several
            // rules claim needs the rest of the log to pick one. A claim
            // another match covers does not count.
            let claimants = best
                .iter()
                .filter(|b| b.1 == *l && !best.iter().any(|o| o.0 != b.0 && covers(o, (b.0, &b.3))))
                .count()
                .max(1);
            let profile = &self.profiles[*rule as usize];
            let compiled = &self.signatures[*s as usize];
            let (overlap, shared_words) =
                self.vocabulary.overlap(profile, &words, &compiled.literal_words);
            let named = named_by[rule];
            // A symptom with many causes, like a message described in
            // other words, is this rule's only in a log of its stack: its
            // words alone (`gguf` in another engine's log) do not say whose.
            let symptom = m.described
                || compiled.bare_symptom
                || context::is_symptom(&line.text[m.start..m.end]);
            let ranges = &self.ranges[*rule as usize];
            // A description names the rule's hardware when the log names a
            // GPU within its capability ranges (`compute capability below
            // 7.0 ... a Tesla P4` in vLLM's tracker, where no one writes
            // "vLLM"): that says whose message it retells as well as the
            // stack's name does. A generic symptom does not get this: many
            // rules share both its text and its GPUs.
            let whose =
                if m.described && ranges.capability_confirmed_by(&gpus) { 1.0 } else { named };
            let context = if symptom && whose == 0.0 {
                0.0
            } else {
                NAMED_SHARE * whose + (1.0 - NAMED_SHARE) * overlap
            };
            let floor = if symptom {
                SYMPTOM_FLOOR
            } else if claimants > 1 {
                SHARED_FLOOR
            } else {
                UNIQUE_FLOOR
            };
            // A rule whose title's words the log lacks (a model family, a
            // GPU generation) explains it a little less than a general one.
            let coverage = self.vocabulary.title_coverage(profile, &words);
            let contradicted =
                if ranges.contradicted_by(&lower) || ranges.capability_contradicted_by(&gpus) {
                    CONTRADICTED
                } else {
                    1.0
                };
            let mut score = weighted
                * (floor + (1.0 - floor) * context)
                * (0.95 + 0.05 * coverage)
                * contradicted
                * if subsumed { SUBSUMED } else { 1.0 };
            let index = compiled.index;
            if seen.iter().any(|&(r, i, at)| r == *rule && i != index && at != *l) {
                score += (1.0 - score) * CORROBORATION;
            }
            if ranges.capability_confirmed_by(&gpus) {
                score += (1.0 - score) * CAPABILITY_CONFIRMED;
            }
            let score = score.clamp(0.0, 1.0);
            let unconfirmed = ranges.unconfirmed(&lower, &gpus) as i32;
            let rank = score * (1.0 - UNCONFIRMED).powi(unconfirmed);
            let cause = Cause {
                rule: *rule as usize,
                rule_id: self.rule_ids[*rule as usize].clone(),
                score,
                signature: compiled.signature.template.clone(),
                signature_index: compiled.index as usize,
                filled: m.filled.clone(),
                holes: m
                    .holes
                    .iter()
                    .filter(|(_, a, b)| a < b)
                    .map(|(k, a, b)| (k.name(), line.text[*a..*b].to_owned()))
                    .collect(),
                lines: line.numbers.iter().copied().take(MAX_LINES).collect(),
                line_text: line.text.clone(),
                names_component: named > 0.0,
                shared_words,
                described: m.described,
            };
            if score >= threshold {
                ranked.push((rank, cause));
            }
        }
        ranked.sort_by(|(ra, a), (rb, b)| rb.total_cmp(ra).then_with(|| a.rule_id.cmp(&b.rule_id)));
        explanation.causes = ranked.into_iter().take(MAX_CAUSES).map(|(_, c)| c).collect();
        explanation
    }
}

/// The words of `log` worth a text search when no signature matches it:
/// its exception lines (the root causes first), else its last lines, with
/// paths, numbers and addresses left out; at most [`SEARCH_WORDS`] words.
pub fn search_text(log: &str) -> String {
    let log = normalize::normalize(log);
    let roles = traceback::roles(&log);
    let mut picked: Vec<&str> = Vec::new();
    for wanted in [Role::RootCause, Role::Consequence] {
        picked.extend(
            log.lines
                .iter()
                .zip(&roles)
                .filter(|(_, r)| **r == wanted)
                .map(|(l, _)| l.text.as_str()),
        );
    }
    if picked.is_empty() {
        picked.extend(log.lines.iter().rev().take(3).map(|l| l.text.as_str()));
    }
    let mut words: Vec<&str> = Vec::new();
    for line in picked {
        for word in line.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            let telling = word.chars().count() >= 3
                && word.chars().any(char::is_alphabetic)
                && !word.starts_with("0x");
            if telling && !words.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                words.push(word);
            }
        }
    }
    words.truncate(SEARCH_WORDS);
    words.join(" ")
}

/// The most words [`search_text`] gives.
pub const SEARCH_WORDS: usize = 24;

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, title: &str, component: &str, templates: &[&str]) -> RuleMeta {
        let sigs: Vec<serde_json::Value> = templates
            .iter()
            .map(|t| serde_json::json!({ "template": t, "example": "x" }))
            .collect();
        serde_json::from_value(serde_json::json!({
            "id": id, "version": "1.0.0", "title": title, "severity": "error",
            "summary": "s", "message": title, "remedies": [], "references": [], "author": "a",
            "component": component, "error_signatures": sigs,
        }))
        .expect("a rule")
    }

    #[test]
    fn the_cause_with_the_users_values_ranks_first() {
        let rules = [
            rule(
                "bf16-needs-sm80",
                "bfloat16 needs Ampere",
                "vllm",
                &[
                    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu} GPU has compute capability {capability}.",
                ],
            ),
            rule(
                "oom",
                "weights exceed vram",
                "vllm",
                &["CUDA out of memory. Tried to allocate {number} {word}"],
            ),
        ];
        let e = Explainer::new(rules.iter());
        let log = "\u{1b}[31mERROR\u{1b}[0m 05-01 10:00:00 [core.py:1] boom\n(VllmWorker rank=0 pid=1) ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.\n(VllmWorker rank=1 pid=2) ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.\n";
        let x = e.explain(log);
        assert_eq!(x.causes.len(), 1, "{x:?}");
        let c = &x.causes[0];
        assert_eq!(c.rule_id, "bf16-needs-sm80");
        assert_eq!(c.lines, [2, 3]);
        assert_eq!(c.holes, [("gpu", "Tesla T4".to_owned()), ("capability", "7.5".to_owned())]);
        assert!(c.names_component, "the worker prefix names vLLM");
        assert!(c.score > 0.85 && c.score <= 1.0, "{}", c.score);
    }

    #[test]
    fn a_rule_about_a_stack_the_log_never_names_ranks_below_one_it_names() {
        let sig = "NCCL WARN Error while creating shared memory segment {word} (size {int})";
        let mut on_vllm = rule("on-vllm", "shm too small for tensor parallelism", "nccl", &[sig]);
        on_vllm.applies_to = vec!["package:vllm>=0.5".to_owned()];
        let plain = rule("plain", "shm too small for tensor parallelism", "nccl", &[sig]);
        let e = Explainer::new([on_vllm, plain].iter());
        let log = "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-1 (size 9637888)\n";
        let x = e.explain(log);
        let ranked: Vec<&str> = x.causes.iter().map(|c| c.rule_id.as_str()).collect();
        assert_eq!(ranked, ["plain", "on-vllm"], "the log names NCCL, never vLLM");
        let log = format!("INFO vllm serve starting\n{log}");
        let x = e.explain(&log);
        assert!((x.causes[0].score - x.causes[1].score).abs() < 1e-9, "{x:?}");
    }

    #[test]
    fn a_rule_about_one_model_family_yields_to_a_general_one_on_another_model() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory.{text}";
        let rules = [
            rule("family", "Gemma 4 E2B/E4B unquantized on a GPU under 24 GB", "vllm", &[oom]),
            rule("general", "Model weights do not fit in the GPU memory", "vllm", &[oom]),
        ];
        let e = Explainer::new(rules.iter());
        let score = |log: &str, id: &str| {
            let x = e.explain_above(log, 0.0);
            x.causes.iter().find(|c| c.rule_id == id).map(|c| c.score).unwrap_or(0.0)
        };
        let qwen = "INFO vllm model='/data/Qwen2-VL-72B-Instruct'\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.2 GiB.\n";
        assert!(score(qwen, "general") > score(qwen, "family"));
        let gemma = qwen.replace("Qwen2-VL-72B-Instruct", "google/gemma-4-E4B-it");
        assert!(score(&gemma, "family") > score(qwen, "family"), "the log names Gemma");
    }

    #[test]
    fn a_paste_whose_backticks_markdown_ate_still_matches() {
        let rules = [rule(
            "too-old",
            "transformers too old for the model type",
            "transformers",
            &[
                "ValueError: The checkpoint you are trying to load has model type `{word}` but Transformers does not recognize this architecture.",
            ],
        )];
        let e = Explainer::new(rules.iter());
        for log in [
            "ValueError: The checkpoint you are trying to load has model type `qwen3_moe` but Transformers does not recognize this architecture.",
            "`ValueError: The checkpoint you are trying to load has model type qwen3_moe but Transformers does not recognize this architecture.`",
        ] {
            let x = e.explain(log);
            assert_eq!(x.causes.len(), 1, "{log}");
            assert_eq!(x.causes[0].holes, [("word", "qwen3_moe".to_owned())]);
        }
    }

    #[test]
    fn the_more_exact_match_on_a_line_names_the_component() {
        let rules = [
            rule(
                "bare",
                "kernel image missing",
                "torch",
                &["CUDA error: no kernel image is available for execution on the device"],
            ),
            rule(
                "flashinfer",
                "flashinfer wheel lacks the GPU",
                "flashinfer",
                &[
                    "CUDA Error: no kernel image is available for execution on the device (209) {path}: line {int} at function {text}",
                ],
            ),
        ];
        let e = Explainer::new(rules.iter());
        let log = "CUDA Error: no kernel image is available for execution on the device (209) /tmp/b/include/flashinfer/attention/handler.cuh: line 169 at function cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel)\n";
        let x = e.explain_above(log, 0.0);
        let ranked: Vec<&str> = x.causes.iter().map(|c| c.rule_id.as_str()).collect();
        assert_eq!(ranked, ["flashinfer", "bare"], "{x:?}");
    }

    #[test]
    fn a_tools_longer_wording_does_not_outrank_the_component_the_log_names() {
        let rules = [
            rule(
                "python-floor",
                "no release for this Python",
                "python",
                &[
                    "ERROR: Could not find a version that satisfies the requirement {text} (from versions: {text})",
                ],
            ),
            rule(
                "transformers-floor",
                "transformers needs a newer Python",
                "transformers",
                &["ERROR: Could not find a version that satisfies the requirement {text}"],
            ),
        ];
        let e = Explainer::new(rules.iter());
        let log = "ERROR: Could not find a version that satisfies the requirement transformers==4.26.1 (from versions: 4.17.0, 4.18.0)\n";
        let x = e.explain_above(log, 0.0);
        let ranked: Vec<&str> = x.causes.iter().map(|c| c.rule_id.as_str()).collect();
        assert_eq!(ranked, ["transformers-floor", "python-floor"], "{x:?}");
    }

    #[test]
    fn a_second_signature_of_a_rule_on_another_line_corroborates_it() {
        let incompatible = "{gpu} with CUDA capability sm_{int} is not compatible with the current PyTorch installation.";
        let rules = [
            rule("one-line", "PyTorch build lacks the GPU", "torch", &[incompatible]),
            rule(
                "two-lines",
                "PyTorch build lacks the GPU",
                "torch",
                &[incompatible, "The current PyTorch install supports CUDA capabilities {text}."],
            ),
        ];
        let e = Explainer::new(rules.iter());
        let log = "GeForce GTX 1070 Ti with CUDA capability sm_61 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_70 sm_80 sm_86.\n";
        let x = e.explain_above(log, 0.0);
        assert_eq!(x.causes[0].rule_id, "two-lines", "{x:?}");
        assert!(x.causes[0].score > x.causes[1].score);
    }

    #[test]
    fn a_rule_about_other_gpus_than_the_log_names_ranks_lower() {
        let sig = "CUDA error: no kernel image is available for execution on the device";
        let mut old = rule("old-gpus", "kernel image missing", "torch", &[sig]);
        old.applies_to = vec!["capability:<7.5".to_owned()];
        let mut new = rule("new-gpus", "kernel image missing", "torch", &[sig]);
        new.applies_to = vec!["capability:>=8.0".to_owned()];
        let e = Explainer::new([old, new].iter());
        let score = |log: &str, id: &str| {
            let x = e.explain_above(log, 0.0);
            x.causes.iter().find(|c| c.rule_id == id).map(|c| c.score).unwrap_or(0.0)
        };
        let a800 = "same error on A800\nCUDA error: no kernel image is available for execution on the device\n";
        assert!(score(a800, "new-gpus") > score(a800, "old-gpus"));
        let unnamed = "CUDA error: no kernel image is available for execution on the device\n";
        assert!((score(unnamed, "new-gpus") - score(unnamed, "old-gpus")).abs() < 1e-9);
    }

    #[test]
    fn naming_the_stack_weighs_more_than_a_rules_words() {
        let triton = "RuntimeError: Found {gpu} which is too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0";
        let mut vllm =
            rule("vllm-sm70", "vLLM does not run on Pascal and older GPUs", "vllm", &[triton]);
        vllm.applies_to = vec!["package:vllm".to_owned()];
        let mut compile =
            rule("compile-sm70", "torch.compile fails below 7.0", "triton", &[triton]);
        compile.applies_to = vec!["package:torch".to_owned()];
        let e = Explainer::new([vllm, compile].iter());
        let log = "  File \"/x/torch/_inductor/scheduler.py\", line 2, in f\nRuntimeError: Found NVIDIA GeForce GTX 1080 which is too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1\n";
        let x = e.explain_above(log, 0.0);
        assert_eq!(x.causes[0].rule_id, "compile-sm70", "{x:?}");
    }

    #[test]
    fn a_title_describing_a_message_names_the_rule_of_the_stack_it_names() {
        let sig =
            "RuntimeError: CUDA error: no kernel image is available for execution on the device";
        let mut vllm = rule("vllm-sm70", "vLLM needs compute capability 7.0", "vllm", &[sig]);
        vllm.applies_to = vec!["package:vllm".to_owned(), "capability:<7.0".to_owned()];
        let other = rule(
            "oom",
            "weights exceed vram",
            "vllm",
            &["CUDA out of memory. Tried to allocate {number} {word}"],
        );
        let e = Explainer::new([vllm, other].iter());
        let title =
            "CUDA kernel image not available for GTX 1080 Ti using pip-installed vLLM 0.9.1";
        let x = e.explain_above(title, 0.0);
        assert_eq!(x.causes.len(), 1, "{x:?}");
        assert!(x.causes[0].described, "{x:?}");
        // Without the stack named, a description is not this rule's.
        let unnamed = "kernel image not available on my card, CUDA says";
        let x = e.explain(unnamed);
        assert!(x.causes.is_empty(), "{x:?}");
        // A line quoting the message is a quote, not a description.
        let quoted = format!("vllm serve\n{sig}\n");
        let x = e.explain(&quoted);
        assert!(!x.causes[0].described && x.causes[0].score > 0.8, "{x:?}");
    }

    #[test]
    fn a_message_the_paste_wrapped_is_matched_across_the_two_lines() {
        let sig = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: {int}, Hardware limit: {int}.";
        let e = Explainer::new(
            [rule("smem", "Triton kernel needs more shared memory", "triton", &[sig])].iter(),
        );
        let wrapped = "vllm serve google/gemma-4\ntriton.runtime.errors.OutOfResources: out of resource: shared memory,\nRequired: 98304, Hardware limit: 65536.\n";
        let x = e.explain(wrapped);
        assert_eq!(x.causes.len(), 1, "{x:?}");
        assert_eq!(x.causes[0].lines, [2, 3]);
        assert_eq!(x.causes[0].holes, [("int", "98304".to_owned()), ("int", "65536".to_owned())]);
        // A sentence that ended is not continued by the next line.
        let ended = "triton.runtime.errors.OutOfResources: out of resource: shared memory.\nRequired: 98304, Hardware limit: 65536.\n";
        assert!(e.explain(ended).causes.is_empty());
    }

    #[test]
    fn an_undefined_symbol_without_its_path_is_the_extension_the_log_names() {
        let rules = [
            rule(
                "sgl-abi",
                "sgl-kernel built for another torch",
                "sglang",
                &[
                    "ImportError: {path}/sgl_kernel/common_ops.abi3.so: undefined symbol: {word}",
                    "undefined symbol: {word}",
                ],
            ),
            rule(
                "vllm-abi",
                "vLLM built for another torch",
                "vllm",
                &[
                    "ImportError: {path}/vllm/_C.abi3.so: undefined symbol: {word}",
                    "undefined symbol: {word}",
                ],
            ),
        ];
        let e = Explainer::new(rules.iter());
        // The paste put the symbol on the line after the loader's label.
        let named = "when using sglang, importing sgl-kernel it will report:\nundefined symbol:\nc10::cuda::c10_cuda_check_implementation(int, char const*)\n";
        let x = e.explain(named);
        assert_eq!(x.causes.first().map(|c| c.rule_id.as_str()), Some("sgl-abi"), "{x:?}");
        assert_eq!(x.causes[0].lines, [2, 3]);
        assert!(x.causes.iter().all(|c| c.rule_id != "vllm-abi"), "{x:?}");
        // Naming no extension, the symbol says no one's.
        let bare = e.explain("undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSs\n");
        assert!(bare.causes.is_empty(), "{bare:?}");
        // With its path, the message is the extension's own.
        let path = e.explain(
            "ImportError: /usr/lib/python3/vllm/_C.abi3.so: undefined symbol: _ZN3c106detail19maybe_wrap_dim_slowEllb\n",
        );
        assert_eq!(path.causes.first().map(|c| c.rule_id.as_str()), Some("vllm-abi"), "{path:?}");
    }

    #[test]
    fn a_container_rule_is_named_by_a_docker_run() {
        let sig = "Illegal instruction (core dumped)";
        let mut image = rule("image-needs-avx", "image needs AVX", "hardware", &[sig]);
        // x86_64, which few logs name, is not asked of the log.
        image.applies_to = vec!["arch:x86_64".to_owned(), "container".to_owned()];
        let mut arm = rule("arm-flags", "binary uses newer Arm flags", "hardware", &[sig]);
        arm.applies_to = vec!["arch:aarch64".to_owned()];
        let e = Explainer::new([image, arm].iter());
        // A symptom with many causes: nothing named, nothing above the threshold.
        assert!(e.explain(sig).causes.is_empty());
        let x = e.explain_above(&format!("$ sudo docker run -it my-image\n{sig}\n"), 0.0);
        assert_eq!(x.causes[0].rule_id, "image-needs-avx", "{x:?}");
        assert!(x.causes[0].names_component && !x.causes[1].names_component, "{x:?}");
    }

    #[test]
    fn the_kernels_invalid_opcode_line_is_a_symptom_like_the_shells() {
        let sig = "{word}[{int}] trap invalid opcode ip:{word} sp:{word} error:{word} in {text}";
        let mut image = rule("image-needs-avx", "image needs AVX", "hardware", &[sig]);
        image.applies_to = vec!["arch:x86_64".to_owned(), "container".to_owned()];
        let e = Explainer::new([image].iter());
        let trap = "[18262.690086] traps: python3[135514] trap invalid opcode ip:7065e0b0a751 \
                    sp:7ffef1bd82c0 error:0 in _C.abi3.so[7065e0a88000+12f0000]";
        assert!(e.explain(trap).causes.is_empty(), "alone it names no cause");
        let x = e.explain(&format!("$ docker run --rm vllm-cpu:v0.8.5\n{trap}\n"));
        assert_eq!(x.causes.len(), 1, "{x:?}");
        assert_eq!(x.causes[0].lines, [2]);
    }

    #[test]
    fn a_description_naming_a_gpu_in_the_rules_range_is_the_rules() {
        let sig = "RuntimeError: GPUs with compute capability less than 7.0 are not supported.";
        let mut vllm = rule("vllm-sm70", "vLLM needs compute capability 7.0", "vllm", &[sig]);
        vllm.applies_to = vec!["package:vllm".to_owned(), "capability:<7.0".to_owned()];
        let e = Explainer::new([vllm].iter());
        let title = "Why are GPUs with compute capability below 7.0 not supported?";
        // Neither the stack nor the hardware named: not this rule's.
        assert!(e.explain(title).causes.is_empty());
        // A GPU below 7.0 named: the hardware says whose message it retells.
        let x = e.explain(&format!("{title}\nIs there any chance of it working on a Tesla P4?"));
        assert_eq!(x.causes.len(), 1, "{x:?}");
        assert!(x.causes[0].described && !x.causes[0].names_component, "{x:?}");
        // A GPU outside the range does not.
        let x = e.explain(&format!("{title}\nI have an A100."));
        assert!(x.causes.is_empty(), "{x:?}");
    }

    #[test]
    fn a_gpu_the_log_names_in_the_rules_range_raises_it() {
        let sig = "CUDA error: no kernel image is available for execution on the device";
        let mut old = rule("old-gpus", "kernel image missing", "torch", &[sig]);
        old.applies_to = vec!["capability:<7.0".to_owned()];
        let plain = rule("plain", "kernel image missing", "torch", &[sig]);
        let e = Explainer::new([old, plain].iter());
        let score = |log: &str, id: &str| {
            let x = e.explain_above(log, 0.0);
            x.causes.iter().find(|c| c.rule_id == id).map(|c| c.score).unwrap_or(0.0)
        };
        let pascal = "on a GTX 1080 Ti\nCUDA error: no kernel image is available for execution on the device\n";
        assert!(score(pascal, "old-gpus") > score(pascal, "plain"));
    }

    #[test]
    fn of_two_rules_a_line_matches_alike_the_one_asking_less_ranks_first() {
        let sig = "RuntimeError: FlashAttention only supports Ampere GPUs or newer.";
        let mut blackwell = rule("a-blackwell", "FlashAttention", "flash-attn", &[sig]);
        blackwell.applies_to =
            vec!["package:flash-attn<2.8.0".to_owned(), "capability:>=10.0".to_owned()];
        let mut old = rule("b-old", "FlashAttention", "flash-attn", &[sig]);
        old.applies_to = vec!["capability:<8.0".to_owned()];
        let e = Explainer::new([blackwell, old].iter());
        let x = e.explain(sig);
        let ranked: Vec<&str> = x.causes.iter().map(|c| c.rule_id.as_str()).collect();
        assert_eq!(ranked, ["b-old", "a-blackwell"], "{x:?}");
        assert!(
            (x.causes[0].score - x.causes[1].score).abs() < 1e-9,
            "the score is the evidence's"
        );
        // A log naming an RTX 5090 and flash-attn 2.7.4 confirms the other.
        let log = format!("flash_attn-2.7.4 on NVIDIA GeForce RTX 5090\n{sig}\n");
        let x = e.explain(&log);
        assert_eq!(x.causes[0].rule_id, "a-blackwell", "{x:?}");
    }

    #[test]
    fn search_text_takes_the_exception_lines() {
        let log = "INFO starting\nTraceback (most recent call last):\n  File \"/x/y.py\", line 3, in f\nOSError: libfoo.so.1: cannot open shared object file 0x7f\n";
        assert_eq!(search_text(log), "OSError libfoo cannot open shared object file");
        assert_eq!(search_text("just a line"), "just line");
    }

    #[test]
    fn nothing_matches_an_unrelated_log() {
        let rules = [rule(
            "oom",
            "weights exceed vram",
            "vllm",
            &["CUDA out of memory. Tried to allocate {number} {word}"],
        )];
        let e = Explainer::new(rules.iter());
        assert!(e.explain("SyntaxError: invalid syntax\n").causes.is_empty());
        assert!(e.explain("").causes.is_empty());
    }
}
