//! Writing to standard output the way a Unix tool does: when the reader
//! goes away (`pitfall check m.json | head -1`), the command stops quietly
//! instead of panicking as `println!` does on a broken pipe.

use std::fmt;
use std::io::{self, Write};

/// The exit status of a process killed by SIGPIPE (128 + 13), which is what
/// a shell with `pipefail` expects from a writer whose reader has gone.
const BROKEN_PIPE_STATUS: i32 = 141;

/// Writes `args` to standard output. A broken pipe ends the process with
/// status 141 and no message; any other write error is reported on stderr
/// with the CLI's failure status (2).
pub(crate) fn write(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(BROKEN_PIPE_STATUS);
        }
        eprintln!("pitfall: error: writing to standard output: {e}");
        std::process::exit(2);
    }
}
