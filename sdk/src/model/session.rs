//! The host side of the ABI's calls, shared by the engine (behind wasmtime)
//! and by the SDK's native test harness (behind plain function calls), so a
//! rule sees the same answers in `cargo test` as in the registry.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use super::fields::{Field, FieldKind, FieldMap, Source};
use crate::version::{Specifier, Version, VersionError};

/// Status codes of `field_str`, `field_len` and `version_in` (negative results).
pub use crate::abi::status;

/// The first byte of a recorded read that is a question the host answered
/// (`version_in`, `text_contains`) rather than a field
/// ([`predicate_read`]). Not UTF-8, so no field path starts with it.
pub const PREDICATE: u8 = 0xFF;

/// Which question a [`predicate_read`] records: its second byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Question {
    /// `version_in(path, spec)`: the argument is the specifier.
    VersionIn = 0,
    /// `text_contains(path, needle)`: the argument is the needle.
    TextContains = 1,
}

/// The bytes `ptr..ptr + len` of a guest's memory, with both read as the
/// unsigned 32-bit numbers wasm passes; `None` when the range is not all
/// inside `memory` (the host then traps the rule with an ABI violation).
pub fn guest_range(memory: &[u8], ptr: i32, len: i32) -> Option<&[u8]> {
    let start = ptr as u32 as usize;
    memory.get(start..start.checked_add(len as u32 as usize)?)
}

/// [`guest_range`] for writing: where the host copies a field's text.
pub fn guest_range_mut(memory: &mut [u8], ptr: i32, len: usize) -> Option<&mut [u8]> {
    let start = ptr as u32 as usize;
    memory.get_mut(start..start.checked_add(len)?)
}

/// What a rule reported through the host calls during one evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawOutput {
    /// Field paths offered as evidence.
    pub evidence: Vec<String>,
    /// Field paths the rule needed and did not find.
    pub missing: Vec<String>,
    /// Message and remedy parameters, in call order (later wins).
    pub params: Vec<(String, ParamValue)>,
    /// Indices of the metadata's remedies that apply; empty means all.
    pub remedies: Vec<u32>,
    /// Bytes reported so far (paths, keys, values, 4 per remedy index).
    pub bytes: usize,
}

/// A parameter's value as the rule set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    /// `param`: this text.
    Text(String),
    /// `param_field`: the text of the field at this path, read when the
    /// finding is rendered. The rule never sees the value, so a rule that
    /// quotes a version it only asked `version_in` about reads nothing
    /// more than the answer: the memo can replay it for any version with
    /// the same answer, and renders the text of the manifest at hand.
    Field(String),
}

impl RawOutput {
    /// The paths of the fields parameters are bound to (`param_field`).
    pub fn param_fields(&self) -> impl Iterator<Item = &str> {
        self.params.iter().filter_map(|(_, v)| match v {
            ParamValue::Field(path) => Some(path.as_str()),
            ParamValue::Text(_) => None,
        })
    }
}

/// A specifier a rule passed to `version_in` that does not parse (or is
/// not UTF-8): the rule's own bug, raised as a trap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("specifier `{spec}` does not parse: {reason}")]
pub struct SpecifierError {
    /// The specifier, lossily decoded.
    pub spec: String,
    /// Why it does not parse.
    pub reason: String,
}

/// `version_in`'s answer on `fields`: 1 if the field at `path` is a
/// version `spec` contains, 0 if a version it does not, or a [`status`].
pub fn version_answer(fields: &FieldMap, path: &[u8], spec: &Specifier) -> i32 {
    let Some(field) = fields.get_bytes(path) else { return status::MISSING };
    let Some(text) = field.text else { return status::WRONG_KIND };
    match Version::parse(&text) {
        Ok(v) => i32::from(spec.contains(&v)),
        Err(_) => status::NOT_A_VERSION,
    }
}

