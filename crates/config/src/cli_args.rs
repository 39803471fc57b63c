//! pi's command-line flags: every option of pi 1.6.0's `--help`, plus ours
//! (`--protocol`, `--faux-script`). The `pi` binary parses its command line
//! with this table; pi's `parseArgs` in the extension host answers from it
//! too (`pi_args`).

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Which dialect to speak on stdin/stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Protocol {
    /// Decide from the first record: an `initialize` whose `protocolVersion`
    /// is an integer means ACP; `{"jsonrpc":…}`, a JSON array or
    /// `Content-Length:` framing mean JSON-RPC; anything else the native dialect.
    #[default]
    Auto,
    /// The native pi JSONL dialect.
    Jsonl,
    /// JSON-RPC 2.0.
    Jsonrpc,
    /// The Agent Client Protocol (editors: Zed, JetBrains, Neovim, …).
    Acp,
}

/// pi's output modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The final assistant text on stdout (pi's default outside a terminal; `-p`).
    Text,
    /// Every event as one JSON line on stdout, then exit.
    Json,
    /// Serve commands on stdin (native JSONL or JSON-RPC).
    Rpc,
}

/// pi's TUI layouts (`--tui-mode`): accepted and ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TuiMode {
    Fullscreen,
    Regular,
}

/// pi-rpc: a headless coding-agent server, drop-in for `pi --mode rpc`.
#[derive(Debug, Parser)]
#[command(
    name = "pi",
    version,
    about = "The `pi` binary of pi-rpc: command line, logging, front-end selection.",
    long_about = None,
    disable_version_flag = true
)]
pub struct Args {
    /// Output mode: rpc (the default), json or text (see also --print).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<Mode>,

    /// Dialect on stdin/stdout.
    #[arg(long, value_enum, default_value_t = Protocol::Auto)]
    pub protocol: Protocol,

    /// Non-interactive mode: process the messages (argv, stdin) and print the final text.
    #[arg(long, short = 'p')]
    pub print: bool,

    /// Provider to search for --model (or to pick a model from).
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub provider: Option<String>,

    /// Model pattern or ID (`provider/id` and an optional `:<thinking>` suffix).
    #[arg(long, value_name = "PATTERN", allow_hyphen_values = true)]
    pub model: Option<String>,

    /// Comma-separated model patterns for `cycle_model` (globs, fuzzy, `:<thinking>`).
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',', allow_hyphen_values = true)]
    pub models: Option<Vec<String>>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, value_name = "LEVEL", allow_hyphen_values = true)]
    pub thinking: Option<String>,

    /// API key for the selected provider (defaults to auth.json, models.json, env vars).
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub api_key: Option<String>,

    /// Session display name.
    #[arg(long, short = 'n', value_name = "NAME", allow_hyphen_values = true)]
    pub name: Option<String>,

    /// Don't save the session.
    #[arg(long)]
    pub no_session: bool,

    /// Directory for session storage and lookup.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub session_dir: Option<PathBuf>,

    /// Open a session by file path or full/partial id.
    #[arg(long, value_name = "PATH|ID", allow_hyphen_values = true)]
    pub session: Option<String>,

    /// Use the current directory's session with this id, creating it otherwise.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    pub session_id: Option<String>,

    /// Fork a session (file path or full/partial id) into the current directory.
    #[arg(long, value_name = "PATH|ID", allow_hyphen_values = true)]
    pub fork: Option<String>,

    /// Continue the most recent session for the current directory.
    #[arg(long = "continue", short = 'c')]
    pub continue_session: bool,

    /// pi's interactive session picker: not available headless (an error).
    #[arg(long, short = 'r')]
    pub resume: bool,

    /// Comma-separated tool names or patterns (`*`) to enable (`+name`/`-name` edit the defaults).
    #[arg(long, short = 't', value_name = "TOOLS", value_delimiter = ',', allow_hyphen_values = true)]
    pub tools: Option<Vec<String>>,

    /// Comma-separated tool names or patterns (`*`) to disable, extension and MCP tools included. Alias: -xt.
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', allow_hyphen_values = true)]
    pub exclude_tools: Option<Vec<String>>,

    /// Disable all tools (built-in and extension). Alias: -nt.
    #[arg(long)]
    pub no_tools: bool,

    /// Disable the built-in tools but keep extension tools. Alias: -nbt.
    #[arg(long)]
    pub no_builtin_tools: bool,

    /// System prompt (text or a file path) replacing the default.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub system_prompt: Option<String>,

    /// Text or file appended to the system prompt (repeatable).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub append_system_prompt: Vec<String>,

    /// Don't load AGENTS.md / CLAUDE.md context files into the system prompt. Alias: -nc.
    #[arg(long)]
    pub no_context_files: bool,

    /// Export a session file to HTML and exit (the output path is the first message argument).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub export: Option<PathBuf>,

    /// List the available models (optionally fuzzy-filtered) and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,

    /// Disable MCP support: no servers connect and no MCP tools.
    #[arg(long)]
    pub no_mcp: bool,

    /// Ask the client before `write`, `edit` and `bash` run (seed dialects:
    /// an extension UI `select`; setting `toolApproval`). ACP always asks.
    #[arg(long)]
    pub tool_approval: bool,

    /// Disable startup network operations (in pi-rpc: RPC mode's listing of a llama.cpp server's models).
    #[arg(long)]
    pub offline: bool,

    /// Debug logging on stderr (RUST_LOG overrides).
    #[arg(long)]
    pub verbose: bool,

    /// Print the version number and exit.
    #[arg(long, short = 'v')]
    pub version: bool,

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

    /// pi's TUI: load a theme (accepted and ignored).
    #[arg(long = "theme", value_name = "PATH")]
    pub themes: Vec<String>,

    /// pi's TUI: initial theme (accepted and ignored).
    #[arg(long, value_name = "NAME")]
    pub use_theme: Option<String>,

    /// pi's TUI: disable theme discovery (accepted and ignored).
    #[arg(long)]
    pub no_themes: bool,

    /// pi's TUI layout (accepted and ignored).
    #[arg(long, value_enum, value_name = "MODE")]
    pub tui_mode: Option<TuiMode>,

    /// Messages for --print / --mode json (`@path` attaches a file).
    #[arg(value_name = "MESSAGES")]
    pub messages: Vec<String>,

    /// Options pi does not know, kept for the extensions' flags
    /// (`registerFlag`): `(name, value)`, no value for a bare `--name`
    /// ([`split_extension_flags`]).
    #[arg(skip)]
    pub extension_flags: Vec<(String, Option<String>)>,
}

