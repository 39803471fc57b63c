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
}
