//! The crate's errors: [`ParseError`] says why one text is not what a
//! parser reads; [`Error`] is what the crate's entry points return.

use std::fmt::Display;

/// Why a text is not what a parser reads (one sentence, for people).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub(crate) String);

pub(crate) type Result<T> = std::result::Result<T, ParseError>;

/// `return Err(ParseError(format!(...)))`.
macro_rules! fail {
    ($($arg:tt)*) => {
        return Err($crate::error::ParseError(format!($($arg)*)))
    };
}
pub(crate) use fail;

/// Adds what was expected to a lower-level error or a missing value.
pub(crate) trait Context<T> {
    fn context(self, what: &str) -> Result<T>;
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: &str) -> Result<T> {
        self.map_err(|e| ParseError(format!("{what}: {e}")))
    }
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ParseError(format!("{}: {e}", what())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: &str) -> Result<T> {
        self.ok_or_else(|| ParseError(what.to_owned()))
    }
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| ParseError(what()))
    }
}

/// Why no manifest could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A source the caller named is not the text it should be.
    #[error("{origin}: not {what}: {problem}")]
    Source {
        /// The file or command the text came from.
        origin: String,
        /// What it should have been, e.g. "the CSV of `nvidia-smi --query-gpu`".
        what: &'static str,
        /// Why not.
        problem: ParseError,
    },
    /// The serve command (`vllm serve ...`, `python -m sglang.launch_server ...`).
    #[error("the serve command: {0}")]
    Command(ParseError),
}
