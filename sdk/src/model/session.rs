//! The host side of the ABI's calls, shared by the engine (behind wasmtime)
//! and by the SDK's native test harness (behind plain function calls), so a
//! rule sees the same answers in `cargo test` as in the registry.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use super::fields::{Field, FieldKind, FieldMap};

/// Status codes of `field_str` and `field_len` (negative results).
pub mod status {
    /// The field does not exist.
    pub const MISSING: i32 = -1;
    /// The field exists but has the wrong kind for this call.
    pub const WRONG_KIND: i32 = -2;
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
    pub params: Vec<(String, String)>,
    /// Indices of the metadata's remedies that apply; empty means all.
    pub remedies: Vec<u32>,
    /// Bytes reported so far (paths, keys, values, 4 per remedy index).
    pub bytes: usize,
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
}

impl Observed {
    /// What a lookup that found `field` (or nothing) lets a rule see.
    pub fn of(field: Option<&Field<'_>>) -> Observed {
        match field {
            None => Observed { kind: FieldKind::Missing, text: None, number: None, len: 0 },
            Some(f) => Observed {
                kind: f.kind,
                text: f.text.as_deref().map(Box::from),
                number: f.number.map(f64::to_bits),
                len: f.len,
            },
        }
    }

    /// Whether a rule would see `field` exactly as this.
    pub fn matches(&self, field: Option<&Field<'_>>) -> bool {
        match field {
            None => self.kind == FieldKind::Missing,
            Some(f) => {
                f.kind == self.kind
                    && f.len == self.len
                    && f.number.map(f64::to_bits) == self.number
                    && f.text.as_deref() == self.text.as_deref()
            }
        }
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

/// The reads of a recording session, in the order the rule made them.
#[derive(Debug, Default)]
struct ReadLog {
    reads: Vec<Read>,
    /// More distinct paths than [`MAX_RECORDED_READS`] were read.
    overflowed: bool,
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
        self.lookup(path).map_or(FieldKind::Missing as i32, |f| f.kind as i32)
    }

    /// `field_len`: elements of an array or members of an object.
    pub fn field_len(&self, path: &[u8]) -> i32 {
        match self.lookup(path) {
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
        match self.lookup(path) {
            Some(f) => f.number.or_else(|| f.text.as_deref().and_then(|t| t.trim().parse().ok())).unwrap_or(f64::NAN),
            None => f64::NAN,
        }
    }

    /// `field_str`: a scalar as text, or the status for missing / not scalar.
    pub fn field_str(&self, path: &[u8]) -> Result<Cow<'_, str>, i32> {
        match self.lookup(path) {
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
        self.output.params.push((key, value));
        Ok(())
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

    fn lookup(&self, path: &[u8]) -> Option<Field<'_>> {
        let field = self.fields.get_bytes(path);
        if let Some(log) = &self.log {
            let mut log = log.borrow_mut();
            // A path read again reads the same value: only the first counts.
            if !log.overflowed && !log.reads.iter().any(|(p, _)| **p == *path) {
                if log.reads.len() == MAX_RECORDED_READS {
                    log.overflowed = true;
                    log.reads = Vec::new();
                } else {
                    log.reads.push((path.into(), Observed::of(field.as_ref())));
                }
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

    fn session(recording: bool) -> Session {
        let m = crate::model::parse_manifest(
            br#"{"manifest_version":1,"host":{"arch":"x86_64"},"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let p = Prepared::new(m);
        if recording { Session::recording(p.fields.clone(), 1024) } else { Session::new(p.fields.clone(), 1024) }
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
    fn a_rule_that_reads_too_many_paths_is_not_recorded() {
        let s = session(true);
        for i in 0..=MAX_RECORDED_READS {
            s.field_kind(format!("env.V{i}").as_bytes());
        }
        let mut s = s;
        assert!(s.take_reads().is_none());
    }
}
