//! What a rule returns: clear, matched (with evidence, parameters and the
//! remedies that apply) or undetermined (with the fields it needs).
//!
//! Each builder method reports to the host at once, so building an outcome
//! allocates nothing.

use crate::abi;

/// `pitfall_evaluate`'s return codes.
pub mod code {
    /// Nothing to report.
    pub const CLEAR: i32 = 0;
    /// The breakage applies.
    pub const MATCHED: i32 = 1;
    /// A needed field is missing.
    pub const UNDETERMINED: i32 = 2;
}

/// A rule's conclusion about one manifest.
#[must_use = "return the outcome from the rule"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome(i32);

impl Outcome {
    /// The breakage does not apply.
    pub fn clear() -> Outcome {
        Outcome(code::CLEAR)
    }

    /// The breakage applies; add evidence and parameters with the builder methods.
    pub fn matched() -> Outcome {
        Outcome(code::MATCHED)
    }

    /// The rule cannot decide; name what it needs with [`Outcome::missing`].
    pub fn undetermined() -> Outcome {
        Outcome(code::UNDETERMINED)
    }

    /// Undetermined because the field at `path` is missing: the client
    /// can collect it. For a field that is there but unusable use
    /// [`Outcome::unreadable`] ([`crate::view::Unanswered::outcome`] picks).
    pub fn needs(path: &str) -> Outcome {
        Outcome::undetermined().missing(path)
    }

    /// Undetermined because the field at `path` is there but the rule
    /// cannot use it (a version that is not PEP 440). The host reports it
    /// as unreadable, with its value and why, not as missing: the client
    /// has to correct it, not collect it. (On the wire it is the same
    /// `missing` call: the host tells the two apart by whether the field
    /// is there, so modules built before this method get the same report.)
    pub fn unreadable(path: &str) -> Outcome {
        Outcome::undetermined().missing(path)
    }

    /// Offers the manifest field at `path` as evidence; the host records its value
    /// and whether it came from the client or from the hardware table.
    pub fn evidence(self, path: &str) -> Outcome {
        abi::evidence(path);
        self
    }

    /// Sets parameter `key`, used by `{key}` in the message and remedies.
    pub fn param(self, key: &str, value: &str) -> Outcome {
        abi::param(key, value);
        self
    }

    /// Sets parameter `key` to the text of the field at `path`, filled in
    /// by the host when it renders the finding: the rule quotes a value it
    /// need not read (a version it only asked `version_in` about), so the
    /// registry can reuse its outcome for other values.
    pub fn param_field(self, key: &str, path: &str) -> Outcome {
        abi::param_field(key, path);
        self
    }

    /// Sets an integer parameter.
    pub fn param_int(self, key: &str, value: i64) -> Outcome {
        let mut buf = [0u8; 24];
        abi::param(key, crate::text::format_int(value, &mut buf));
        self
    }

    /// Sets a decimal parameter rounded to `decimals` places (at most 6).
    pub fn param_decimal(self, key: &str, value: f64, decimals: u32) -> Outcome {
        let mut buf = [0u8; 48];
        abi::param(key, crate::text::format_decimal(value, decimals, &mut buf));
        self
    }

    /// Selects remedy `index` of the metadata; when none is selected, all apply.
    pub fn remedy(self, index: u32) -> Outcome {
        abi::remedy(index);
        self
    }

    /// Names a field the rule needs (for undetermined outcomes); the host
    /// reports it as missing when the manifest lacks it, else as
    /// unreadable.
    pub fn missing(self, path: &str) -> Outcome {
        abi::missing(path);
        self
    }

    /// The ABI return code.
    pub fn code(self) -> i32 {
        self.0
    }
}

/// What a rule's `evaluate` may return: an [`Outcome`], or a `Result` whose
/// error is the early outcome (usually from [`crate::view::Manifest::need`]).
pub trait IntoOutcome {
    /// The outcome.
    fn into_outcome(self) -> Outcome;
}

impl IntoOutcome for Outcome {
    fn into_outcome(self) -> Outcome {
        self
    }
}

impl IntoOutcome for Result<Outcome, Outcome> {
    fn into_outcome(self) -> Outcome {
        match self {
            Ok(o) | Err(o) => o,
        }
    }
}
