//! The `pi` binary: parses the command line and serves one front end over stdio.

fn main() {}
