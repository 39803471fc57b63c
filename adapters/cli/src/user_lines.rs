//! Lines the one-shot subcommands (`pi login`, `pi mcp …`, `pi install …`) print for the user: answers on stdout,
//! problems on stderr, each written whole; at start-up, what a `project_trust` handler notifies (stderr, as pi).

use std::io::Write;

/// One line of the command's answer on stdout, flushed at once.
pub(crate) fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// One line on stderr: a warning or why the command failed.
pub(crate) fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
