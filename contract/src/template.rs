//! Error-signature templates: the text a user sees when they hit a
//! breakage, with typed holes where each user's text differs (their GPU's
//! name, their numbers, versions, paths, addresses).
//!
//! `Bfloat16 is only supported on GPUs with compute capability of at least
//! 8.0. Your {gpu} GPU has compute capability {capability}.` matches
//! `... Your NVIDIA GeForce RTX 2080 Ti GPU has compute capability 7.5.`
//! and fills `gpu` and `capability` with the user's own values.
//!
//! Holes never span a line break. `{{` and `}}` are literal braces. A rule's
//! lint checks each template against the example text it was read from, so
//! a template cannot drift from what users really see.

use std::borrow::Cow;
use std::fmt;

/// What a hole stands for, and so which text it can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoleKind {
    /// A whole number, maybe negative: `29000`, `-1`.
    Int,
    /// A decimal number: `0.9`, `23.65`, `1e-5`.
    Number,
    /// A version as packages, drivers and CUDA spell them: `0.27.2rc0`,
    /// `2.12.0+cu126`, `570.124.06`, `v1.2`.
    Version,
    /// A compute capability: `7.5`, `9.0a`, `sm_90`, `86`.
    Capability,
    /// A GPU's name, words and all: `Tesla T4`, `NVIDIA GeForce RTX 2080 Ti`,
    /// `Tesla V100-SXM2-32GB`.
    Gpu,
    /// A file path or module path: `/usr/lib/x86_64-linux-gnu/libcuda.so.1`.
    Path,
    /// A hexadecimal number or address: `0x7f3a2c000000`, `deadbeef`.
    Hex,
    /// One token without white space.
    Word,
    /// Any text within the line, possibly empty.
    Text,
}

impl HoleKind {
    /// Every kind with its name in a template.
    pub const ALL: [(&'static str, HoleKind); 9] = [
        ("int", HoleKind::Int),
        ("number", HoleKind::Number),
        ("version", HoleKind::Version),
        ("capability", HoleKind::Capability),
        ("gpu", HoleKind::Gpu),
        ("path", HoleKind::Path),
        ("hex", HoleKind::Hex),
        ("word", HoleKind::Word),
        ("text", HoleKind::Text),
    ];

    /// The kind named `name` in a template.
    pub fn from_name(name: &str) -> Option<HoleKind> {
        HoleKind::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Its name in a template.
    pub fn name(self) -> &'static str {
        HoleKind::ALL.iter().find(|(_, k)| *k == self).map_or("text", |(n, _)| n)
    }

    /// Whether `value` is text this hole can take.
    pub fn accepts(self, value: &str) -> bool {
        if value.contains('\n') {
            return false;
        }
        let b = value.as_bytes();
        match self {
            HoleKind::Text => true,
            HoleKind::Word => !b.is_empty() && !b.iter().any(u8::is_ascii_whitespace),
            HoleKind::Int => {
                let digits = value.strip_prefix('-').unwrap_or(value);
                !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
            }
            HoleKind::Number => is_number(value),
            HoleKind::Version => is_version(value),
            HoleKind::Capability => is_capability(value),
            HoleKind::Hex => {
                let digits = value.strip_prefix("0x").or_else(|| value.strip_prefix("0X"));
                match digits {
                    Some(d) => !d.is_empty() && d.bytes().all(|c| c.is_ascii_hexdigit()),
                    None => b.len() >= 4 && b.iter().all(u8::is_ascii_hexdigit),
                }
            }
            HoleKind::Path => {
                !b.is_empty()
                    && !b.iter().any(u8::is_ascii_whitespace)
                    && (value.contains('/') || value.contains('\\') || value.contains('.'))
            }
            HoleKind::Gpu => {
                !b.is_empty()
                    && b[0].is_ascii_alphanumeric()
                    && b[b.len() - 1] != b' '
                    && b.iter().all(|&c| c.is_ascii_alphanumeric() || b" -_.()/".contains(&c))
                    && b.iter().any(u8::is_ascii_digit)
            }
        }
    }

    /// The longest text a hole of this kind takes: bounds the search.
    fn max_len(self) -> usize {
        match self {
            HoleKind::Int | HoleKind::Capability => 24,
            HoleKind::Number | HoleKind::Version | HoleKind::Hex => 64,
            HoleKind::Gpu => 80,
            HoleKind::Path | HoleKind::Word => 512,
            // A list of supported architectures can run to thousands.
            HoleKind::Text => 8192,
        }
    }
}

fn is_number(value: &str) -> bool {
    let v = value.strip_prefix('-').unwrap_or(value);
    let (mantissa, exponent) = match v.find(['e', 'E']) {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    let mut parts = mantissa.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let fraction = parts.next();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = match fraction {
        None => digits(whole),
        Some(f) => (digits(whole) || whole.is_empty()) && digits(f),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

fn is_version(value: &str) -> bool {
    let v = value.strip_prefix(['v', 'V']).unwrap_or(value);
    let b = v.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_digit()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || b".+!_-".contains(&c))
}

fn is_capability(value: &str) -> bool {
    let v = value.strip_prefix("sm_").or_else(|| value.strip_prefix("compute_")).unwrap_or(value);
    let v = v.strip_suffix(['a', 'f']).unwrap_or(v);
    match v.split_once('.') {
        Some((major, minor)) => {
            !major.is_empty()
                && major.len() <= 2
                && major.bytes().all(|c| c.is_ascii_digit())
                && minor.len() == 1
                && minor.bytes().all(|c| c.is_ascii_digit())
        }
        None => (2..=3).contains(&v.len()) && v.bytes().all(|c| c.is_ascii_digit()),
    }
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Text that must appear as written.
    Literal(String),
    /// A hole of this kind.
    Hole(HoleKind),
}

/// A template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{name}` with a name that is no hole kind.
    #[error(
        "unknown hole {{{0}}} (holes: int, number, version, capability, gpu, path, hex, word, text)"
    )]
    UnknownHole(String),
    /// A `{` without its `}`, or a lone `}`.
    #[error("unbalanced brace at byte {0} (write a literal brace as {{{{ or }}}})")]
    Brace(usize),
    /// Two holes side by side: nothing tells where one ends.
    #[error("two holes with no text between them")]
    AdjacentHoles,
    /// Nothing but holes.
    #[error("a template needs some literal text")]
    NoLiteral,
}

