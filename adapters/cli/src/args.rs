//! pi's command-line flags (the subset that matters for `--mode rpc`).

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Which dialect to speak on stdin/stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Protocol {
    /// Decide from the first record: `{"jsonrpc":…}`, a JSON array or
    /// `Content-Length:` framing mean JSON-RPC; anything else the native dialect.
    #[default]
    Auto,
    /// The native pi JSONL dialect.
    Jsonl,
    /// JSON-RPC 2.0.
    Jsonrpc,
}

/// pi-rpc: a headless coding-agent server, drop-in for `pi --mode rpc`.
#[derive(Debug, Parser)]
#[command(name = "pi", version, about, long_about = None)]
pub struct Args {
    /// Output mode; only `rpc` is served (and is the default).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,

    /// Dialect on stdin/stdout.
    #[arg(long, value_enum, default_value_t = Protocol::Auto)]
    pub protocol: Protocol,

    /// Provider to search for --model (or to pick a model from).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// Model pattern or ID (`provider/id` and an optional `:<thinking>` suffix).
    #[arg(long, value_name = "PATTERN")]
    pub model: Option<String>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,

    /// API key for the selected provider (defaults to auth.json, models.json, env vars).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,

    /// Session display name.
    #[arg(long, short = 'n', value_name = "NAME")]
    pub name: Option<String>,

    /// Don't save the session.
    #[arg(long)]
    pub no_session: bool,

    /// Directory for session storage and lookup.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Open a session by file path or full/partial id.
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,

    /// Continue the most recent session for the current directory.
    #[arg(long = "continue", short = 'c')]
    pub continue_session: bool,

    /// Comma-separated tool names to enable (`+name`/`-name` edit the defaults).
    #[arg(long, short = 't', value_name = "TOOLS", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,

    /// Disable all tools.
    #[arg(long)]
    pub no_tools: bool,

    /// Comma-separated tool names or `*` patterns to disable, MCP tools included. Alias: -xt.
    #[arg(long, value_name = "TOOLS", value_delimiter = ',')]
    pub exclude_tools: Vec<String>,

    /// Don't connect MCP servers for this run.
    #[arg(long)]
    pub no_mcp: bool,

    /// System prompt (text or a file path) replacing the default.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Text or file appended to the system prompt (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,

    /// Disable startup network operations (pi-rpc makes none; accepted for compatibility).
    #[arg(long)]
    pub offline: bool,

    /// Debug logging on stderr (RUST_LOG overrides).
    #[arg(long)]
    pub verbose: bool,

    /// Script of replies for the offline `faux` model (JSONL; see README).
    #[arg(long, value_name = "FILE", env = "PI_FAUX_SCRIPT")]
    pub faux_script: Option<PathBuf>,

    /// Load an extension (an executable or a .py/.sh/.js script, or a
    /// directory with an entry point); repeatable. See README-extensions.md.
    #[arg(long = "extension", short = 'e', value_name = "PATH")]
    pub extensions: Vec<String>,

    /// Disable extension discovery (explicit --extension paths still load). Alias: -ne.
    #[arg(long)]
    pub no_extensions: bool,

    /// Load a skill file or directory (repeatable).
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<String>,

    /// Disable skills discovery (explicit --skill paths still load). Alias: -ns.
    #[arg(long)]
    pub no_skills: bool,

    /// Load a prompt template file or directory (repeatable).
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_templates: Vec<String>,

    /// Disable prompt template discovery (explicit --prompt-template paths still load). Alias: -np.
    #[arg(long)]
    pub no_prompt_templates: bool,

    /// Trust project-local files (.pi/ resources and extensions) for this run.
    #[arg(long, short = 'a', conflicts_with = "no_approve")]
    pub approve: bool,

    /// Ignore trust-gated project-local files for this run. Alias: -na.
    #[arg(long)]
    pub no_approve: bool,
}

impl Args {
    /// `--approve` / `--no-approve` as a trust override.
    pub fn trust_override(&self) -> Option<bool> {
        if self.approve {
            Some(true)
        } else if self.no_approve {
            Some(false)
        } else {
            None
        }
    }
}

/// pi's two-letter short flags (`-ne`, `-ns`, `-np`, `-na`, `-nt`), which clap
/// cannot declare, rewritten to their long forms.
pub fn normalize_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut rest_literal = false;
    for arg in args {
        if rest_literal {
            out.push(arg);
            continue;
        }
        let long = match arg.to_str() {
            Some("--") => {
                rest_literal = true;
                None
            }
            Some("-ne") => Some("--no-extensions"),
            Some("-ns") => Some("--no-skills"),
            Some("-np") => Some("--no-prompt-templates"),
            Some("-na") => Some("--no-approve"),
            Some("-nt") => Some("--no-tools"),
            Some("-xt") => Some("--exclude-tools"),
            _ => None,
        };
        out.push(long.map_or(arg, std::ffi::OsString::from));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn resource_flags_and_short_aliases() {
        let argv = ["pi", "-e", "a.py", "--extension", "b", "-ne", "--skill", "s", "-ns", "-np", "-na"];
        let args = Args::parse_from(normalize_args(argv.iter().map(std::ffi::OsString::from)));
        assert_eq!(args.extensions, ["a.py", "b"]);
        assert!(args.no_extensions && args.no_skills && args.no_prompt_templates && args.no_approve);
        assert_eq!(args.skills, ["s"]);
        assert_eq!(args.trust_override(), Some(false));
        let args = Args::parse_from(["pi", "-a", "--prompt-template", "t.md"]);
        assert_eq!((args.trust_override(), args.prompt_templates.as_slice()), (Some(true), &["t.md".to_string()][..]));
    }
}
