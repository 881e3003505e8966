//! Messages a person typed again instead of copying: a word added, one
//! dropped or changed, punctuation lost (`GPU with CUDA is capability 7 0
//! is not supported` for TGI's `GPU with CUDA capability 7 0 is not
//! supported`). The exact matcher ([`crate::signature`]) finds none of
//! these, since its anchor is a run of characters.
//!
//! Both a signature's message and a line are read as words; a line is a
//! candidate for a signature when it holds two of the signature's word
//! pairs (an index over every signature's pairs, so the cost follows the
//! line, not the number of rules), and then the two word sequences are
//! aligned with the holes taking the user's values. A match is accepted
//! only when nearly every word of the message is there in order: a long
//! message may differ by a word in eight, a short one by one word, and at
//! least [`MIN_WORDS`] words must agree. Each difference costs strength.

use std::collections::HashMap;

use pitfall_contract::template::{HoleKind, Segment};

use crate::signature::{LineMatch, Signature};

/// The fewest message words a retyped match must share with the template:
/// fewer is a phrase many messages have.
const MIN_WORDS: usize = 5;

/// A shorter message is retyped-matched only when one of its words is a
/// code identifier (`ncclCommRegister`, `libcudart.so.12`), and then only
/// whole and word for word: a title quoting `undefined symbol
/// ncclCommRegister` without its colon. This many words at least.
const MIN_SHORT_WORDS: usize = 3;

/// A retyped match may differ by one word in this many (at least one).
const WORDS_PER_EDIT: usize = 8;

/// What each difference leaves of a match's strength.
const PER_EDIT: f64 = 0.9;

/// What a match word for word, punctuation apart, is worth beside a
/// verbatim one.
const NOT_VERBATIM: f64 = 0.95;

/// The most words of one line aligned (a longer line is read up to here).
const MAX_LINE_WORDS: usize = 400;

/// The most signatures one line is aligned with, those sharing the most
/// word pairs first.
const MAX_CANDIDATES: usize = 8;

/// A word pair more signatures than this have (`is not`, `of the`) finds
/// nothing: it is left out of the index, so a line's cost does not grow
/// with the registry.
const MAX_PAIR_SIGNATURES: usize = 32;

/// The most alignment cells one log may cost (a hostile log of long lines
/// each holding many signatures' pairs stops being read here).
pub const MAX_CELLS: usize = 4_000_000;

/// A word no template has.
const UNKNOWN: u32 = u32::MAX;

/// One unit of a template's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A word (its id in [`Index::words`]) and its length in bytes.
    Word(u32, usize),
    /// A hole, taking some of the line's words.
    Hole(HoleKind),
}

/// Every signature's message as words, and the word pairs that find them.
#[derive(Debug, Default)]
pub struct Index {
    words: HashMap<String, u32>,
    /// By signature: its message's tokens (empty: never retyped-matched).
    tokens: Vec<Vec<Token>>,
    /// Two adjacent message words → the signatures that have them.
    pairs: HashMap<(u32, u32), Vec<u32>>,
    /// By signature: how many of the line's pairs make it a candidate.
    needed: Vec<usize>,
}

/// A line read as words.
#[derive(Debug, Default)]
pub struct Words {
    /// Each word's byte range in the line.
    spans: Vec<(usize, usize)>,
    /// Each word's id in the index ([`UNKNOWN`] when no template has it).
    ids: Vec<u32>,
}

