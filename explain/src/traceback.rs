//! Python exception chains: which lines of a log are the exceptions, and
//! which of them is the cause.
//!
//! In a traceback the frames come first and the exception line last
//! (`ValueError: ...`); that line carries the cause. When one exception
//! leads to another, Python prints both, joined by "The above exception
//! was the direct cause of the following exception:" (or "During handling
//! of the above exception, another exception occurred:"): the first one is
//! the root cause, and frameworks often end on a generic one ("Engine core
//! initialization failed. See root cause above").

use crate::normalize::Log;

/// How much a line says about the cause, as a weight on what matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Any other line: a log message, a warning, a frame.
    Other,
    /// An exception raised because of another one.
    Consequence,
    /// The root of an exception chain, or a lone traceback's exception.
    RootCause,
}

impl Role {
    /// The weight a match on a line of this role gets.
    pub fn weight(self) -> f64 {
        match self {
            Role::RootCause => 1.0,
            Role::Consequence => 0.96,
            Role::Other => 0.92,
        }
    }
}

const DIRECT_CAUSE: &str = "The above exception was the direct cause of the following exception";
const DURING_HANDLING: &str = "During handling of the above exception, another exception occurred";

/// Each distinct line's role (by position in `log.lines`), read in the
/// user's order; a line that appears in several places takes its most
/// telling role.
pub fn roles(log: &Log) -> Vec<Role> {
    let mut roles = vec![Role::Other; log.lines.len()];
    // The chain being read: its exceptions so far, by line index.
    let mut chain: Vec<usize> = Vec::new();
    let mut linked = false;
    let mut in_frames = false;
    for &i in &log.order {
        let text = log.lines[i].text.as_str();
        if text.starts_with(DIRECT_CAUSE) || text.starts_with(DURING_HANDLING) {
            linked = true;
            continue;
        }
        if text.starts_with("Traceback (most recent call last)") {
            if !linked {
                close(&chain, &mut roles);
                chain.clear();
            }
            linked = false;
            in_frames = true;
            continue;
        }
        if in_frames && (text.starts_with("File \"") || text.starts_with('^')) {
            continue;
        }
        if is_exception_line(text) {
            chain.push(i);
            in_frames = false;
        }
    }
    close(&chain, &mut roles);
    roles
}

/// Marks a finished chain: its first exception is the root cause, the rest
/// its consequences.
fn close(chain: &[usize], roles: &mut [Role]) {
    if let Some((&first, rest)) = chain.split_first() {
        roles[first] = Role::RootCause;
        for &i in rest {
            roles[i] = roles[i].max(Role::Consequence);
        }
    }
}

/// `ValueError: ...`, `torch.OutOfMemoryError: ...`,
/// `_pickle.UnpicklingError: ...`, `KeyboardInterrupt`.
pub fn is_exception_line(text: &str) -> bool {
    let head = text.split_once(':').map_or(text, |(h, _)| h);
    if head.is_empty() || head.contains(char::is_whitespace) {
        return false;
    }
    let name = head.rsplit('.').next().unwrap_or(head);
    let starts_well = head.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && ["Error", "Exception", "Interrupt", "Exit", "Warning", "Failure"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// The text of an exception line after its class, when the line is one:
/// `CUDA out of memory.` for `torch.OutOfMemoryError: CUDA out of memory.`.
pub fn exception_message(text: &str) -> Option<&str> {
    if !is_exception_line(text) {
        return None;
    }
    text.split_once(": ").map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::normalize;

    #[test]
    fn a_chain_roots_at_its_first_exception() {
        let log = "\
Traceback (most recent call last):
  File \"/x/core.py\", line 10, in run
    self.init()
ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File \"/x/api.py\", line 3, in main
RuntimeError: Engine core initialization failed. See root cause above.
INFO: shutting down";
        let n = normalize(log);
        let roles = roles(&n);
        let of = |prefix: &str| {
            let i = n.lines.iter().position(|l| l.text.starts_with(prefix)).expect("line");
            roles[i]
        };
        assert_eq!(of("ValueError"), Role::RootCause);
        assert_eq!(of("RuntimeError"), Role::Consequence);
        assert_eq!(of("INFO"), Role::Other);
        assert_eq!(of("File"), Role::Other);
    }

    #[test]
    fn separate_tracebacks_each_have_a_root() {
        let log = "Traceback (most recent call last):\nKeyError: 'a'\nTraceback (most recent call last):\nOSError: b";
        let n = normalize(log);
        assert_eq!(roles(&n), [Role::Other, Role::RootCause, Role::RootCause]);
    }

    #[test]
    fn exception_lines() {
        for yes in [
            "ValueError: x",
            "torch.OutOfMemoryError: CUDA out of memory.",
            "_pickle.UnpicklingError: Weights only load failed.",
            "KeyboardInterrupt",
        ] {
            assert!(is_exception_line(yes), "{yes}");
        }
        for no in ["INFO: fine", "File \"x\", line 1", "Error in model execution", "ERROR: pip"] {
            assert!(!is_exception_line(no), "{no}");
        }
        assert_eq!(exception_message("RuntimeError: CUDA error: x"), Some("CUDA error: x"));
    }
}