/// `text_contains`'s answer on `fields`: 1 if the field at `path` is a
/// scalar whose text contains `needle`, ASCII letters compared without
/// case (`Gemma-4` contains `gemma-4`), 0 if a scalar whose text does not,
/// or a [`status`]. An empty needle is in every text.
pub fn text_answer(fields: &FieldMap, path: &[u8], needle: &[u8]) -> i32 {
    let Some(field) = fields.get_bytes(path) else { return status::MISSING };
    let Some(text) = field.text else { return status::WRONG_KIND };
    i32::from(contains_ignoring_ascii_case(text.as_bytes(), needle))
}

fn contains_ignoring_ascii_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// The recorded read of asking `question(path, argument)`: [`PREDICATE`],
/// the question's byte, the argument's length (u32, little-endian), the
/// argument, the path.
pub fn predicate_read(question: Question, path: &[u8], argument: &[u8]) -> Option<Box<[u8]>> {
    let len = u32::try_from(argument.len()).ok()?;
    let mut read = Vec::with_capacity(6 + argument.len() + path.len());
    read.push(PREDICATE);
    read.push(question as u8);
    read.extend_from_slice(&len.to_le_bytes());
    read.extend_from_slice(argument);
    read.extend_from_slice(path);
    Some(read.into_boxed_slice())
}

/// What a rule sees at a recorded read: the field at a path, or for a
/// [`predicate_read`] the answer as a number field (never missing, so a
/// rule that looked a raw path up and saw nothing never matches it).
/// `None` for a predicate read this module did not write.
pub fn observe<'f>(fields: &'f FieldMap, read: &[u8]) -> Option<Field<'f>> {
    if read.first() != Some(&PREDICATE) {
        return fields.get_bytes(read);
    }
    let question = *read.get(1)?;
    let len = u32::from_le_bytes(read.get(2..6)?.try_into().ok()?) as usize;
    let argument = read.get(6..6usize.checked_add(len)?)?;
    let path = &read[6 + len..];
    let answer = if question == Question::VersionIn as u8 {
        let spec = std::str::from_utf8(argument).ok()?;
        with_specifier(spec, |parsed| Some(version_answer(fields, path, parsed.ok()?)))?
    } else if question == Question::TextContains as u8 {
        text_answer(fields, path, argument)
    } else {
        return None;
    };
    Some(answer_field(answer))
}

/// Slots of the per-thread cache of parsed specifiers.
const SPECIFIER_SLOTS: usize = 256;
/// Longer specifiers are parsed each time (a rule's ranges are a few dozen
/// characters; a hostile one's could be any length).
const CACHED_SPECIFIER_MAX: usize = 256;

/// A slot of the cache: a specifier's text and the specifier it parses to.
type CachedSpecifier = Option<(Box<str>, Specifier)>;

thread_local! {
    /// Specifiers parsed on this thread, by their text, one per slot of a
    /// hash of it (a new one replaces the slot's). A replay asks each
    /// recorded `version_in` question again, and parsing its specifier
    /// took about 240 ns of a replay's 400 (a version check itself 12 ns):
    /// a check replays dozens of them, from a few hundred distinct
    /// specifiers a registry's rules hold.
    static SPECIFIERS: RefCell<Vec<CachedSpecifier>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with `text` parsed as a specifier, from this thread's cache
/// when it parsed the same text before.
fn with_specifier<R>(text: &str, f: impl FnOnce(Result<&Specifier, VersionError>) -> R) -> R {
    if text.len() > CACHED_SPECIFIER_MAX {
        return f(Specifier::parse(text).as_ref().map_err(Clone::clone));
    }
    // FNV-1a: a few nanoseconds for a short text.
    let hash = text
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let slot = (hash % SPECIFIER_SLOTS as u64) as usize;
    SPECIFIERS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.is_empty() {
            cache.resize_with(SPECIFIER_SLOTS, || None);
        }
        if let Some((cached, parsed)) = &cache[slot]
            && **cached == *text
        {
            return f(Ok(parsed));
        }
        match Specifier::parse(text) {
            Ok(parsed) => f(Ok(&cache[slot].insert((text.into(), parsed)).1)),
            // Errors are not kept: only a hostile rule's are ever met.
            Err(e) => f(Err(e)),
        }
    })
}