impl Index {
    /// Adds the next signature (its position is the count added so far).
    pub fn add(&mut self, signature: &Signature) {
        let mut tokens = Vec::new();
        let mut identifier = false;
        for (i, segment) in signature.segments().iter().enumerate() {
            match segment {
                Segment::Literal(l) => {
                    let text = if i == 0 { &l[signature.core_start()..] } else { l.as_str() };
                    for (a, b) in word_spans(text) {
                        identifier |= is_identifier(&text[a..b]);
                        let word = text[a..b].to_lowercase();
                        let next = self.words.len() as u32;
                        let id = *self.words.entry(word).or_insert(next);
                        tokens.push(Token::Word(id, b - a));
                    }
                }
                Segment::Hole(kind) => tokens.push(Token::Hole(*kind)),
            }
        }
        let literal = tokens.iter().filter(|t| matches!(t, Token::Word(..))).count();
        let s = self.tokens.len() as u32;
        if literal >= MIN_WORDS || (literal >= MIN_SHORT_WORDS && identifier) {
            for pair in tokens.windows(2) {
                if let [Token::Word(a, _), Token::Word(b, _)] = pair {
                    let list = self.pairs.entry((*a, *b)).or_default();
                    if list.last() != Some(&s) {
                        list.push(s);
                    }
                }
            }
        } else {
            tokens.clear();
        }
        self.tokens.push(tokens);
    }

    /// Drops the pairs too common to tell messages apart, and sets how
    /// many pairs each signature needs: half of its telling ones, at least
    /// two (a match keeps all but a word in eight, so it keeps most pairs).
    pub fn finish(&mut self) {
        self.pairs.retain(|_, signatures| signatures.len() <= MAX_PAIR_SIGNATURES);
        let mut telling = vec![0usize; self.tokens.len()];
        for signatures in self.pairs.values() {
            for &s in signatures {
                telling[s as usize] += 1;
            }
        }
        self.needed = telling.iter().map(|&t| (t / 2).max(2)).collect();
    }

    /// `line` as words, each looked up.
    pub fn words(&self, line: &str) -> Words {
        let mut out = Words::default();
        let mut lower = String::new();
        for (a, b) in word_spans(line).take(MAX_LINE_WORDS) {
            lower.clear();
            let word = &line[a..b];
            if word.is_ascii() {
                lower.push_str(word);
                lower.make_ascii_lowercase();
            } else {
                lower.extend(word.chars().flat_map(char::to_lowercase));
            }
            out.spans.push((a, b));
            out.ids.push(self.words.get(lower.as_str()).copied().unwrap_or(UNKNOWN));
        }
        out
    }

