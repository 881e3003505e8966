//! Progress of a long batch on stderr: a line rewritten in place on a
//! terminal; when asked for (`--progress`) and stderr is a file or a pipe,
//! a line each tenth of the way. Never on stdout, which scripts parse.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// A terminal line is rewritten at most this often.
const REDRAW: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct Progress {
    enabled: bool,
    terminal: bool,
    total: usize,
    drawn_at: Option<Instant>,
    logged: usize,
}

impl Progress {
    /// Shown for more than one manifest when stderr is a terminal (unless
    /// quiet), or whenever `forced`.
    pub(crate) fn new(forced: bool, quiet: bool, total: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let enabled = total > 1 && (forced || (terminal && !quiet));
        Progress { enabled, terminal, total, drawn_at: None, logged: 0 }
    }

    /// `done` of the manifests are answered.
    pub(crate) fn update(&mut self, done: usize) {
        if !self.enabled {
            return;
        }
        let finished = done >= self.total;
        let mut err = std::io::stderr().lock();
        if self.terminal {
            if finished || self.drawn_at.is_none_or(|t| t.elapsed() >= REDRAW) {
                let _ = write!(err, "\rchecked {done}/{} manifests", self.total);
                if finished {
                    let _ = writeln!(err);
                }
                let _ = err.flush();
                self.drawn_at = Some(Instant::now());
            }
        } else if finished || done >= self.logged + (self.total / 10).max(1) {
            let _ = writeln!(err, "checked {done}/{} manifests", self.total);
            self.logged = done;
        }
        if finished {
            self.enabled = false;
        }
    }
}