fn answer_field(answer: i32) -> Field<'static> {
    Field {
        kind: FieldKind::Number,
        text: None,
        number: Some(f64::from(answer)),
        len: 0,
        source: Source::Manifest,
    }
}

/// Why a rule's output was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// More than the output budget.
    #[error("output exceeds {limit} bytes")]
    TooLarge {
        /// The budget.
        limit: usize,
    },
    /// Text that is not UTF-8.
    #[error("{what} is not valid UTF-8")]
    NotUtf8 {
        /// Which argument.
        what: &'static str,
    },
}

/// What a rule can observe of one field through the host calls: its
/// kind, text, number and length (not its source, which only the host's
/// rendering of evidence sees). Two manifests whose fields at the paths a
/// rule read are observed alike give that rule the same answers to every
/// call, so it returns the same output: the engine's memo of evaluations
/// rests on this.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    kind: FieldKind,
    text: Option<Box<str>>,
    /// The number's bits: equal bits, equal answers (NaN included).
    number: Option<u64>,
    len: usize,
    /// Only the kind was asked (`field_kind`, every call on the path):
    /// two fields of one kind give that rule the same answers whatever
    /// else they hold, so an installed package's object matches across
    /// machines whose package entries have other members.
    kind_only: bool,
}

impl Observed {
    /// What a lookup that found `field` (or nothing) lets a rule see.
    pub fn of(field: Option<&Field<'_>>) -> Observed {
        match field {
            None => Observed {
                kind: FieldKind::Missing,
                text: None,
                number: None,
                len: 0,
                kind_only: false,
            },
            Some(f) => Observed {
                kind: f.kind,
                text: f.text.as_deref().map(Box::from),
                number: f.number.map(f64::to_bits),
                len: f.len,
                kind_only: false,
            },
        }
    }

    /// What `field_kind` lets a rule see of `field`: its kind alone.
    pub fn kind_of(field: Option<&Field<'_>>) -> Observed {
        let kind = field.map_or(FieldKind::Missing, |f| f.kind);
        Observed { kind, text: None, number: None, len: 0, kind_only: true }
    }

    /// Whether a rule would see `field` exactly as this.
    pub fn matches(&self, field: Option<&Field<'_>>) -> bool {
        match field {
            None => self.kind == FieldKind::Missing,
            Some(f) if self.kind_only => f.kind == self.kind,
            Some(f) => {
                f.kind == self.kind
                    && f.len == self.len
                    && f.number.map(f64::to_bits) == self.number
                    && f.text.as_deref() == self.text.as_deref()
            }
        }
    }

    /// Whether only the kind was seen ([`Observed::kind_of`]).
    pub fn is_kind_only(&self) -> bool {
        self.kind_only
    }

    /// The kind seen.
    pub fn kind(&self) -> FieldKind {
        self.kind
    }

    /// The text seen (scalars only).
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The bits of the number seen, if the field was a number.
    pub fn number_bits(&self) -> Option<u64> {
        self.number
    }

    /// The length seen (elements or members).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was seen: no elements or members.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes this observation holds (for memory budgets).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Observed>() + self.text.as_ref().map_or(0, |t| t.len())
    }
}

/// One path a rule read, first read only, with what it saw there.
pub type Read = (Box<[u8]>, Observed);

/// Distinct paths a recording session keeps; a rule that reads more is
/// not recorded (its trace would cost more to replay than it saves).
pub const MAX_RECORDED_READS: usize = 64;

/// What a host call answers of the field it looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Facet {
    /// The kind alone (`field_kind`).
    Kind,
    /// Anything: its length, number or text (every other call).
    All,
}

/// The reads of a recording session, in the order the rule made them.
#[derive(Debug, Default)]
struct ReadLog {
    reads: Vec<Read>,
    /// Recording was given up: more distinct paths than
    /// [`MAX_RECORDED_READS`] were read, or a path spelled like a
    /// recorded `version_in` question.
    overflowed: bool,
}