    /// The signatures `words` holds two word pairs of, most pairs first.
    pub fn candidates(&self, words: &Words) -> Vec<u32> {
        // Distinct pairs: a line repeating one pair is one hit.
        let mut pairs: Vec<(u32, u32)> = words
            .ids
            .windows(2)
            .filter(|p| p[0] != UNKNOWN && p[1] != UNKNOWN)
            .map(|p| (p[0], p[1]))
            .collect();
        if pairs.len() < 2 {
            return Vec::new();
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut hits: Vec<u32> = Vec::new();
        for pair in &pairs {
            if let Some(signatures) = self.pairs.get(pair) {
                hits.extend_from_slice(signatures);
            }
        }
        hits.sort_unstable();
        let mut found: Vec<(u32, usize)> = Vec::new();
        for group in hits.chunk_by(|a, b| a == b) {
            let s = group[0];
            if group.len() >= self.needed.get(s as usize).copied().unwrap_or(2) {
                found.push((s, group.len()));
            }
        }
        found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        found.into_iter().take(MAX_CANDIDATES).map(|(s, _)| s).collect()
    }

    /// Signature `s` (`signature`) matched on `line` as a person may have
    /// retyped it.
    pub fn match_line(
        &self,
        s: u32,
        signature: &Signature,
        line: &str,
        words: &Words,
        cells: &mut usize,
    ) -> Option<LineMatch> {
        let tokens = self.tokens.get(s as usize)?;
        let cost = (tokens.len() + 1) * (words.ids.len() + 1);
        if cost > *cells {
            return None;
        }
        *cells -= cost;
        let alignment = align(tokens, line, words)?;
        let literal = tokens.iter().filter(|t| matches!(t, Token::Word(..))).count();
        let allowed = (literal / WORDS_PER_EDIT).max(1);
        // Values left out (`heads must be divisible by tensor parallel
        // size`, the numbers dropped) cost strength but are no changed
        // word when every word of the message is there as written.
        let left_out =
            alignment.holes.iter().filter(|(k, a, b)| *k != HoleKind::Text && a == b).count();
        let words_edited = alignment.edits.saturating_sub(left_out);
        let differences = if words_edited == 0 { 0 } else { alignment.edits };
        // A message shorter than MIN_WORDS (indexed for naming code) is
        // matched only whole, word for word.
        if literal < MIN_WORDS {
            if alignment.matched < literal || words_edited > 0 {
                return None;
            }
        } else if alignment.matched < MIN_WORDS
            || alignment.matched * 5 < literal * 4
            || differences > allowed
        {
            return None;
        }
        let typed = alignment.holes.iter().filter(|(k, a, b)| *k != HoleKind::Text && a < b);
        let said = alignment.matched_bytes as f64 + 6.0 * typed.count() as f64;
        let information = 1.0 - (-said / 18.0).exp();
        let completeness = alignment.matched as f64 / literal as f64;
        let strength = information
            * completeness.sqrt()
            * NOT_VERBATIM
            * PER_EDIT.powi(alignment.edits as i32);
        let filled = signature.fill(line, signature.core_start(), &alignment.holes);
        Some(LineMatch {
            start: alignment.start,
            end: alignment.end,
            holes: alignment.holes,
            strength,
            literal: alignment.matched_bytes,
            filled,
            described: false,
        })
    }
}

/// The best alignment of a message's tokens with a line's words.
#[derive(Debug)]
struct Alignment {
    /// Message words found, in order.
    matched: usize,
    /// Their bytes.
    matched_bytes: usize,
    /// Words added, dropped or changed; holes left empty.
    edits: usize,
    /// Each hole's kind and byte range (empty when left out).
    holes: Vec<(HoleKind, usize, usize)>,
    start: usize,
    end: usize,
}

/// How a cell of the alignment was reached.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The match starts here, the message's tokens before it left out.
    Start,
    /// A message word, the same in the line.
    Word,
    /// A line word inside the message that the message does not have.
    Added,
    /// A hole taking this many line words (0: left empty).
    Hole(usize),
}

/// What leaving a token out costs: a word or a typed hole is a
/// difference; `{text}` may be empty anyway.
fn dropped(token: &Token) -> u16 {
    match token {
        Token::Hole(HoleKind::Text) => 0,
        _ => 1,
    }
}

