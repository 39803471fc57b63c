//! pi's command-line flags: the table lives in pi-config (`cli_args`), where
//! the extension host's `parseArgs` reads it too.

pub use pi_config::cli_args::*;
