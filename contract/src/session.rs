//! The host side of the ABI's calls, shared by the engine (behind wasmtime)
//! and by the SDK's native test harness (behind plain function calls), so a
//! rule sees the same answers in `cargo test` as in the registry.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::fields::{Field, FieldKind, FieldMap};
use pitfall_version::{Specifier, Version, VersionError};

/// Negative results of `field_len`, `field_str`, `version_in` and
/// `text_contains` (ABI.md §4.1); the SDK's `abi::status` spells the same
/// numbers on the guest's side.
pub mod status {
    /// The field does not exist.
    pub const MISSING: i32 = -1;
    /// The field exists but has the wrong kind for this call.
    pub const WRONG_KIND: i32 = -2;
    /// `version_in`: the field's text is not a version.
    pub const NOT_A_VERSION: i32 = -3;
}

/// A question the host answers (rather than a field it hands over): what
/// a [`Recorder`] is told a rule asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Question {
    /// `version_in(path, spec)`: the argument is the specifier.
    VersionIn = 0,
    /// `text_contains(path, needle)`: the argument is the needle.
    TextContains = 1,
}

/// What a host call answers of the field it looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facet {
    /// The kind alone (`field_kind`).
    Kind,
    /// Anything: its length, number or text (every other call).
    All,
}

/// Told of every read a rule makes through a [`Session`]: the engine's
/// memo records them (what the rule saw decides what it answers); the
/// native harness records nothing (`()`).
pub trait Recorder {
    /// A host call looked up the field at `path` and answered `facet` of it.
    fn field(&mut self, path: &[u8], facet: Facet, field: Option<&Field<'_>>);
    /// A host call answered `question(path, argument)` with `answer`.
    fn answer(&mut self, question: Question, path: &[u8], argument: &[u8], answer: i32);
}

impl Recorder for () {
    fn field(&mut self, _: &[u8], _: Facet, _: Option<&Field<'_>>) {}
    fn answer(&mut self, _: Question, _: &[u8], _: &[u8], _: i32) {}
}

/// A recorder for some evaluations only: `None` records nothing.
impl<R: Recorder> Recorder for Option<R> {
    fn field(&mut self, path: &[u8], facet: Facet, field: Option<&Field<'_>>) {
        if let Some(recorder) = self {
            recorder.field(path, facet, field);
        }
    }

    fn answer(&mut self, question: Question, path: &[u8], argument: &[u8], answer: i32) {
        if let Some(recorder) = self {
            recorder.answer(question, path, argument, answer);
        }
    }
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

/// `version_in`'s answer on `fields` for a specifier given as text, parsed
/// through this thread's cache (a replay asks a recorded question again);
/// `None` when the text does not parse.
pub fn version_answer_for(fields: &FieldMap, path: &[u8], spec: &str) -> Option<i32> {
    with_specifier(spec, |parsed| Some(version_answer(fields, path, parsed.ok()?)))
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

/// Whether [`SPECIFIERS`] is used: on unless a benchmark pricing it
/// turns it off ([`set_specifier_cache`]).
static SPECIFIER_CACHE: AtomicBool = AtomicBool::new(true);

/// Turns the per-thread cache of parsed specifiers on or off for the
/// whole process (on by default); off, every `version_in` question parses
/// its specifier. For `pitfall-bench --ablate`, which prices it.
pub fn set_specifier_cache(on: bool) {
    SPECIFIER_CACHE.store(on, Ordering::Relaxed);
}

/// Calls `f` with `text` parsed as a specifier, from this thread's cache
/// when it parsed the same text before.
fn with_specifier<R>(text: &str, f: impl FnOnce(Result<&Specifier, VersionError>) -> R) -> R {
    if text.len() > CACHED_SPECIFIER_MAX || !SPECIFIER_CACHE.load(Ordering::Relaxed) {
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

/// One evaluation's view of the manifest and its output so far, telling
/// its [`Recorder`] of every read.
#[derive(Debug)]
pub struct Session<R: Recorder = ()> {
    fields: Arc<FieldMap>,
    output: RawOutput,
    output_limit: usize,
    /// Lookups take `&self` (the host calls borrow the field's text from
    /// the session while they copy it), hence the cell.
    recorder: RefCell<R>,
}

impl Session {
    /// A session over `fields` whose output may not exceed `output_limit`
    /// bytes, recording nothing.
    pub fn new(fields: Arc<FieldMap>, output_limit: usize) -> Session {
        Session::recording(fields, output_limit, ())
    }
}

impl<R: Recorder> Session<R> {
    /// A session that tells `recorder` of every read.
    pub fn recording(fields: Arc<FieldMap>, output_limit: usize, recorder: R) -> Session<R> {
        Session {
            fields,
            output: RawOutput::default(),
            output_limit,
            recorder: RefCell::new(recorder),
        }
    }

    /// The recorder, to read what it kept.
    pub fn recorder_mut(&mut self) -> &mut R {
        self.recorder.get_mut()
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

    /// Tells the recorder of a question and its answer.
    fn note_answer(&self, question: Question, path: &[u8], argument: &[u8], answer: i32) {
        self.recorder.borrow_mut().answer(question, path, argument, answer);
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
        self.recorder.borrow_mut().field(path, facet, field.as_ref());
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
    use crate::Prepared;

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

    /// A path the rule only asked the kind of is observed as that kind
    /// alone, matching any field of the kind; a later call on it that
    /// answers more (here its length) widens the observation to all of it.
    #[test]
    fn a_bound_parameter_is_kept_as_its_path() {
        let m = crate::parse_manifest(
            br#"{"manifest_version":1,"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let mut s = Session::new(Prepared::new(m).fields, 1024);
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
}