impl Args {
    /// Combinations pi refuses, with pi's messages.
    pub fn check(&self) -> Result<(), String> {
        if self.resume {
            return Err("--resume opens pi's interactive session picker, which a headless pi-rpc does not have: \
                 use --session <path|id> or --continue"
                .to_string());
        }
        let given = |set: bool, flag: &'static str| set.then_some(flag);
        if self.fork.is_some() {
            let clash: Vec<&str> = [
                given(self.session.is_some(), "--session"),
                given(self.continue_session, "--continue"),
                given(self.no_session, "--no-session"),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !clash.is_empty() {
                return Err(format!("--fork cannot be combined with {}", clash.join(", ")));
            }
        }
        if let Some(id) = &self.session_id {
            let clash: Vec<&str> =
                [given(self.session.is_some(), "--session"), given(self.continue_session, "--continue")]
                    .into_iter()
                    .flatten()
                    .collect();
            if !clash.is_empty() {
                return Err(format!("--session-id cannot be combined with {}", clash.join(", ")));
            }
            if !valid_session_id(id) {
                return Err("Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', \
                     and start and end with an alphanumeric character"
                    .to_string());
            }
        }
        if self.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err("--name requires a non-empty value".to_string());
        }
        Ok(())
    }

    /// Say (at debug level) which of pi's terminal-UI options were ignored.
    pub fn log_ignored(&self) {
        let ignored = [
            (!self.themes.is_empty(), "--theme"),
            (self.use_theme.is_some(), "--use-theme"),
            (self.no_themes, "--no-themes"),
            (self.tui_mode.is_some(), "--tui-mode"),
        ];
        for (_, flag) in ignored.iter().filter(|(set, _)| *set) {
            tracing::debug!("{flag} only affects pi's terminal UI; ignored");
        }
    }

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

/// pi's rule for `--session-id`: alphanumerics, `-`, `_`, `.`, starting and
/// ending with an alphanumeric.
fn valid_session_id(id: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    id.chars().all(ok)
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
}

/// Options whose next argument is their value, whatever it looks like.
const TAKES_VALUE: &[&str] = &[
    "--provider",
    "--model",
    "--models",
    "--api-key",
    "--system-prompt",
    "--append-system-prompt",
    "--name",
    "-n",
    "--session",
    "--session-id",
    "--fork",
    "--session-dir",
    "--tools",
    "-t",
    "--exclude-tools",
    "-xt",
    "--thinking",
    "--export",
    "--extension",
    "-e",
    "--skill",
    "--prompt-template",
    "--theme",
];

/// pi's multi-letter short flags (`-ne`, `-ns`, `-np`, `-na`, `-nt`, `-nc`,
/// `-nbt`, `-xt`), which clap cannot declare, rewritten to their long forms
/// (before clap would read `-nc` as `-n c`).
pub fn normalize_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut rest_literal = false;
    let mut value_next = false;
    for arg in args {
        if rest_literal || std::mem::take(&mut value_next) {
            out.push(arg);
            continue;
        }
        // The value of an option is never rewritten (`--name -nc` names the session "-nc").
        value_next = arg.to_str().is_some_and(|a| TAKES_VALUE.contains(&a));
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
            Some("-nc") => Some("--no-context-files"),
            Some("-nbt") => Some("--no-builtin-tools"),
            Some("-xt") => Some("--exclude-tools"),
            _ => None,
        };
        out.push(long.map_or(arg, std::ffi::OsString::from));
    }
    out
}