/// The fewest differences aligning `tokens` with a stretch of `words`,
/// the line free to say more before and after. Inside the match the line
/// may add words but not change or drop one: a changed word is most often
/// the one that tells two messages apart (`Ampere`/`Hopper`, the package
/// a requirement names), so only the message's ends may be missing, as in
/// a paste cut or a class name left off.
fn align(tokens: &[Token], line: &str, words: &Words) -> Option<Alignment> {
    let (m, n) = (tokens.len(), words.ids.len());
    if m == 0 || n == 0 {
        return None;
    }
    const FAR: u16 = u16::MAX;
    let at = |i: usize, j: usize| i * (n + 1) + j;
    let mut cost = vec![FAR; (m + 1) * (n + 1)];
    let mut step = vec![Step::Start; (m + 1) * (n + 1)];
    // A match may begin at any token, those before it left out.
    let mut before = 0u16;
    for i in 0..m {
        for j in 0..n {
            cost[at(i, j)] = before;
        }
        before += dropped(&tokens[i]);
    }
    let relax = |cost: &mut Vec<u16>, step: &mut Vec<Step>, cell: usize, c: u16, s: Step| {
        if c < cost[cell] {
            cost[cell] = c;
            step[cell] = s;
        }
    };
    for i in 0..m {
        for j in 0..=n {
            let here = cost[at(i, j)];
            if here == FAR {
                continue;
            }
            // A word the message does not have, once the match has begun.
            if j < n && !matches!(step[at(i, j)], Step::Start) {
                relax(&mut cost, &mut step, at(i, j + 1), here + 1, Step::Added);
            }
            match tokens[i] {
                Token::Word(id, _) => {
                    if j < n && words.ids[j] == id {
                        relax(&mut cost, &mut step, at(i + 1, j + 1), here, Step::Word);
                    }
                }
                Token::Hole(kind) => {
                    let most = match kind {
                        HoleKind::Text => n - j,
                        HoleKind::Int | HoleKind::Number | HoleKind::Hex => 1,
                        HoleKind::Capability => 2,
                        HoleKind::Version => 3,
                        HoleKind::Word => 4,
                        HoleKind::Gpu => 6,
                        HoleKind::Path => 12,
                    };
                    // Left empty: `{text}` may be; a typed hole is a
                    // difference.
                    let empty = here + dropped(&tokens[i]);
                    relax(&mut cost, &mut step, at(i + 1, j), empty, Step::Hole(0));
                    for taken in 1..=most.min(n - j) {
                        let value = &line[words.spans[j].0..words.spans[j + taken - 1].1];
                        if kind.accepts(value) {
                            let cell = at(i + 1, j + taken);
                            relax(&mut cost, &mut step, cell, here, Step::Hole(taken));
                        }
                    }
                }
            }
        }
    }
    // A match may end at any token, those after it left out.
    let mut after = vec![0u16; m + 1];
    for i in (0..m).rev() {
        after[i] = after[i + 1] + dropped(&tokens[i]);
    }
    let (end_token, end_word, edits) = (1..=m)
        .flat_map(|i| (1..=n).map(move |j| (i, j)))
        .filter(|&(i, j)| cost[at(i, j)] != FAR && !matches!(step[at(i, j)], Step::Start))
        .map(|(i, j)| (i, j, cost[at(i, j)].saturating_add(after[i])))
        .min_by_key(|&(i, j, c)| (c, std::cmp::Reverse(i), j))?;
    let mut alignment = Alignment {
        matched: 0,
        matched_bytes: 0,
        edits: edits as usize,
        holes: Vec::new(),
        start: 0,
        end: 0,
    };
    // The holes after the end were left out.
    for token in tokens[end_token..].iter().rev() {
        if let Token::Hole(kind) = token {
            alignment.holes.push((*kind, 0, 0));
        }
    }
    // Walk back from the end to read what the alignment took.
    let (mut i, mut j) = (end_token, end_word);
    let (mut first, mut last) = (None::<usize>, None::<usize>);
    let mut took = |j: usize| {
        first = Some(j);
        last = last.or(Some(j));
    };
    while i > 0 {
        match step[at(i, j)] {
            Step::Start => break,
            Step::Word => {
                alignment.matched += 1;
                if let Token::Word(_, len) = tokens[i - 1] {
                    alignment.matched_bytes += len;
                }
                took(j - 1);
                i -= 1;
                j -= 1;
            }
            Step::Added => j -= 1,
            Step::Hole(taken) => {
                let Token::Hole(kind) = tokens[i - 1] else { return None };
                if taken == 0 {
                    alignment.holes.push((kind, 0, 0));
                } else {
                    alignment.holes.push((kind, words.spans[j - taken].0, words.spans[j - 1].1));
                    took(j - 1);
                    took(j - taken);
                }
                i -= 1;
                j -= taken;
            }
        }
    }
    // The holes before the start were left out.
    for token in tokens[..i].iter().rev() {
        if let Token::Hole(kind) = token {
            alignment.holes.push((*kind, 0, 0));
        }
    }
    alignment.holes.reverse();
    alignment.start = words.spans[first?].0;
    alignment.end = words.spans[last?].1;
    Some(alignment)
}

