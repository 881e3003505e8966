//! One error-signature template, compiled for matching inside a log line.
//!
//! Matching is more forgiving than the lint's exact match, in the two ways
//! real pastes differ from the text a rule was written from:
//!
//! - the qualifiers before the message differ between releases and
//!   callers (`RuntimeError: CUDA error: no kernel image ...`,
//!   `torch.AcceleratorError: CUDA error: ...`, or just the message), so a
//!   match may start after any `": "` of the template's first literal;
//! - excerpts are cut off, so a match may end where the line ends, inside
//!   a literal or a hole.
//!
//! Both cost score: a match counts the literal text it really covered.
//! Backticks are left out on both sides: Markdown eats them from pastes.

use pitfall_contract::template::{HoleKind, Segment, Template, TemplateError};

/// A match may start after a qualifier only when this much literal text
/// is left in the first literal: a message, not a stray quote.
const MIN_CORE_LITERAL: usize = 12;

/// An anchor this long is telling enough to be the one the automaton
/// looks for, even when a later literal is longer.
const MIN_ANCHOR: usize = 16;

/// The longest anchor: the start of a message is enough to find the
/// lines worth matching.
const ANCHOR_BYTES: usize = 32;

/// The most attempts one line's match makes (holes of wide kinds next to
/// repeated literals could otherwise make a hostile line expensive).
const MAX_STEPS: usize = 4_000;

/// A compiled signature.
#[derive(Debug, Clone)]
pub struct Signature {
    /// The template as the rule wrote it.
    pub template: String,
    segments: Vec<Segment>,
    /// The template's own segments, backticks kept, when they line up
    /// with `segments`: what a filled signature is shown with.
    shown: Option<Vec<Segment>>,
    /// Byte offsets into the first literal where a match may start, the
    /// template's own start first.
    starts: Vec<usize>,
    /// Literal bytes after the last qualifier: the message itself.
    core_len: usize,
    /// The literal the automaton finds, present in every variant.
    anchor: String,
}

/// A signature matched on one line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineMatch {
    /// Byte range in the line.
    pub start: usize,
    /// End of the match (exclusive).
    pub end: usize,
    /// Each hole's kind and its byte range in the line.
    pub holes: Vec<(HoleKind, usize, usize)>,
    /// How much the match says: in [0, 1].
    pub strength: f64,
    /// The template's literal bytes the match covered: of two matches on
    /// one line, the one covering more says more exactly what failed.
    pub literal: usize,
    /// The template with its holes filled from the line (holes past a cut
    /// stay as written).
    pub filled: String,
    /// Matched by its telling words alone, as a reporter described it
    /// ([`crate::described`]): the rest of the log must name its stack.
    pub described: bool,
}

impl Signature {
    /// Compiles `template`.
    pub fn compile(template: &str) -> Result<Signature, TemplateError> {
        let own = Template::parse(template)?.segments().to_vec();
        // Matched without backticks, as the log's lines are
        // (`normalize.rs`), and shown with them when the two line up (a
        // template whose holes only backticks kept apart, `{a}`{b}`, is
        // matched as written).
        let bare = Template::parse(&template.replace('`', "")).map(|t| t.segments().to_vec());
        let (segments, shown) = match bare {
            Ok(bare) if bare == own => (own, None),
            Ok(bare) if lined_up(&bare, &own) => (bare, Some(own)),
            Ok(bare) => (bare, None),
            Err(_) => (own, None),
        };
        let mut starts = vec![0];
        if let Some(Segment::Literal(first)) = segments.first() {
            let more = segments.len() > 1;
            let mut from = 0;
            for (i, _) in first.match_indices(": ") {
                if !is_qualifier(&first[from..i]) {
                    break;
                }
                let rest = first[i + 2..].trim();
                let enough = rest.len() >= MIN_CORE_LITERAL
                    || (more && (rest.len() >= 4 || first[i + 2..].is_empty()));
                if enough {
                    starts.push(i + 2);
                }
                from = i + 2;
            }
        }
        let last = starts.last().copied().unwrap_or(0);
        let literals = segments.iter().enumerate().filter_map(|(i, s)| match s {
            Segment::Literal(l) if i == 0 => Some(&l[last..]),
            Segment::Literal(l) => Some(l.as_str()),
            Segment::Hole(_) => None,
        });
        let core_len = literals.clone().map(str::len).sum();
        // The start of the message (its first literal, at most
        // ANCHOR_BYTES of it) when that is telling enough, else the longest
        // literal: a pasted line is cut at its end, so the start of a
        // message survives more cuts than anything after it.
        let anchor = literals
            .clone()
            .find(|l| l.trim().len() >= MIN_ANCHOR)
            .or_else(|| literals.max_by_key(|l| l.trim().len()))
            .map(|l| prefix(l.trim_end_matches(['.', ' ', ':', ',']), ANCHOR_BYTES))
            .unwrap_or_default()
            .to_owned();
        Ok(Signature { template: template.to_owned(), segments, shown, starts, core_len, anchor })
    }