impl ReadLog {
    /// Records a read, unless its path was read before (a path read again
    /// reads the same value: only the first counts), in which case a call
    /// that sees more than the kind widens a kind-only observation to all
    /// of it: what the trace keeps of a path is everything any call on it
    /// answered.
    fn note(&mut self, path: &[u8], facet: Facet, field: Option<&Field<'_>>) {
        if self.overflowed {
            return;
        }
        if let Some((_, seen)) = self.reads.iter_mut().find(|(p, _)| **p == *path) {
            if facet == Facet::All && seen.kind_only {
                *seen = Observed::of(field);
            }
            return;
        }
        if self.reads.len() == MAX_RECORDED_READS {
            self.overflow();
        } else {
            let seen = match facet {
                Facet::Kind => Observed::kind_of(field),
                Facet::All => Observed::of(field),
            };
            self.reads.push((path.into(), seen));
        }
    }

    /// Gives the recording up: this evaluation will not be memoised.
    fn overflow(&mut self) {
        self.overflowed = true;
        self.reads = Vec::new();
    }
}

/// One evaluation's view of the manifest and its output so far.
#[derive(Debug)]
pub struct Session {
    fields: Arc<FieldMap>,
    output: RawOutput,
    output_limit: usize,
    /// Set when recording: lookups take `&self` (the host calls borrow the
    /// field's text from the session while they copy it), hence the cell.
    log: Option<RefCell<ReadLog>>,
}

impl Session {
    /// A session over `fields` whose output may not exceed `output_limit` bytes.
    pub fn new(fields: Arc<FieldMap>, output_limit: usize) -> Session {
        Session { fields, output: RawOutput::default(), output_limit, log: None }
    }

    /// A session that also records every distinct path the rule reads and
    /// what it saw there ([`Session::take_reads`]).
    pub fn recording(fields: Arc<FieldMap>, output_limit: usize) -> Session {
        Session { log: Some(RefCell::default()), ..Session::new(fields, output_limit) }
    }

    /// The recorded reads, first read of each path, in order; `None` when
    /// not recording or when the rule read more than [`MAX_RECORDED_READS`]
    /// distinct paths.
    pub fn take_reads(&mut self) -> Option<Vec<Read>> {
        let log = self.log.take()?.into_inner();
        (!log.overflowed).then_some(log.reads)
    }

    /// `field_kind`: the kind of the field at `path` (0 when missing).
    pub fn field_kind(&self, path: &[u8]) -> i32 {
        self.lookup(path, Facet::Kind).map_or(FieldKind::Missing as i32, |f| f.kind as i32)
    }

    /// `field_len`: elements of an array or members of an object.
    pub fn field_len(&self, path: &[u8]) -> i32 {
        match self.lookup(path, Facet::All) {
            None => status::MISSING,
            Some(f) if matches!(f.kind, FieldKind::Array | FieldKind::Object) => {
                i32::try_from(f.len).unwrap_or(i32::MAX)
            }
            Some(_) => status::WRONG_KIND,
        }
    }

    /// `field_num`: a number field, or a string that is a decimal number
    /// (`"7.5"`); NaN otherwise.
    pub fn field_num(&self, path: &[u8]) -> f64 {
        match self.lookup(path, Facet::All) {
            Some(f) => f
                .number
                .or_else(|| f.text.as_deref().and_then(|t| t.trim().parse().ok()))
                .unwrap_or(f64::NAN),
            None => f64::NAN,
        }
    }

