//! Standard output for every subcommand. A reader that closes it early (a pager, `head`)
//! ends semfuzz quietly with exit code 0, as if it were done; any other failure to write is
//! ignored, as `println!` would report it only by panicking.

use std::io::{ErrorKind, Write};

/// Writes `args` to standard output (flushed: a status line shows at once).
pub fn write(args: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.flush());
    if let Err(e) = written
        && e.kind() == ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}