    /// The template's literal text, holes left out.
    pub fn literal_text(&self) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            if let Segment::Literal(l) = segment {
                out.push_str(l);
                out.push(' ');
            }
        }
        out
    }

    /// The template's segments as matched (backticks left out).
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Where the message starts in the first literal: after its last
    /// qualifier (`RuntimeError: CUDA error: `), 0 without one.
    pub(crate) fn core_start(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The literal text every match contains.
    pub fn anchor(&self) -> &str {
        &self.anchor
    }

    /// The best match of the signature in `line`, if any.
    pub fn match_line(&self, line: &str) -> Option<LineMatch> {
        let mut steps = 0;
        let last = *self.starts.last().unwrap_or(&0);
        for &skip in &self.starts {
            let mut found = None;
            for from in self.start_positions(line, skip) {
                let mut state = State { holes: Vec::new(), literal: 0, cut: false };
                if let Some(end) = self.forward(line, from, 0, skip, &mut state, &mut steps) {
                    found = Some((from, end, state));
                    break;
                }
                if steps > MAX_STEPS {
                    return None;
                }
            }
            let Some((start, end, state)) = found else { continue };
            // Literal text of the message itself, qualifiers apart.
            let core = state.literal.saturating_sub(last - skip);
            if core < self.anchor.trim().len() {
                // Cut before the anchor: too little of the message to say.
                continue;
            }
            let qualifiers = last - skip;
            let typed = state.holes.iter().filter(|(k, _, _)| *k != HoleKind::Text).count();
            // Qualifiers say where, not what: they count half.
            let said = core as f64 + 0.5 * qualifiers as f64 + 6.0 * typed as f64;
            let information = 1.0 - (-said / 18.0).exp();
            let completeness = (core as f64 / self.core_len.max(1) as f64).min(1.0);
            let qualified = if last == 0 { 1.0 } else { qualifiers as f64 / last as f64 };
            let strength = information * completeness.sqrt() * (0.9 + 0.1 * qualified);
            let filled = self.fill(line, skip, &state.holes);
            let literal = state.literal;
            return Some(LineMatch {
                start,
                end,
                holes: state.holes,
                strength,
                literal,
                filled,
                described: false,
            });
        }
        None
    }

    /// Where a match that skips `skip` bytes of the first literal can start.
    fn start_positions(&self, line: &str, skip: usize) -> Vec<usize> {
        match self.segments.first() {
            Some(Segment::Literal(first)) if skip < first.len() => {
                // Its start only: the line may be cut inside it.
                let key = prefix(&first[skip..], ANCHOR_BYTES);
                line.match_indices(key).map(|(i, _)| i).collect()
            }
            // A leading hole: it starts where a word does, before the anchor.
            _ => {
                let limit = line.find(self.anchor.as_str()).unwrap_or(0);
                let bytes = line.as_bytes();
                (0..=limit)
                    .filter(|&i| {
                        let after_space = i == 0 || bytes[i - 1].is_ascii_whitespace();
                        let word_start = i > 0
                            && !bytes[i - 1].is_ascii_alphanumeric()
                            && bytes.get(i).is_some_and(u8::is_ascii_alphanumeric);
                        line.is_char_boundary(i) && (after_space || word_start)
                    })
                    .collect()
            }
        }
    }

    /// Matches segments `seg..` at byte `at`; the end of the match. A line
    /// that ends inside the match ends it there (`state.cut`).
    fn forward(
        &self,
        line: &str,
        at: usize,
        seg: usize,
        skip: usize,
        state: &mut State,
        steps: &mut usize,
    ) -> Option<usize> {
        *steps += 1;
        if *steps > MAX_STEPS {
            return None;
        }
        let Some(segment) = self.segments.get(seg) else { return Some(at) };
        let rest = &line[at..];
        match segment {
            Segment::Literal(l) => {
                let l = if seg == 0 { &l[skip..] } else { l.as_str() };
                if rest.starts_with(l) {
                    state.literal += l.len();
                    let end = self.forward(line, at + l.len(), seg + 1, skip, state, steps);
                    if end.is_none() {
                        state.literal -= l.len();
                    }
                    end
                } else if !rest.is_empty() && l.starts_with(rest) {
                    state.literal += rest.len();
                    state.cut = true;
                    Some(line.len())
                } else if rest.is_empty() && seg > 0 {
                    state.cut = true;
                    Some(at)
                } else {
                    None
                }
            }
            Segment::Hole(kind) => {
                let limit = line.len().min(at.saturating_add(max_len(*kind)));
                let mut limit = limit;
                while !line.is_char_boundary(limit) {
                    limit -= 1;
                }
                let next = match self.segments.get(seg + 1) {
                    Some(Segment::Literal(l)) => Some(l.as_str()),
                    _ => None,
                };
                let mut ends: Vec<usize> =
                    line[at..limit].char_indices().map(|(i, c)| at + i + c.len_utf8()).collect();
                ends.insert(0, at);
                if next.is_none() {
                    // The last hole takes all it can: `{int}` at the end
                    // is the whole number, `{text}` the rest of the line.
                    ends.reverse();
                }
                for end in ends {
                    let value = &line[at..end];
                    let at_line_end = end == line.len();
                    if let Some(n) = next
                        && !line[end..].starts_with(n)
                        && !(at_line_end || (n.starts_with(&line[end..]) && end < line.len()))
                    {
                        continue;
                    }
                    if !(kind.accepts(value) || at_line_end && value.is_empty()) {
                        continue;
                    }
                    state.holes.push((*kind, at, end));
                    if let Some(e) = self.forward(line, end, seg + 1, skip, state, steps) {
                        return Some(e);
                    }
                    state.holes.pop();
                    if *steps > MAX_STEPS {
                        return None;
                    }
                }
                None
            }
        }
    }

    /// The template with the holes a match filled replaced by their text.
    pub(crate) fn fill(
        &self,
        line: &str,
        skip: usize,
        holes: &[(HoleKind, usize, usize)],
    ) -> String {
        let mut out = String::new();
        let mut filled = holes.iter();
        let segments = self.shown.as_ref().unwrap_or(&self.segments);
        for (i, segment) in segments.iter().enumerate() {
            match segment {
                Segment::Literal(l) if i == 0 => out.push_str(&l[shown_offset(l, skip)..]),
                Segment::Literal(l) => out.push_str(l),
                Segment::Hole(kind) => match filled.next() {
                    Some((_, s, e)) if s < e => out.push_str(&line[*s..*e]),
                    _ => {
                        out.push('{');
                        out.push_str(kind.name());
                        out.push('}');
                    }
                },
            }
        }
        out
    }
}