/// A parsed error-signature template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    segments: Vec<Segment>,
}

/// Where a template matched a text, and what its holes took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'t> {
    /// Byte range of the match in the text.
    pub start: usize,
    /// End of the match (exclusive).
    pub end: usize,
    /// Each hole's kind and the text it took, in order.
    pub holes: Vec<(HoleKind, &'t str)>,
}

/// The most match attempts one search makes before it gives up: holes
/// with wide kinds next to repeated literals could otherwise make a
/// hostile text expensive.
const MAX_STEPS: usize = 20_000;

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        let mut at = 0;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("{{") || rest.starts_with("}}") {
                literal.push(c);
                rest = &rest[2..];
                at += 2;
                continue;
            }
            if c == '}' {
                return Err(TemplateError::Brace(at));
            }
            if c == '{' {
                let close = rest.find('}').ok_or(TemplateError::Brace(at))?;
                let name = &rest[1..close];
                if name.contains('{') {
                    return Err(TemplateError::Brace(at));
                }
                let kind = HoleKind::from_name(name.trim())
                    .ok_or_else(|| TemplateError::UnknownHole(name.to_owned()))?;
                if literal.is_empty() && matches!(segments.last(), Some(Segment::Hole(_))) {
                    return Err(TemplateError::AdjacentHoles);
                }
                if !literal.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                segments.push(Segment::Hole(kind));
                rest = &rest[close + 1..];
                at += close + 1;
                continue;
            }
            literal.push(c);
            rest = &rest[c.len_utf8()..];
            at += c.len_utf8();
        }
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        if !segments.iter().any(|s| matches!(s, Segment::Literal(l) if !l.trim().is_empty())) {
            return Err(TemplateError::NoLiteral);
        }
        Ok(Template { text: text.to_owned(), segments })
    }

    /// A template that matches `text` literally (braces escaped): the form
    /// of signatures written before templates had holes.
    pub fn literal(text: &str) -> Template {
        Template { text: escape(text), segments: vec![Segment::Literal(text.to_owned())] }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its pieces, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether it has any hole.
    pub fn has_holes(&self) -> bool {
        self.segments.iter().any(|s| matches!(s, Segment::Hole(_)))
    }

    /// The literal pieces, longest first: what a search anchors on.
    pub fn anchors(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                Segment::Hole(_) => None,
            })
            .collect();
        out.sort_by_key(|l| std::cmp::Reverse(l.len()));
        out
    }

    /// The match when the whole of `text` is the template with its holes
    /// filled (the lint's check of a template against its example).
    pub fn match_exact<'t>(&self, text: &'t str) -> Option<Match<'t>> {
        let mut steps = 0;
        let mut holes = Vec::new();
        self.match_from(text, 0, 0, true, &mut holes, &mut steps).map(|end| Match {
            start: 0,
            end,
            holes,
        })
    }

    /// The first place in `text` where the template matches, holes filled
    /// with as little as each can take there.
    pub fn find<'t>(&self, text: &'t str) -> Option<Match<'t>> {
        let mut steps = 0;
        let starts: Vec<usize> = match self.segments.first() {
            Some(Segment::Literal(first)) => {
                text.match_indices(first.as_str()).map(|(i, _)| i).collect()
            }
            _ => text.char_indices().map(|(i, _)| i).collect(),
        };
        for start in starts {
            let mut holes = Vec::new();
            if let Some(end) = self.match_from(text, start, 0, false, &mut holes, &mut steps) {
                return Some(Match { start, end, holes });
            }
            if steps > MAX_STEPS {
                return None;
            }
        }
        None
    }

    /// Matches segments `seg..` at byte `at` of `text`; the end of the
    /// match. With `whole`, the match must end at the text's end.
    fn match_from<'t>(
        &self,
        text: &'t str,
        at: usize,
        seg: usize,
        whole: bool,
        holes: &mut Vec<(HoleKind, &'t str)>,
        steps: &mut usize,
    ) -> Option<usize> {
        *steps += 1;
        if *steps > MAX_STEPS {
            return None;
        }
        let Some(segment) = self.segments.get(seg) else {
            return (!whole || at == text.len()).then_some(at);
        };
        match segment {
            Segment::Literal(l) => {
                if text[at..].starts_with(l.as_str()) {
                    self.match_from(text, at + l.len(), seg + 1, whole, holes, steps)
                } else {
                    None
                }
            }
            Segment::Hole(kind) => {
                let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                let limit = line_end.min(at.saturating_add(kind.max_len()));
                // Shortest first: the literal after the hole decides where
                // it ends, and a text hole should take no more than needed.
                let mut ends: Vec<usize> =
                    text[at..limit].char_indices().map(|(i, c)| at + i + c.len_utf8()).collect();
                if *kind == HoleKind::Text {
                    ends.insert(0, at);
                }
                // The next literal, if any, must follow: only try ends
                // where it starts (or, last, the end of the line).
                let next = match self.segments.get(seg + 1) {
                    Some(Segment::Literal(l)) => Some(l.as_str()),
                    _ => None,
                };
                for end in ends {
                    if let Some(n) = next
                        && !text[end..].starts_with(n)
                    {
                        continue;
                    }
                    let value = &text[at..end];
                    if !kind.accepts(value) {
                        continue;
                    }
                    holes.push((*kind, value));
                    if let Some(e) = self.match_from(text, end, seg + 1, whole, holes, steps) {
                        return Some(e);
                    }
                    holes.pop();
                    if *steps > MAX_STEPS {
                        return None;
                    }
                }
                None
            }
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A first template for an error text a user pasted (`pitfall rule new
/// --error TEXT`): its first non-blank line, with each word that is a
/// path, a hexadecimal address, a version or a whole number made a hole
/// of that kind, and everything else literal. The template reproduces
/// its line (the lint's check); an author then widens or narrows holes by
/// hand (`{gpu}` for a GPU's name, which takes several words).
pub fn suggest(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut out = String::with_capacity(line.len() + 16);
    let mut holes = 0;
    for (i, word) in line.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        // Punctuation around a value stays literal: `(8.0)` or `/lib.so:`.
        let core = word
            .trim_start_matches(['(', '[', '"', '\'', '`'])
            .trim_end_matches([')', ']', '"', '\'', '`', ',', '.', ';', ':', '!', '?']);
        let start = word.find(core).unwrap_or(0);
        let kind = if core.is_empty() {
            None
        } else if core.starts_with('/') && core[1..].contains('/') {
            Some(HoleKind::Path)
        } else if core.len() > 2 && core.starts_with("0x") && HoleKind::Hex.accepts(core) {
            Some(HoleKind::Hex)
        } else if core.bytes().all(|b| b.is_ascii_digit()) {
            Some(HoleKind::Int)
        } else if core.contains('.')
            && HoleKind::Version.accepts(core)
            && pitfall_version::Version::parse(core).is_ok()
        {
            Some(HoleKind::Version)
        } else {
            None
        };
        match kind {
            // A line of values alone keeps its first as a literal anchor.
            Some(kind) => {
                holes += 1;
                out.push_str(&escape(&word[..start]));
                out.push('{');
                out.push_str(kind.name());
                out.push('}');
                out.push_str(&escape(&word[start + core.len()..]));
            }
            None => out.push_str(&escape(word)),
        }
    }
    if holes > 0 && Template::parse(&out).ok().and_then(|t| t.match_exact(line)).is_none() {
        return escape(line);
    }
    out
}

/// `text` with its braces doubled, so it reads as a literal template.
pub fn escape(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// `text` with each `{name}` placeholder replaced by `value(name)`; `{{`
/// and `}}` are literal braces, and a `{` with no `}` after it is text.
/// The one reading of a remedy's or message's placeholders: rendering a
/// finding, showing it unfilled and telling whether it has any.
pub fn fill_placeholders<'n, E>(
    text: &'n str,
    mut value: impl FnMut(&'n str) -> Result<Cow<'n, str>, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(stripped) = tail.strip_prefix('{') {
            let Some(end) = stripped.find('}') else {
                out.push_str(tail);
                return Ok(out);
            };
            out.push_str(&value(&stripped[..end])?);
            rest = &stripped[end + 1..];
        } else {
            out.push('}');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A template's text as a reader sees it before any value is filled in:
/// doubled braces single, and each placeholder shown as `<name>`, the
/// usual mark of a value the reader supplies (`pip install
/// torch==<torch_pin>`), so it is not mistaken for a literal brace.
pub fn unfilled(text: &str) -> String {
    let marked: Result<String, std::convert::Infallible> =
        fill_placeholders(text, |name| Ok(Cow::Owned(format!("<{name}>"))));
    marked.unwrap_or_else(|never| match never {})
}

/// Whether `text` holds a placeholder (`{name}`), not only literal
/// (doubled) braces.
pub fn has_placeholder(text: &str) -> bool {
    fill_placeholders(text, |_| Err(())).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfilled_undoes_escape_and_marks_placeholders() {
        let text = "e.g. '{\"dtype\":\"int8\"}'";
        assert_eq!(unfilled(&escape(text)), text);
        assert_eq!(unfilled("Use TGI {version} or '{{}}'"), "Use TGI <version> or '{}'");
        assert_eq!(
            unfilled("torch=={torch_pin}, +cuda{{torch.version.cuda}}"),
            "torch==<torch_pin>, +cuda{torch.version.cuda}"
        );
    }

    #[test]
    fn a_placeholder_is_told_from_literal_braces() {
        assert!(has_placeholder("torch=={torch_pin}"));
        assert!(!has_placeholder("'{{\"dtype\":\"int8\"}}'"));
        assert!(!has_placeholder("no braces"));
        assert!(!has_placeholder("a lone } then {"));
        assert!(has_placeholder("{{literal}} then {name}"));
    }

    #[test]
    fn a_suggested_template_reproduces_its_line_with_holes_for_values() {
        for (text, want) in [
            (
                "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash.",
                "A module that was compiled using NumPy 1.x cannot be run in NumPy {version} as it may crash.",
            ),
            (
                "OSError: /usr/lib/x86_64-linux-gnu/libcuda.so.1: cannot open shared object (code 38)\nmore",
                "OSError: {path}: cannot open shared object (code {int})",
            ),
            ("segfault at 0x7f3a2c000000 {weird}", "segfault at {hex} {{weird}}"),
            ("RuntimeError: Numpy is not available", "RuntimeError: Numpy is not available"),
        ] {
            let got = suggest(text);
            assert_eq!(got, want, "{text}");
            let line = text.lines().next().unwrap_or_default();
            assert!(t(&got).match_exact(line).is_some(), "{got} reproduces {line}");
        }
    }

    fn t(text: &str) -> Template {
        Template::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_template_fills_its_holes_with_the_users_own_values() {
        let bf16 = t(
            "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu} GPU has compute capability {capability}.",
        );
        let text = "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your NVIDIA GeForce RTX 2080 Ti GPU has compute capability 7.5. You can use float16";
        let m = bf16.find(text).expect("matches");
        assert_eq!(
            m.holes,
            [(HoleKind::Gpu, "NVIDIA GeForce RTX 2080 Ti"), (HoleKind::Capability, "7.5")]
        );
        assert_eq!(&text[m.start..m.start + 8], "Bfloat16");
        assert!(bf16.match_exact(text).is_none(), "the text has more before and after");
        let kv = t(
            "The model's max seq len ({int}) is larger than the maximum number of tokens that can be stored in KV cache ({int}).",
        );
        let m = kv
            .match_exact("The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648).")
            .expect("exact");
        assert_eq!(m.holes, [(HoleKind::Int, "29000"), (HoleKind::Int, "23648")]);
    }

    #[test]
    fn holes_take_only_their_kind() {
        for (kind, good, bad) in [
            (HoleKind::Int, &["29000", "-1"][..], &["2.5", "", "12a"][..]),
            (HoleKind::Number, &["0.9", "23", "1e-5", ".5"], &["1.2.3", "x"]),
            (
                HoleKind::Version,
                &["0.27.2rc0", "2.12.0+cu126", "570.124.06", "v1.2"],
                &["rc0", "1.", ""],
            ),
            (
                HoleKind::Capability,
                &["7.5", "9.0a", "sm_90", "86", "compute_120"],
                &["7", "7.55", "sm_"],
            ),
            (
                HoleKind::Gpu,
                &["Tesla T4", "NVIDIA GeForce RTX 2080 Ti", "Tesla V100-SXM2-32GB"],
                &["GPU", " T4", "T4 "],
            ),
            (HoleKind::Hex, &["0x7f3a", "deadbeef"], &["0x", "xyz", "abc"]),
            (HoleKind::Path, &["/usr/lib/libcuda.so.1", "vllm/_C.abi3.so"], &["a b", ""]),
            (HoleKind::Word, &["x", "a.b-c"], &["a b", ""]),
        ] {
            for g in good {
                assert!(kind.accepts(g), "{kind:?} takes {g:?}");
            }
            for b in bad {
                assert!(!kind.accepts(b), "{kind:?} refuses {b:?}");
            }
        }
        assert!(!HoleKind::Text.accepts("two\nlines"), "no hole spans a line break");
    }

    #[test]
    fn braces_and_bad_templates() {
        assert_eq!(
            t("a {{literal}} brace").segments(),
            [Segment::Literal("a {literal} brace".into())]
        );
        assert_eq!(Template::parse("x {gpus}"), Err(TemplateError::UnknownHole("gpus".into())));
        assert_eq!(Template::parse("x {int"), Err(TemplateError::Brace(2)));
        assert_eq!(Template::parse("x } y"), Err(TemplateError::Brace(2)));
        assert_eq!(Template::parse("x {int}{int}"), Err(TemplateError::AdjacentHoles));
        assert_eq!(Template::parse("{text}"), Err(TemplateError::NoLiteral));
        let old = Template::literal("dict {'a': 1} failed");
        assert_eq!(old.as_str(), "dict {{'a': 1}} failed");
        assert_eq!(t(old.as_str()), old, "an escaped literal parses back to itself");
        assert!(old.match_exact("dict {'a': 1} failed").is_some());
    }

    #[test]
    fn a_hostile_text_is_searched_in_bounded_steps() {
        let tpl = t("a{text}a{text}a{text}a{text}b");
        let text = "a".repeat(5_000);
        assert!(tpl.find(&text).is_none());
    }

    #[test]
    fn anchors_are_the_literals_longest_first() {
        let tpl = t("Your {gpu} GPU has compute capability {capability}.");
        assert_eq!(tpl.anchors(), [" GPU has compute capability ", "Your ", "."]);
    }
}
