//! What a rule saw: the reads a recording session keeps for the memo of
//! evaluations (a field's kind, text, number and length, or a question's
//! answer), and how a replay observes the same reads on another manifest.
//! Two manifests whose reads a rule would observe alike give it the same
//! answers to every host call, so it returns the same output: the memo
//! rests on this.

use pitfall_contract::fields::{Field, FieldKind, FieldMap, Source};
use pitfall_contract::session::{Facet, Question, Recorder, text_answer, version_answer_for};

/// The first byte of a recorded read that is a question the host answered
/// (`version_in`, `text_contains`) rather than a field
/// ([`predicate_read`]). Not UTF-8, so no field path starts with it.
pub(crate) const PREDICATE: u8 = 0xFF;

/// The recorded read of asking `question(path, argument)`: [`PREDICATE`],
/// the question's byte, the argument's length (u32, little-endian), the
/// argument, the path.
pub(crate) fn predicate_read(
    question: Question,
    path: &[u8],
    argument: &[u8],
) -> Option<Box<[u8]>> {
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
pub(crate) fn observe<'f>(fields: &'f FieldMap, read: &[u8]) -> Option<Field<'f>> {
    if read.first() != Some(&PREDICATE) {
        return fields.get_bytes(read);
    }
    let question = *read.get(1)?;
    let len = u32::from_le_bytes(read.get(2..6)?.try_into().ok()?) as usize;
    let argument = read.get(6..6usize.checked_add(len)?)?;
    let path = &read[6 + len..];
    let answer = if question == Question::VersionIn as u8 {
        let spec = std::str::from_utf8(argument).ok()?;
        version_answer_for(fields, path, spec)?
    } else if question == Question::TextContains as u8 {
        text_answer(fields, path, argument)
    } else {
        return None;
    };
    Some(answer_field(answer))
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