    /// `field_str`: a scalar as text, or the status for missing / not scalar.
    pub fn field_str(&self, path: &[u8]) -> Result<Cow<'_, str>, i32> {
        match self.lookup(path, Facet::All) {
            None => Err(status::MISSING),
            Some(f) => f.text.ok_or(status::WRONG_KIND),
        }
    }

    /// `evidence`: offer the field at `path` as evidence.
    pub fn evidence(&mut self, path: &[u8]) -> Result<(), OutputError> {
        let path = self.text(path, "evidence path")?;
        self.output.evidence.push(path);
        Ok(())
    }

    /// `missing`: name a field the rule needed.
    pub fn missing(&mut self, path: &[u8]) -> Result<(), OutputError> {
        let path = self.text(path, "missing path")?;
        self.output.missing.push(path);
        Ok(())
    }

    /// `param`: set a message/remedy parameter.
    pub fn param(&mut self, key: &[u8], value: &[u8]) -> Result<(), OutputError> {
        let key = self.text(key, "param key")?;
        let value = self.text(value, "param value")?;
        self.output.params.push((key, ParamValue::Text(value)));
        Ok(())
    }

    /// `param_field`: set a parameter to the text of the field at `path`,
    /// read when the finding is rendered ([`ParamValue::Field`]).
    pub fn param_field(&mut self, key: &[u8], path: &[u8]) -> Result<(), OutputError> {
        let key = self.text(key, "param key")?;
        let path = self.text(path, "param path")?;
        self.output.params.push((key, ParamValue::Field(path)));
        Ok(())
    }

    /// `version_in`: whether the field at `path` is a version `spec`
    /// contains (1 or 0), or a [`status`]. Recorded as one read of the
    /// answer, not of the field: two manifests with the same answer give
    /// the rule the same call result, whatever their versions.
    pub fn version_in(&self, path: &[u8], spec: &[u8]) -> Result<i32, SpecifierError> {
        let text = std::str::from_utf8(spec).map_err(|_| SpecifierError {
            spec: String::from_utf8_lossy(spec).into_owned(),
            reason: "not valid UTF-8".to_owned(),
        })?;
        let answer = with_specifier(text, |parsed| {
            parsed.map(|spec| version_answer(&self.fields, path, spec)).map_err(|e| {
                SpecifierError { spec: text.to_owned(), reason: e.reason().to_owned() }
            })
        })?;
        self.note_answer(Question::VersionIn, path, spec, answer);
        Ok(answer)
    }

    /// `text_contains`: whether the field at `path` is a scalar whose text
    /// contains `needle`, ASCII letters without case (1 or 0), or a
    /// [`status`]. Recorded as one read of the answer, as `version_in` is:
    /// every model id that does not name a family answers the same.
    pub fn text_contains(&self, path: &[u8], needle: &[u8]) -> i32 {
        let answer = text_answer(&self.fields, path, needle);
        self.note_answer(Question::TextContains, path, needle, answer);
        answer
    }

    /// Records a question's answer as the read of it, when recording.
    fn note_answer(&self, question: Question, path: &[u8], argument: &[u8], answer: i32) {
        if let Some(log) = &self.log {
            match predicate_read(question, path, argument) {
                Some(read) => log.borrow_mut().note(&read, Facet::All, Some(&answer_field(answer))),
                None => log.borrow_mut().overflow(),
            }
        }
    }

    /// `remedy`: select a metadata remedy by index.
    pub fn remedy(&mut self, index: u32) -> Result<(), OutputError> {
        self.charge(4)?;
        self.output.remedies.push(index);
        Ok(())
    }

    /// The output so far, leaving an empty one.
    pub fn take_output(&mut self) -> RawOutput {
        std::mem::take(&mut self.output)
    }

    fn lookup(&self, path: &[u8], facet: Facet) -> Option<Field<'_>> {
        let field = self.fields.get_bytes(path);
        if let Some(log) = &self.log {
            let mut log = log.borrow_mut();
            if path.first() == Some(&PREDICATE) {
                // Spelled like a recorded question (only a hostile rule
                // does that): its trace could not tell the two apart.
                log.overflow();
            } else {
                log.note(path, facet, field.as_ref());
            }
        }
        field
    }

    fn text(&mut self, bytes: &[u8], what: &'static str) -> Result<String, OutputError> {
        self.charge(bytes.len())?;
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| OutputError::NotUtf8 { what })
    }

    fn charge(&mut self, bytes: usize) -> Result<(), OutputError> {
        self.output.bytes = self.output.bytes.saturating_add(bytes);
        if self.output.bytes > self.output_limit {
            return Err(OutputError::TooLarge { limit: self.output_limit });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Prepared;

    /// The cache of parsed specifiers answers as a fresh parse does, for
    /// more texts than it has slots (so slots are shared and replaced),
    /// again after each was replaced, for texts past its length bound and
    /// for texts that do not parse.
    #[test]
    fn a_cached_specifier_answers_as_a_fresh_parse() {
        let long = format!(">=0.1{}", ",!=9.9".repeat(60));
        let mut texts: Vec<String> = (0..3 * SPECIFIER_SLOTS)
            .map(|i| format!(">={}.{},<{}.0", i % 7, i, i % 7 + 1))
            .collect();
        texts.extend([long, ">=banana".to_owned(), String::new()]);
        let versions: Vec<Version> = ["0.3", "1.200", "5.700.1", "6.0rc1"]
            .iter()
            .map(|v| Version::parse(v).expect("version"))
            .collect();
        for _ in 0..2 {
            for text in &texts {
                let fresh = Specifier::parse(text);
                let cached = with_specifier(text, |parsed| match parsed {
                    Ok(spec) => Ok((
                        spec.as_str().to_owned(),
                        versions.iter().map(|v| spec.contains(v)).collect::<Vec<_>>(),
                    )),
                    Err(e) => Err(e),
                });
                match fresh {
                    Ok(spec) => {
                        let want = (
                            spec.as_str().to_owned(),
                            versions.iter().map(|v| spec.contains(v)).collect::<Vec<_>>(),
                        );
                        assert_eq!(cached, Ok(want), "{text}");
                    }
                    Err(e) => assert_eq!(cached, Err(e), "{text}"),
                }
            }
        }
    }

    fn session(recording: bool) -> Session {
        let m = crate::model::parse_manifest(
            br#"{"manifest_version":1,"host":{"arch":"x86_64"},"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let p = Prepared::new(m);
        if recording {
            Session::recording(p.fields.clone(), 1024)
        } else {
            Session::new(p.fields.clone(), 1024)
        }
    }

    #[test]
    fn a_recording_session_keeps_each_paths_first_read_in_order() {
        let mut s = session(true);
        assert_eq!(s.field_str(b"packages.vllm.version").as_deref(), Ok("0.27.1"));
        assert_eq!(s.field_kind(b"host.arch"), FieldKind::String as i32);
        assert_eq!(s.field_len(b"packages.vllm.version"), status::WRONG_KIND);
        assert!(s.field_num(b"drivers.cuda").is_nan());
        let reads = s.take_reads().expect("recorded");
        let paths: Vec<&[u8]> = reads.iter().map(|(p, _)| &**p).collect();
        assert_eq!(paths, [&b"packages.vllm.version"[..], b"host.arch", b"drivers.cuda"]);
        assert!(reads[2].1.matches(None), "a missing field is observed as missing");
        assert!(!reads[0].1.matches(None));
        assert!(session(false).take_reads().is_none(), "a plain session records nothing");
    }

    /// A path the rule only asked the kind of is observed as that kind
    /// alone, matching any field of the kind; a later call on it that
    /// answers more (here its length) widens the observation to all of it.
    #[test]
    fn a_path_asked_only_its_kind_is_observed_as_its_kind() {
        let mut s = session(true);
        assert_eq!(s.field_kind(b"packages.vllm"), FieldKind::Object as i32);
        assert_eq!(s.field_kind(b"host"), FieldKind::Object as i32);
        assert_eq!(s.field_len(b"host"), 1);
        assert_eq!(s.field_kind(b"packages.torch"), FieldKind::Missing as i32);
        let reads = s.take_reads().expect("recorded");
        let [(_, vllm), (_, host), (_, torch)] = &reads[..] else { panic!("{reads:?}") };
        let other = crate::model::parse_manifest(
            br#"{"manifest_version":1,"host":{"arch":"aarch64","cpu_model":"Neoverse-N1"},"packages":[{"name":"vllm","version":"0.9.0","ecosystem":"pypi"}]}"#,
        )
        .expect("parses");
        let other = Prepared::new(other);
        assert!(vllm.is_kind_only());
        assert!(
            vllm.matches(other.fields.get("packages.vllm").as_ref()),
            "an object of other members"
        );
        assert!(!vllm.matches(other.fields.get("packages.vllm.version").as_ref()), "not an object");
        assert!(!vllm.matches(None), "not there");
        assert!(!host.is_kind_only(), "its length was asked too");
        assert!(!host.matches(other.fields.get("host").as_ref()), "another length");
        assert!(torch.is_kind_only() && torch.matches(None));
        assert!(!torch.matches(other.fields.get("packages.vllm").as_ref()));
    }

    #[test]
    fn a_field_is_observed_alike_only_when_every_call_would_answer_alike() {
        let s = session(false);
        let version = s.fields.get("packages.vllm.version");
        let seen = Observed::of(version.as_ref());
        assert!(seen.matches(version.as_ref()));
        let mut other = version.clone().expect("present");
        other.text = Some(Cow::Borrowed("0.27.2"));
        assert!(!seen.matches(Some(&other)));
        let mut numeric = version.expect("present");
        numeric.number = Some(0.27);
        assert!(!seen.matches(Some(&numeric)), "a number where there was none");
    }

    #[test]
    fn a_version_question_is_answered_and_recorded_as_its_answer() {
        let mut s = session(true);
        let ask =
            |s: &Session, path: &str, spec: &str| s.version_in(path.as_bytes(), spec.as_bytes());
        assert_eq!(ask(&s, "packages.vllm.version", ">=0.20,<0.27.2rc0"), Ok(1));
        assert_eq!(ask(&s, "packages.vllm.version", ">=0.27.2"), Ok(0));
        assert_eq!(ask(&s, "packages.torch.version", ">=2"), Ok(status::MISSING));
        assert_eq!(ask(&s, "packages", ">=2"), Ok(status::WRONG_KIND));
        assert_eq!(ask(&s, "host.arch", ">=2"), Ok(status::NOT_A_VERSION));
        let bad = ask(&s, "packages.vllm.version", ">=banana").expect_err("does not parse");
        assert_eq!(bad.spec, ">=banana");
        assert!(
            ask(&s, "packages.vllm.version", "\u{ff}").is_err(),
            "a specifier that is not PEP 440"
        );
        // Asked again: the first answer is the read.
        assert_eq!(ask(&s, "packages.vllm.version", ">=0.20,<0.27.2rc0"), Ok(1));
        let reads = s.take_reads().expect("recorded");
        assert_eq!(reads.len(), 5, "the four questions and nothing of the fields they looked at");
        let (read, seen) = &reads[0];
        assert_eq!(read[0], PREDICATE);
        assert_eq!(seen.number_bits(), Some(1f64.to_bits()));
        // A replay sees the answer on another manifest: the same for
        // every version the specifier contains.
        let other = |version: &str| {
            let m = crate::model::parse_manifest(
                format!(r#"{{"manifest_version":1,"packages":[{{"name":"vllm","version":"{version}"}}]}}"#).as_bytes(),
            )
            .expect("parses");
            crate::model::Prepared::new(m).fields
        };
        for (version, answer) in [
            ("0.20.0", 1.0),
            ("0.26.3+cu126", 1.0),
            ("0.27.2rc0", 0.0),
            ("0.19", 0.0),
            ("main", -3.0),
        ] {
            let fields = other(version);
            let field = observe(&fields, read).expect("a question this module wrote");
            assert_eq!((field.kind, field.number), (FieldKind::Number, Some(answer)), "{version}");
        }
        assert!(
            observe(&other("0.20.0"), &[PREDICATE, 0, 9, 0]).is_none(),
            "bytes this module did not write"
        );
        assert!(
            observe(&other("0.20.0"), &[PREDICATE, 7, 0, 0, 0, 0]).is_none(),
            "a question this module does not ask"
        );
        assert_eq!(
            observe(&other("0.20.0"), b"packages.vllm.version").and_then(|f| f.text).as_deref(),
            Some("0.20.0")
        );
    }

    #[test]
    fn a_text_question_is_answered_without_case_and_recorded_as_its_answer() {
        let fields = |model: &str| {
            let m = crate::model::parse_manifest(
                format!(r#"{{"manifest_version":1,"workload":{{"model":"{model}","tensor_parallel_size":2}}}}"#).as_bytes(),
            )
            .expect("parses");
            crate::model::Prepared::new(m).fields
        };
        let mut s = Session::recording(fields("google/Gemma-4-E2B-it"), 1 << 16);
        assert_eq!(s.text_contains(b"workload.model", b"gemma-4"), 1);
        assert_eq!(
            s.text_contains(b"workload.model", b"GEMMA-4-e2b"),
            1,
            "the needle's case does not count either"
        );
        assert_eq!(s.text_contains(b"workload.model", b"gemma4"), 0);
        assert_eq!(s.text_contains(b"workload.model", b""), 1, "the empty needle is in every text");
        assert_eq!(s.text_contains(b"workload.quantization", b"awq"), status::MISSING);
        assert_eq!(s.text_contains(b"workload", b"gemma"), status::WRONG_KIND);
        assert_eq!(s.text_contains(b"workload.tensor_parallel_size", b"2"), 1, "a number's text");
        assert_eq!(s.text_contains(b"workload.model", b"\xff\xfe"), 0, "any bytes: not a trap");
        let reads = s.take_reads().expect("recorded");
        assert_eq!(reads.len(), 8, "the questions and nothing of the fields they looked at");
        let (read, seen) = &reads[0];
        assert_eq!(&read[..2], &[PREDICATE, Question::TextContains as u8]);
        assert_eq!(seen.number_bits(), Some(1f64.to_bits()));
        // A replay sees the answer on another manifest: the same for every
        // model id that names the family, and for every one that does not.
        for (model, answer) in
            [("org/gemma-4-31b", 1.0), ("GEMMA-4", 1.0), ("org/model-17", 0.0), ("gemma-3", 0.0)]
        {
            let fields = fields(model);
            let field = observe(&fields, read).expect("a question this module wrote");
            assert_eq!((field.kind, field.number), (FieldKind::Number, Some(answer)), "{model}");
        }
        let missing = crate::model::Prepared::new(
            crate::model::parse_manifest(br#"{"manifest_version":1}"#).expect("parses"),
        )
        .fields;
        assert_eq!(observe(&missing, read).and_then(|f| f.number), Some(-1.0));
    }

    #[test]
    fn a_raw_read_spelled_like_a_question_gives_the_recording_up() {
        let mut s = session(true);
        let spelled = predicate_read(Question::VersionIn, b"packages.vllm.version", b">=0.20")
            .expect("short");
        assert_eq!(s.field_kind(&spelled), FieldKind::Missing as i32);
        assert_eq!(s.version_in(b"packages.vllm.version", b">=0.20"), Ok(1));
        assert!(s.take_reads().is_none());
    }

    #[test]
    fn a_bound_parameter_is_kept_as_its_path() {
        let mut s = session(false);
        s.param(b"v", b"text").expect("fits");
        s.param_field(b"v", b"packages.vllm.version").expect("fits");
        let out = s.take_output();
        assert_eq!(
            out.params[1],
            ("v".to_owned(), ParamValue::Field("packages.vllm.version".to_owned()))
        );
        assert_eq!(out.param_fields().collect::<Vec<_>>(), ["packages.vllm.version"]);
        assert_eq!(s.param_field(b"v", &[0xff]), Err(OutputError::NotUtf8 { what: "param path" }));
    }

    #[test]
    fn a_rule_that_reads_too_many_paths_is_not_recorded() {
        let s = session(true);
        for i in 0..=MAX_RECORDED_READS {
            s.field_kind(format!("env.V{i}").as_bytes());
        }
        let mut s = s;
        assert!(s.take_reads().is_none());
    }
}
