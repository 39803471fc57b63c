//! Scenario files: one JSON document per case, in `scenarios/<dialect>/`.
//!
//! ```json
//! {
//!   "description": "What the case shows",
//!   "deviation": "Why the reference pi 1.6.0 differs (optional)",
//!   "setup": { "session": "dir", "args": [], "api": "openai-completions",
//!              "model": {}, "settings": {}, "files": {"hello.txt": "hi\n"} },
//!   "model": { "replies": [ {"text": "Hello"} ], "markers": [], "fallback": null },
//!   "steps": [ {"send": {"id": "p", "type": "prompt", "message": "Hi"}},
//!              {"waitFor": {"type": "agent_settled"}} ],
//!   "expect": [ {"contains": {"id": "p", "type": "response", "success": true}} ]
//! }
//! ```
//! See `compat/README.md` for every step, rule and pattern.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::fake_server::Script;

/// A scenario as read from its file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// File stem; filled in by the loader.
    #[serde(skip)]
    pub name: String,
    /// What the case shows (one or two sentences).
    pub description: String,
    /// Why the reference pi 1.6.0 behaves differently; such scenarios are
    /// expected to fail in the reference profile.
    #[serde(default)]
    pub deviation: Option<String>,
    /// Free-form labels (`concurrency`, `framing`, `session`, …).
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub setup: Setup,
    /// The fake model server's script.
    #[serde(default)]
    pub model: Option<Value>,
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub expect: Vec<Rule>,
    /// Overall time limit (default 30 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl Scenario {
    /// The fake server script of this scenario.
    pub fn script(&self) -> Result<Script, String> {
        match &self.model {
            None => Ok(Script::default()),
            Some(v) => Script::from_json(&v.to_string()).map_err(|e| format!("bad model script: {e}")),
        }
    }
}

/// Where sessions go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionMode {
    /// `--session-dir <sandbox>/sessions`.
    #[default]
    Dir,
    /// `--no-session`.
    None,
    /// Neither flag: the agent's default location (under the sandbox's agent dir).
    Default,
}

/// The sandbox and command line of a scenario.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Setup {
    #[serde(default)]
    pub session: SessionMode,
    /// Extra arguments after the agent command line.
    #[serde(default)]
    pub args: Vec<String>,
    /// Wire API of the fake provider: `openai-completions` (default) or `anthropic-messages`.
    #[serde(default)]
    pub api: Option<String>,
    /// Fields merged into the default model `fake-model`.
    #[serde(default)]
    pub model: Map<String, Value>,
    /// Replace the whole model list of the `fake` provider.
    #[serde(default)]
    pub models: Option<Vec<Value>>,
    /// Write no `models.json` and no default model settings (no usable model).
    #[serde(default)]
    pub no_models: bool,
    /// Configure the `fake` provider without an API key.
    #[serde(default)]
    pub no_api_key: bool,
    /// Merged into the default `settings.json`.
    #[serde(default)]
    pub settings: Map<String, Value>,
    /// Files to create: relative paths land in the cwd; `@agent/…`, `@home/…`,
    /// `@sessions/…` and `@sandbox/…` in those directories. Strings are
    /// written as they are, other JSON values as JSON (one line), arrays of
    /// objects as JSONL when the path ends in `.jsonl`; `${url}` is the fake
    /// model server (`http://127.0.0.1:PORT`).
    #[serde(default)]
    pub files: BTreeMap<String, Value>,
    /// Files to mark executable.
    #[serde(default)]
    pub executable: Vec<String>,
}