/// What a rule can observe of one field through the host calls: its
/// kind, text, number and length (not its source, which only the host's
/// rendering of evidence sees). Two manifests whose fields at the paths a
/// rule read are observed alike give that rule the same answers to every
/// call, so it returns the same output: the engine's memo of evaluations
/// rests on this.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observed {
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
    pub(crate) fn of(field: Option<&Field<'_>>) -> Observed {
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
    pub(crate) fn kind_of(field: Option<&Field<'_>>) -> Observed {
        let kind = field.map_or(FieldKind::Missing, |f| f.kind);
        Observed { kind, text: None, number: None, len: 0, kind_only: true }
    }

    /// Whether a rule would see `field` exactly as this.
    #[cfg(test)]
    pub(crate) fn matches(&self, field: Option<&Field<'_>>) -> bool {
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
    pub(crate) fn is_kind_only(&self) -> bool {
        self.kind_only
    }

    /// The kind seen.
    pub(crate) fn kind(&self) -> FieldKind {
        self.kind
    }

    /// The text seen (scalars only).
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The bits of the number seen, if the field was a number.
    pub(crate) fn number_bits(&self) -> Option<u64> {
        self.number
    }

    /// The length seen (elements or members).
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// One path a rule read, first read only, with what it saw there.
pub(crate) type Read = (Box<[u8]>, Observed);

/// Distinct paths a recording session keeps; a rule that reads more is
/// not recorded (its trace would cost more to replay than it saves).
pub(crate) const MAX_RECORDED_READS: usize = 64;

/// The reads of a recording session, in the order the rule made them:
/// the [`Recorder`] of the engine's memo.
#[derive(Debug, Default)]
pub(crate) struct ReadLog {
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

impl ReadLog {
    /// The recorded reads, first read of each path, in order; `None` when
    /// the rule read more than [`MAX_RECORDED_READS`] distinct paths.
    pub(crate) fn into_reads(self) -> Option<Vec<Read>> {
        (!self.overflowed).then_some(self.reads)
    }
}

impl Recorder for ReadLog {
    fn field(&mut self, path: &[u8], facet: Facet, field: Option<&Field<'_>>) {
        if path.first() == Some(&PREDICATE) {
            // Spelled like a recorded question (only a hostile rule does
            // that): its trace could not tell the two apart.
            self.overflow();
        } else {
            self.note(path, facet, field);
        }
    }

    fn answer(&mut self, question: Question, path: &[u8], argument: &[u8], answer: i32) {
        match predicate_read(question, path, argument) {
            Some(read) => self.note(&read, Facet::All, Some(&answer_field(answer))),
            None => self.overflow(),
        }
    }
}

/// An evaluation's session in the engine: its recorder is a [`ReadLog`]
/// when the memo records this evaluation, nothing otherwise.
pub(crate) type EvalSession = pitfall_contract::session::Session<Option<ReadLog>>;

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use pitfall_contract::Prepared;
    use pitfall_contract::session::{Session, status};

    use super::*;

    fn take_reads(s: &mut EvalSession) -> Option<Vec<Read>> {
        s.recorder_mut().take().and_then(ReadLog::into_reads)
    }

    fn session(recording: bool) -> EvalSession {
        let m = pitfall_contract::parse_manifest(
            br#"{"manifest_version":1,"host":{"arch":"x86_64"},"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let p = Prepared::new(m);
        Session::recording(p.fields.clone(), 1024, recording.then(ReadLog::default))
    }

    #[test]
    fn a_recording_session_keeps_each_paths_first_read_in_order() {
        let mut s = session(true);
        assert_eq!(s.field_str(b"packages.vllm.version").as_deref(), Ok("0.27.1"));
        assert_eq!(s.field_kind(b"host.arch"), FieldKind::String as i32);
        assert_eq!(s.field_len(b"packages.vllm.version"), status::WRONG_KIND);
        assert!(s.field_num(b"drivers.cuda").is_nan());
        let reads = take_reads(&mut s).expect("recorded");
        let paths: Vec<&[u8]> = reads.iter().map(|(p, _)| &**p).collect();
        assert_eq!(paths, [&b"packages.vllm.version"[..], b"host.arch", b"drivers.cuda"]);
        assert!(reads[2].1.matches(None), "a missing field is observed as missing");
        assert!(!reads[0].1.matches(None));
        assert!(take_reads(&mut session(false)).is_none(), "a plain session records nothing");
    }

    #[test]
    fn a_path_asked_only_its_kind_is_observed_as_its_kind() {
        let mut s = session(true);
        assert_eq!(s.field_kind(b"packages.vllm"), FieldKind::Object as i32);
        assert_eq!(s.field_kind(b"host"), FieldKind::Object as i32);
        assert_eq!(s.field_len(b"host"), 1);
        assert_eq!(s.field_kind(b"packages.torch"), FieldKind::Missing as i32);
        let reads = take_reads(&mut s).expect("recorded");
        let [(_, vllm), (_, host), (_, torch)] = &reads[..] else { panic!("{reads:?}") };
        let other = pitfall_contract::parse_manifest(
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
        let m = pitfall_contract::parse_manifest(
            br#"{"manifest_version":1,"packages":[{"name":"vllm","version":"0.27.1"}]}"#,
        )
        .expect("parses");
        let fields = Prepared::new(m).fields;
        let version = fields.get("packages.vllm.version");
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
        let ask = |s: &EvalSession, path: &str, spec: &str| {
            s.version_in(path.as_bytes(), spec.as_bytes())
        };
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
        let reads = take_reads(&mut s).expect("recorded");
        assert_eq!(reads.len(), 5, "the four questions and nothing of the fields they looked at");
        let (read, seen) = &reads[0];
        assert_eq!(read[0], PREDICATE);
        assert_eq!(seen.number_bits(), Some(1f64.to_bits()));
        // A replay sees the answer on another manifest: the same for
        // every version the specifier contains.
        let other = |version: &str| {
            let m = pitfall_contract::parse_manifest(
                format!(r#"{{"manifest_version":1,"packages":[{{"name":"vllm","version":"{version}"}}]}}"#).as_bytes(),
            )
            .expect("parses");
            Prepared::new(m).fields
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
            let m = pitfall_contract::parse_manifest(
                format!(r#"{{"manifest_version":1,"workload":{{"model":"{model}","tensor_parallel_size":2}}}}"#).as_bytes(),
            )
            .expect("parses");
            Prepared::new(m).fields
        };
        let mut s =
            Session::recording(fields("google/Gemma-4-E2B-it"), 1 << 16, Some(ReadLog::default()));
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
        let reads = take_reads(&mut s).expect("recorded");
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
        let missing = Prepared::new(
            pitfall_contract::parse_manifest(br#"{"manifest_version":1}"#).expect("parses"),
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
        assert!(take_reads(&mut s).is_none());
    }

    #[test]
    fn a_rule_that_reads_too_many_paths_is_not_recorded() {
        let s = session(true);
        for i in 0..=MAX_RECORDED_READS {
            s.field_kind(format!("env.V{i}").as_bytes());
        }
        let mut s = s;
        assert!(take_reads(&mut s).is_none());
    }
}