/// Whether `bare` (backticks removed) has the shape of `own`: the same
/// holes in the same places, so either can be filled from one match.
fn lined_up(bare: &[Segment], own: &[Segment]) -> bool {
    bare.len() == own.len()
        && bare.iter().zip(own).all(|(b, o)| match (b, o) {
            (Segment::Literal(b), Segment::Literal(o)) => *b == o.replace('`', ""),
            (Segment::Hole(b), Segment::Hole(o)) => b == o,
            _ => false,
        })
}

/// The byte offset in `own` (backticks kept) of byte `skip` of the same
/// text without backticks.
fn shown_offset(own: &str, skip: usize) -> usize {
    let mut bare = 0;
    for (i, c) in own.char_indices() {
        if bare >= skip {
            return i;
        }
        if c != '`' {
            bare += c.len_utf8();
        }
    }
    own.len()
}

/// What a match has covered so far.
#[derive(Debug)]
struct State {
    holes: Vec<(HoleKind, usize, usize)>,
    /// Literal bytes matched.
    literal: usize,
    /// The line ended inside the match.
    cut: bool,
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether `text`, before a `": "`, names where an error came from rather
/// than saying what it is: an exception class (`torch.AcceleratorError`),
/// a component's tag (`CUDA error`, `ggml_cuda_init`, `ERROR`). At most two
/// words, one of them written as code or in capitals.
fn is_qualifier(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    !words.is_empty()
        && words.len() <= 2
        && words.iter().any(|w| {
            w.contains(['_', '.'])
                || w.chars().skip(1).any(|c| c.is_ascii_uppercase())
                || w.chars().all(|c| !c.is_ascii_lowercase())
        })
}

/// The longest text a hole of this kind takes on one line.
fn max_len(kind: HoleKind) -> usize {
    match kind {
        HoleKind::Int | HoleKind::Capability => 24,
        HoleKind::Number | HoleKind::Version | HoleKind::Hex => 64,
        HoleKind::Gpu => 80,
        HoleKind::Path | HoleKind::Word => 512,
        HoleKind::Text => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(t: &str) -> Signature {
        Signature::compile(t).unwrap_or_else(|e| panic!("{t}: {e}"))
    }

    #[test]
    fn holes_take_the_users_values() {
        let s = sig(
            "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu} GPU has compute capability {capability}.",
        );
        let line = "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead";
        let m = s.match_line(line).expect("matches");
        assert_eq!(
            m.filled,
            "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5."
        );
        assert!(m.strength > 0.9, "{}", m.strength);
    }

    #[test]
    fn qualifiers_are_optional_and_cost_a_little() {
        let s = sig(
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        );
        let full = s
            .match_line("RuntimeError: CUDA error: no kernel image is available for execution on the device")
            .expect("full");
        let other_class = s
            .match_line("torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device")
            .expect("another class");
        let bare =
            s.match_line("no kernel image is available for execution on the device").expect("bare");
        assert!(full.strength > other_class.strength && other_class.strength > bare.strength);
        assert!(bare.strength > 0.8, "{}", bare.strength);
        assert_eq!(bare.filled, "no kernel image is available for execution on the device");
        assert!(s.match_line("CUDA error: out of memory").is_none());
    }

    #[test]
    fn a_cut_line_matches_what_is_left() {
        let s = sig(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {number} {word} (GPU {int}; {text}",
        );
        let m = s
            .match_line("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB (GPU 0; 15.78 GiB total capacity; 10.16 GiB already allocate")
            .expect("matches");
        assert!(m.filled.contains("6.14 GiB (GPU 0; 15.78 GiB"), "{}", m.filled);
        let kv = sig(
            "The model's max seq len ({int}) is larger than the maximum number of tokens that can be stored in KV cache ({int}).",
        );
        let cut = kv
            .match_line("The model's max seq len (29000) is larger than the maximum number of tok")
            .expect("cut");
        let whole = kv
            .match_line("ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try")
            .expect("whole");
        assert!(cut.strength < whole.strength);
        assert_eq!(
            cut.filled,
            "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache ({int})."
        );
    }

    #[test]
    fn a_short_message_says_little() {
        let s = sig("KeyError: '{word}'");
        let m = s.match_line("KeyError: 'text'").expect("matches");
        assert!(m.strength < 0.7, "{}", m.strength);
    }

    #[test]
    fn backticks_are_matched_without_and_shown_with() {
        let s = sig("ValueError: model type `{word}` is unknown. Set the`dtype` flag");
        let m =
            s.match_line("model type qwen3_moe is unknown. Set thedtype flag").expect("matches");
        assert_eq!(m.filled, "model type `qwen3_moe` is unknown. Set the`dtype` flag");
        assert_eq!(shown_offset("a: `b`", 3), 3);
        assert_eq!(shown_offset("`a`: b", 3), 5);
    }

    #[test]
    fn a_leading_hole_starts_at_a_word() {
        let s = sig("{path}: undefined symbol: ncclCommRegister");
        let m = s
            .match_line("ImportError: /x/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister")
            .expect("matches");
        assert!(m.filled.starts_with("/x/lib/libtorch_cuda.so: "), "{}", m.filled);
    }
}