/// One step of a scenario, run in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Send this JSON value as one line (`${name}` strings are replaced by captures).
    #[serde(default)]
    pub send: Option<Value>,
    /// Send this text exactly (no newline added).
    #[serde(default)]
    pub send_raw: Option<String>,
    /// Send these bytes (base64).
    #[serde(default)]
    pub send_base64: Option<String>,
    /// Send `prefix`, then `fill` repeated `times` times, then `suffix`.
    #[serde(default)]
    pub send_repeat: Option<Repeat>,
    /// Wait for an output line matching this pattern (after the cursor).
    #[serde(default)]
    pub wait_for: Option<Value>,
    /// With `waitFor`: scan from the first line instead of the cursor.
    #[serde(default)]
    pub from_start: bool,
    /// With `waitFor`: JSON pointers into the raw matching line to remember.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// With `waitFor`: time limit (default 15 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Pause.
    #[serde(default)]
    pub sleep_ms: Option<u64>,
    /// Wait until the fake server has received this many requests.
    #[serde(default)]
    pub wait_requests: Option<usize>,
    /// Close the agent's stdin.
    #[serde(default)]
    pub close_stdin: bool,
    /// Send a signal (`TERM`, `INT`, `HUP`).
    #[serde(default)]
    pub signal: Option<String>,
    /// Create or overwrite a file (same path forms as `setup.files`).
    #[serde(default)]
    pub write_file: Option<WriteFile>,
    /// Free text for the reader.
    #[serde(default)]
    pub note: Option<String>,
}

/// A long input line.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    #[serde(default)]
    pub prefix: String,
    pub fill: String,
    pub times: usize,
    #[serde(default)]
    pub suffix: String,
}

/// A file written during the scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    pub path: String,
    pub content: Value,
}

/// A check of what was observed; exactly one of the main keys is set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// The lines (those matching `where`, or all) match these patterns one to one, in order.
    #[serde(default)]
    pub lines: Option<Vec<Value>>,
    /// These patterns match lines in this order (other lines may come between).
    #[serde(default)]
    pub sequence: Option<Vec<Value>>,
    /// Some line matches.
    #[serde(default)]
    pub contains: Option<Value>,
    /// No line matches.
    #[serde(default)]
    pub none: Option<Value>,
    /// Lines matching this pattern are counted (`equals`, `min`, `max`).
    #[serde(default)]
    pub count: Option<Value>,
    #[serde(default)]
    pub equals: Option<usize>,
    #[serde(default)]
    pub min: Option<usize>,
    #[serde(default)]
    pub max: Option<usize>,
    /// Restrict `lines`/`sequence` to the lines matching this pattern.
    #[serde(rename = "where", default)]
    pub filter: Option<Value>,
    /// The agent's exit code.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Number of session files (`*.jsonl` under the sessions directory).
    #[serde(default)]
    pub session_files: Option<usize>,
    /// Rules over the lines of a session file.
    #[serde(default)]
    pub session: Option<SessionRule>,
    /// Rules over the requests the fake model server received
    /// (`{"method","path","headers","body"}` each).
    #[serde(default)]
    pub requests: Option<Vec<Rule>>,
    /// A file's content (path forms as in `setup.files`).
    #[serde(default)]
    pub file: Option<FileRule>,
    /// The agent's stderr (sandbox paths normalised) contains this text.
    #[serde(default)]
    pub stderr: Option<String>,
    /// Free text for the reader.
    #[serde(default)]
    pub note: Option<String>,
}

/// Which session file, and the rules over its lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRule {
    /// `only` (default: exactly one file), `newest`, `oldest`, or an index in name order.
    #[serde(default)]
    pub file: Option<Value>,
    pub rules: Vec<Rule>,
}

/// A file check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRule {
    pub path: String,
    /// The whole content.
    #[serde(default)]
    pub equals: Option<String>,
    /// A part of the content.
    #[serde(default)]
    pub contains: Option<String>,
    /// Whether the file exists.
    #[serde(default)]
    pub exists: Option<bool>,
}

/// Load every `*.json` scenario in `dir`, sorted by name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> =
        read.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    paths.sort();
    paths.iter().map(|p| load_file(p)).collect()
}

/// Load one scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut s: Scenario = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    s.name = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    s.script().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(s)
}