/// Whether a message word is a name from code rather than prose: a
/// camelCase name (not an exception class's `...Error`), a library file
/// (`libcudart.so`), or letters and digits together, eight bytes or more.
fn is_identifier(word: &str) -> bool {
    if word.len() < 8 || word.ends_with("Error") || word.ends_with("Exception") {
        return false;
    }
    let b = word.as_bytes();
    let camel = b.windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    let dotted = b
        .windows(3)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'.' && w[2].is_ascii_alphabetic());
    let letters_and_digits =
        b.iter().any(u8::is_ascii_alphabetic) && b.iter().any(u8::is_ascii_digit);
    camel || dotted || letters_and_digits
}

/// The words of `text`: runs of letters, digits and dots, without the dots
/// at either end (`7.5` and `libcudart.so.12` are one word each; `80.` is
/// `80`).
fn word_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        loop {
            let (start, c) = rest.next()?;
            if !(c.is_alphanumeric() || c == '.') {
                continue;
            }
            let mut end = start + c.len_utf8();
            while let Some(&(i, c)) = rest.peek() {
                if !(c.is_alphanumeric() || c == '.') {
                    break;
                }
                end = i + c.len_utf8();
                rest.next();
            }
            let word = &text[start..end];
            let trimmed = word.trim_matches('.');
            if trimmed.is_empty() {
                continue;
            }
            let a = start + (word.len() - word.trim_start_matches('.').len());
            return Some((a, a + trimmed.len()));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(templates: &[&str]) -> (Index, Vec<Signature>) {
        let mut index = Index::default();
        let signatures: Vec<Signature> =
            templates.iter().map(|t| Signature::compile(t).expect("compiles")).collect();
        for s in &signatures {
            index.add(s);
        }
        index.finish();
        (index, signatures)
    }

    fn retyped(templates: &[&str], line: &str) -> Option<(u32, LineMatch)> {
        let (index, signatures) = index(templates);
        let words = index.words(line);
        index.candidates(&words).into_iter().find_map(|s| {
            let mut cells = MAX_CELLS;
            index.match_line(s, &signatures[s as usize], line, &words, &mut cells).map(|m| (s, m))
        })
    }

    #[test]
    fn words_are_letters_digits_and_inner_dots() {
        let text = "Min capability: 80. Your Tesla T4 (7.5) has libcudart.so.12 ...";
        let words: Vec<&str> = word_spans(text).map(|(a, b)| &text[a..b]).collect();
        assert_eq!(
            words,
            ["Min", "capability", "80", "Your", "Tesla", "T4", "7.5", "has", "libcudart.so.12"]
        );
    }

    #[test]
    fn a_word_added_by_hand_still_matches_with_the_users_values() {
        let template = "GPU with CUDA capability {int} {int} is not supported";
        let (_, m) = retyped(&[template], "GPU with CUDA is capability 7 0 is not supported")
            .expect("retyped");
        assert_eq!(m.filled, "GPU with CUDA capability 7 0 is not supported");
        assert_eq!(m.holes.iter().map(|h| (h.1, h.2)).collect::<Vec<_>>(), [(28, 29), (30, 31)]);
        let exact = Signature::compile(template)
            .expect("compiles")
            .match_line("GPU with CUDA capability 7 0 is not supported")
            .expect("exact");
        assert!(m.strength < exact.strength, "{} vs {}", m.strength, exact.strength);
        assert!(m.strength > 0.75, "{}", m.strength);
    }

    #[test]
    fn values_left_out_of_a_quoted_message_still_match_it() {
        let heads = "ValueError: Total number of attention heads ({int}) must be divisible by tensor parallel size ({int}).";
        let (_, m) = retyped(
            &[heads],
            "Total number of attention heads must be divisible by tensor parallel size",
        )
        .expect("every word is there");
        let (_, whole) = retyped(
            &[heads],
            "Total number of attention heads (40) must be divisible by tensor parallel size (3)",
        )
        .expect("whole");
        assert!(m.strength < whole.strength, "{} vs {}", m.strength, whole.strength);
    }

    #[test]
    fn a_short_message_naming_code_matches_whole_without_its_punctuation() {
        let symbol = "{path}: undefined symbol: ncclCommRegister";
        let (_, m) = retyped(&[symbol], "undefined symbol ncclCommRegister").expect("retyped");
        assert_eq!(
            &"undefined symbol ncclCommRegister"[m.start..m.end],
            "undefined symbol ncclCommRegister"
        );
        assert!(
            retyped(&[symbol], "undefined symbol in ncclCommRegister").is_none(),
            "a word added"
        );
        assert!(retyped(&[symbol], "undefined symbol ncclCommDestroy").is_none(), "another symbol");
        let prose = "ValueError: Architecture {word} not supported";
        assert!(retyped(&[prose], "Architecture is not supported").is_none(), "no code name");
        assert!(retyped(&[prose], "Architecture qwen3 not supported").is_none(), "no code name");
    }

    #[test]
    fn a_changed_or_dropped_word_inside_the_message_refuses() {
        let ampere = "RuntimeError: FlashAttention only supports Ampere GPUs or newer.";
        assert!(
            retyped(&[ampere], "RuntimeError: FlashAttention only supports Hopper GPUs or newer.")
                .is_none()
        );
        let bf16 = "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu} GPU has compute capability {capability}.";
        let line = "Bfloat16 is supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5";
        assert!(retyped(&[bf16], line).is_none(), "the dropped word may be the telling one");
        let pip = "ERROR: Could not find a version that satisfies the requirement vllm=={version}";
        let line = "ERROR: Could not find a version that satisfies the requirement torch==2.1.2";
        assert!(retyped(&[pip], line).is_none(), "another package");
        let short = "CUDA driver version is insufficient for CUDA runtime version";
        assert!(
            retyped(&[short], "CUDA driver version insufficient for the CUDA runtime").is_none()
        );
        let (_, m) = retyped(
            &[short],
            "CUDA driver version is really insufficient for CUDA runtime version",
        )
        .expect("one word added of nine");
        assert_eq!(m.filled, short);
    }

    #[test]
    fn the_ends_of_the_message_may_be_missing() {
        let template = "RuntimeError: torch.compile is not supported on Python 3.12+";
        let (_, m) = retyped(&[template], "RuntimeError: Dynamo is not supported on Python 3.12+")
            .expect("the subject left off");
        assert!(m.strength < 0.8, "{}", m.strength);
    }

    #[test]
    fn a_common_phrase_is_not_a_message() {
        let template = "GPU with CUDA capability {int} {int} is not supported";
        for line in [
            "this option is not supported on this GPU",
            "ValueError: dtype float8 is not supported with CUDA graphs",
            "GPU 0 with CUDA: all good, version 12 is supported",
        ] {
            assert!(retyped(&[template], line).is_none(), "{line}");
        }
    }

    #[test]
    fn a_hostile_line_is_read_up_to_a_bound() {
        let (index, _) = index(&["one two three four five six {text}"]);
        let line = "one two ".repeat(10_000);
        let words = index.words(&line);
        assert_eq!(words.ids.len(), MAX_LINE_WORDS);
        assert_eq!(index.candidates(&words), Vec::<u32>::new(), "one distinct pair is one hit");
    }

    #[test]
    fn a_pair_many_signatures_share_finds_none_of_them() {
        let templates: Vec<String> = (0..40)
            .map(|i| format!("shared words here now then unique{i} token{i} {{int}}"))
            .collect();
        let templates: Vec<&str> = templates.iter().map(String::as_str).collect();
        let (index, signatures) = index(&templates);
        let words = index.words("shared words here now then unique7 token7 5");
        assert_eq!(index.candidates(&words), [7], "only the pairs of one signature count");
        let mut cells = 10;
        assert!(index.match_line(7, &signatures[7], "x", &words, &mut cells).is_none());
        assert_eq!(cells, 10, "over the budget: not aligned, nothing spent");
        let line = "shared words here now then unique7 token7 5";
        let mut cells = MAX_CELLS;
        assert!(index.match_line(7, &signatures[7], line, &words, &mut cells).is_some());
        assert!(cells < MAX_CELLS);
    }
}