/// Take out of `argv` the options pi-rpc does not know, as pi keeps them
/// for the extensions' flags (pi 1.6.0's `parseArgs`): `--name=value`, or
/// `--name value` when the next argument starts with neither `-` nor `@`,
/// else `--name` alone. What they mean is decided once the extensions
/// registered their flags. The values of known options are never looked at.
pub fn split_extension_flags(
    argv: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<(String, Option<String>)>) {
    use clap::CommandFactory;
    use std::collections::HashMap;
    /// Whether a known option takes the next argument as its value.
    #[derive(Clone, Copy)]
    enum Takes {
        Nothing,
        Value,
        MaybeValue,
    }
    let command = Args::command();
    let mut long: HashMap<String, Takes> = HashMap::from([("help".to_string(), Takes::Nothing)]);
    let mut short: HashMap<char, Takes> = HashMap::from([('h', Takes::Nothing)]);
    for arg in command.get_arguments() {
        let optional = arg.get_num_args().is_some_and(|range| range.min_values() == 0);
        let takes = match (arg.get_action().takes_values(), optional) {
            (false, _) => Takes::Nothing,
            (true, false) => Takes::Value,
            (true, true) => Takes::MaybeValue,
        };
        for name in arg.get_long().into_iter().chain(arg.get_all_aliases().into_iter().flatten()) {
            long.insert(name.to_string(), takes);
        }
        if let Some(c) = arg.get_short() {
            short.insert(c, takes);
        }
    }
    let mut kept = Vec::new();
    let mut flags = Vec::new();
    let mut rest = argv.into_iter().peekable();
    kept.extend(rest.next());
    while let Some(arg) = rest.next() {
        let text = arg.to_str().map(str::to_string);
        let Some(text) = text else {
            kept.push(arg);
            continue;
        };
        if text == "--" {
            kept.push(arg);
            kept.extend(rest);
            break;
        }
        let takes = if let Some(body) = text.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (body, None),
            };
            match long.get(name) {
                Some(_) if inline.is_some() => Takes::Nothing,
                Some(takes) => *takes,
                None => {
                    let value = match inline {
                        Some(value) => Some(value.to_string()),
                        None => rest
                            .next_if(|next| next.to_str().is_some_and(|n| !n.starts_with('-') && !n.starts_with('@')))
                            .and_then(|next| next.into_string().ok()),
                    };
                    flags.push((name.to_string(), value));
                    continue;
                }
            }
        } else {
            let mut chars = text.chars();
            match (chars.next(), chars.next(), chars.next()) {
                (Some('-'), Some(c), None) => short.get(&c).copied().unwrap_or(Takes::Nothing),
                _ => Takes::Nothing,
            }
        };
        kept.push(arg);
        match takes {
            Takes::Nothing => {}
            Takes::Value => kept.extend(rest.next()),
            Takes::MaybeValue => kept.extend(rest.next_if(|next| next.to_str().is_some_and(|n| !n.starts_with('-')))),
        }
    }
    (kept, flags)
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

    #[test]
    fn unknown_options_are_kept_for_extension_flags_as_pi_parses_them() {
        let argv = [
            "pi",
            "--mode",
            "rpc",
            "--plan",
            "--preset=fast",
            "-e",
            "odd.ts",
            "--name",
            "--not-a-flag",
            "--level",
            "high",
            "--quiet",
            "-e",
            "x.ts",
            "--at",
            "@file",
            "--list-models",
            "--also",
        ];
        let (kept, flags) = split_extension_flags(argv.iter().map(std::ffi::OsString::from).collect());
        let kept: Vec<&str> = kept.iter().filter_map(|a| a.to_str()).collect();
        assert_eq!(
            kept,
            ["pi", "--mode", "rpc", "-e", "odd.ts", "--name", "--not-a-flag", "-e", "x.ts", "@file", "--list-models"]
        );
        let some = |v: &str| Some(v.to_string());
        assert_eq!(
            flags,
            [
                ("plan".to_string(), None),
                ("preset".to_string(), some("fast")),
                ("level".to_string(), some("high")),
                ("quiet".to_string(), None),
                ("at".to_string(), None),
                ("also".to_string(), None),
            ]
        );
        let args = Args::parse_from(kept);
        assert_eq!((args.extensions.len(), args.name.as_deref()), (2, Some("--not-a-flag")));
        let (kept, flags) =
            split_extension_flags(["pi", "--", "--plan"].iter().map(std::ffi::OsString::from).collect());
        assert_eq!((kept.len(), flags.len()), (3, 0));
    }
}
