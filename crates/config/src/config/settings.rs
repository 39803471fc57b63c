//! `settings.json`: user (agent dir) and project (`.pi/`) settings, merged, and
//! the few values pi persists back when a client changes them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ConfigError;
use crate::model::{ThinkingBudgets, ThinkingLevel};
use crate::op::QueueMode;

/// Compaction settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Free context tokens below which automatic compaction starts.
    pub reserve_tokens: u64,
    /// Recent tokens kept without summarisation.
    pub keep_recent_tokens: u64,
    /// `compaction.modelOverrides["provider/id"]`: per-model token settings.
    pub model_overrides: std::collections::BTreeMap<String, CompactionOverride>,
}

/// Token settings of one model that override the general ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionOverride {
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
            model_overrides: Default::default(),
        }
    }
}

impl CompactionSettings {
    /// `(reserveTokens, keepRecentTokens)` for the model `provider/id`:
    /// its override, else the general setting (pi's `getCompactionSettings(model)`).
    pub fn tokens_for(&self, model_key: &str) -> (u64, u64) {
        let o = self.model_overrides.get(model_key).copied().unwrap_or_default();
        (o.reserve_tokens.unwrap_or(self.reserve_tokens), o.keep_recent_tokens.unwrap_or(self.keep_recent_tokens))
    }
}

/// Auto-retry settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetrySettings {
    pub enabled: bool,
    pub max_retries: u32,
    pub base_delay_ms: u64,
    /// Upper bound of one backoff delay (also caps `retry-after`).
    pub max_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings { enabled: true, max_retries: 3, base_delay_ms: 2000, max_delay_ms: 60_000 }
    }
}

impl RetrySettings {
    /// The wait before retry `attempt` (from 1): the server's `retry-after`
    /// when it gave one, else `base * 2^(attempt-1)`; capped at `max_delay_ms`.
    /// The one backoff of runs and summaries alike.
    pub fn delay(&self, attempt: u32, retry_after: Option<std::time::Duration>) -> std::time::Duration {
        let cap = std::time::Duration::from_millis(self.max_delay_ms.max(1));
        if let Some(after) = retry_after {
            return after.min(cap);
        }
        let factor = 1u64.checked_shl(attempt.saturating_sub(1)).unwrap_or(u64::MAX);
        std::time::Duration::from_millis(self.base_delay_ms.saturating_mul(factor)).min(cap)
    }
}

/// The settings pi-rpc uses, after merging user and project files.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub default_thinking_level: Option<ThinkingLevel>,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub compaction: CompactionSettings,
    /// `branchSummary.reserveTokens`: the context tokens a branch summary
    /// leaves free (pi's default 16,384); the abandoned branch's messages
    /// get the model's context window less these.
    pub branch_summary_reserve_tokens: u64,
    pub retry: RetrySettings,
    /// `defaultTools`: plain names replace the defaults; `+name`/`-name` edit them.
    pub default_tools: Option<Vec<String>>,
    /// `enabledModels`: the model patterns of the scope when `--models` is
    /// not given (pi's `cycle_model` scope and `ctx.scopedModels`).
    pub enabled_models: Option<Vec<String>>,
    pub session_dir: Option<String>,
    pub skills: Vec<String>,
    pub prompts: Vec<String>,
    pub extensions: Vec<String>,
    pub enable_skill_commands: bool,
    /// Idle timeout of provider HTTP streams (0 disables it).
    pub http_idle_timeout_ms: u64,
    /// `httpProxy` of the global settings (pi reads it there only): the
    /// proxy where `HTTP_PROXY`/`HTTPS_PROXY` are unset.
    pub http_proxy: Option<String>,
    /// `enableInstallTelemetry` (default on): in pi it also turns the
    /// providers' attribution headers on; pi-rpc sends no telemetry.
    pub enable_install_telemetry: bool,
    pub shell_path: Option<String>,
    pub shell_command_prefix: Option<String>,
    /// `images.autoResize` (default on): whether the `read` tool resizes images to pi's limits.
    pub image_auto_resize: bool,
    /// `images.blockImages` (default off): each image of the conversation
    /// goes to the model as a note instead.
    pub block_images: bool,
    /// `toolApproval`: which tool calls need the user's approval.
    pub tool_approval: ApprovalSettings,
    /// `transport` of the Codex backend (`auto` when unset; a file's legacy
    /// `websockets: true | false` without `transport` is `websocket` | `sse`).
    pub transport: Option<String>,
    /// `thinkingBudgets`: the main session's thinking token budget per level
    /// (pi hands them to every model request of the agent).
    pub thinking_budgets: ThinkingBudgets,
    /// `cacheWarming` of the global settings (pi reads it there only).
    pub cache_warming: CacheWarmingMode,
    /// `codemode.mode` (pi: `"only"`, else `"on"`; any string is kept here).
    pub codemode_mode: Option<String>,
    /// `codemode.inlineBudget`: estimated tokens codemode's description may
    /// spend on tool declarations (a finite number ≥ 0; others are ignored).
    pub codemode_inline_budget: Option<f64>,
}

/// `cacheWarming`: keep prompt caches warm never (`off`), during runs
/// (`streaming`), or during runs and up to 30 minutes between them (`idle`,
/// the default). Another value is the default, as in pi.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheWarmingMode {
    Off,
    Streaming,
    #[default]
    Idle,
}

impl CacheWarmingMode {
    /// A settings value: pi's default for anything it does not name.
    pub fn from_value(value: Option<&Value>) -> CacheWarmingMode {
        match value.and_then(Value::as_str) {
            Some("off") => CacheWarmingMode::Off,
            Some("streaming") => CacheWarmingMode::Streaming,
            _ => CacheWarmingMode::Idle,
        }
    }
}

/// `toolApproval` in settings: `enabled` (seed dialects; ACP asks by
/// default), `default` and per-tool `tools` rules (`allow`, `ask`, `deny`;
/// names or `*` patterns).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovalSettings {
    pub enabled: Option<bool>,
    pub default: Option<crate::client::Rule>,
    pub tools: Vec<(String, crate::client::Rule)>,
}

impl ApprovalSettings {
    /// The policy: on when `enabled` says so (else `on_by_default`); the
    /// settings' rules first, then asking before `write`, `edit`, `bash`.
    pub fn policy(&self, on_by_default: bool) -> crate::client::ApprovalPolicy {
        let mut policy = crate::client::ApprovalPolicy::ask_before_changes();
        policy.enabled = self.enabled.unwrap_or(on_by_default);
        if let Some(default) = self.default {
            policy.default = default;
        }
        let mut tools = self.tools.clone();
        tools.append(&mut policy.tools);
        policy.tools = tools;
        policy
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_provider: None,
            default_model: None,
            default_thinking_level: None,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            compaction: CompactionSettings::default(),
            branch_summary_reserve_tokens: 16384,
            retry: RetrySettings::default(),
            default_tools: None,
            enabled_models: None,
            session_dir: None,
            skills: Vec::new(),
            prompts: Vec::new(),
            extensions: Vec::new(),
            enable_skill_commands: true,
            http_idle_timeout_ms: 300_000,
            http_proxy: None,
            enable_install_telemetry: true,
            shell_path: None,
            shell_command_prefix: None,
            image_auto_resize: true,
            block_images: false,
            tool_approval: ApprovalSettings::default(),
            transport: None,
            thinking_budgets: ThinkingBudgets::default(),
            cache_warming: CacheWarmingMode::default(),
            codemode_mode: None,
            codemode_inline_budget: None,
        }
    }
}

/// The raw file shape; every field optional so a partial file merges cleanly.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsFile {
    default_provider: Option<String>,
    default_model: Option<String>,
    default_thinking_level: Option<String>,
    steering_mode: Option<String>,
    follow_up_mode: Option<String>,
    compaction: Option<CompactionFile>,
    branch_summary: Option<BranchSummaryFile>,
    retry: Option<RetryFile>,
    default_tools: Option<Vec<String>>,
    enabled_models: Option<Vec<String>>,
    session_dir: Option<String>,
    skills: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    extensions: Option<Vec<String>>,
    enable_skill_commands: Option<bool>,
    http_idle_timeout_ms: Option<Value>,
    http_proxy: Option<String>,
    enable_install_telemetry: Option<bool>,
    shell_path: Option<String>,
    shell_command_prefix: Option<String>,
    images: Option<Value>,
    tool_approval: Option<ToolApprovalFile>,
    transport: Option<Value>,
    websockets: Option<Value>,
    thinking_budgets: Option<Value>,
    cache_warming: Option<Value>,
    codemode: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolApprovalFile {
    enabled: Option<bool>,
    default: Option<String>,
    /// Kept in file order (first match wins).
    tools: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BranchSummaryFile {
    reserve_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CompactionFile {
    enabled: Option<bool>,
    reserve_tokens: Option<u64>,
    keep_recent_tokens: Option<u64>,
    model_overrides: Option<std::collections::BTreeMap<String, CompactionOverride>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryFile {
    enabled: Option<bool>,
    max_retries: Option<u32>,
    base_delay_ms: Option<u64>,
    max_agent_delay_ms: Option<u64>,
}

/// `budgets` with the levels `file` gives (a number each) over them.
fn merged_budgets(budgets: ThinkingBudgets, file: &Value) -> ThinkingBudgets {
    let given = ThinkingBudgets::from_value(file);
    ThinkingBudgets {
        minimal: given.minimal.or(budgets.minimal),
        low: given.low.or(budgets.low),
        medium: given.medium.or(budgets.medium),
        high: given.high.or(budgets.high),
    }
}

impl Settings {
    /// Whether pi's built-in extension `name` (`mcp`, `llama.cpp`, …) is on:
    /// the last `builtin:<name>` / `+builtin:<name>` / `-builtin:<name>` entry
    /// of `extensions` (project entries come after the user's) decides; on by default.
    pub fn builtin_extension_enabled(&self, name: &str) -> bool {
        let wanted = format!("builtin:{name}");
        self.extensions
            .iter()
            .rev()
            .find_map(|entry| match entry.strip_prefix('-') {
                Some(rest) if rest == wanted => Some(false),
                _ if entry.trim_start_matches('+') == wanted => Some(true),
                _ => None,
            })
            .unwrap_or(true)
    }

    /// Load `<agent_dir>/settings.json` then `<cwd>/.pi/settings.json` on top.
    /// Missing files are fine; a broken file is an error naming it.
    pub fn load(agent_dir: &Path, cwd: &Path) -> Result<Settings, ConfigError> {
        let mut settings = Settings::default();
        for (global, path) in [(true, user_settings_path(agent_dir)), (false, cwd.join(".pi").join("settings.json"))] {
            if let Some(mut file) = read_settings_file(&path)? {
                if global {
                    settings.http_proxy = file.http_proxy.take();
                    settings.cache_warming = CacheWarmingMode::from_value(file.cache_warming.as_ref());
                }
                settings.apply(file, &path)?;
            }
        }
        Ok(settings)
    }

    fn apply(&mut self, f: SettingsFile, path: &Path) -> Result<(), ConfigError> {
        let bad = |field: &str, msg: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!("{field}: {msg}"),
        };
        if let Some(v) = f.default_provider {
            self.default_provider = Some(v);
        }
        if let Some(v) = f.default_model {
            self.default_model = Some(v);
        }
        if let Some(v) = f.default_thinking_level {
            self.default_thinking_level = Some(
                v.parse()
                    .map_err(|e: crate::model::ParseThinkingLevelError| bad("defaultThinkingLevel", e.to_string()))?,
            );
        }
        if let Some(v) = f.steering_mode {
            self.steering_mode = v.parse().map_err(|e: String| bad("steeringMode", e))?;
        }
        if let Some(v) = f.follow_up_mode {
            self.follow_up_mode = v.parse().map_err(|e: String| bad("followUpMode", e))?;
        }
        if let Some(c) = f.compaction {
            self.compaction.enabled = c.enabled.unwrap_or(self.compaction.enabled);
            self.compaction.reserve_tokens = c.reserve_tokens.unwrap_or(self.compaction.reserve_tokens);
            self.compaction.keep_recent_tokens = c.keep_recent_tokens.unwrap_or(self.compaction.keep_recent_tokens);
            for (model, o) in c.model_overrides.unwrap_or_default() {
                let entry = self.compaction.model_overrides.entry(model).or_default();
                entry.reserve_tokens = o.reserve_tokens.or(entry.reserve_tokens);
                entry.keep_recent_tokens = o.keep_recent_tokens.or(entry.keep_recent_tokens);
            }
        }
        if let Some(reserve) = f.branch_summary.and_then(|b| b.reserve_tokens) {
            self.branch_summary_reserve_tokens = reserve;
        }
        if let Some(r) = f.retry {
            self.retry.enabled = r.enabled.unwrap_or(self.retry.enabled);
            self.retry.max_retries = r.max_retries.unwrap_or(self.retry.max_retries);
            self.retry.base_delay_ms = r.base_delay_ms.unwrap_or(self.retry.base_delay_ms);
            self.retry.max_delay_ms = r.max_agent_delay_ms.unwrap_or(self.retry.max_delay_ms);
        }
        if let Some(tools) = f.default_tools {
            self.default_tools = Some(apply_tool_edits(self.default_tools.take(), tools));
        }
        if let Some(patterns) = f.enabled_models {
            self.enabled_models = Some(patterns);
        }
        if let Some(v) = f.session_dir {
            self.session_dir = Some(v);
        }
        self.skills.extend(f.skills.unwrap_or_default());
        self.prompts.extend(f.prompts.unwrap_or_default());
        self.extensions.extend(f.extensions.unwrap_or_default());
        if let Some(v) = f.enable_skill_commands {
            self.enable_skill_commands = v;
        }
        match f.http_idle_timeout_ms {
            None => {}
            Some(Value::String(s)) if s == "disabled" => self.http_idle_timeout_ms = 0,
            Some(Value::Number(n)) if n.as_u64().is_some() => self.http_idle_timeout_ms = n.as_u64().unwrap_or(0),
            Some(other) => {
                return Err(bad("httpIdleTimeoutMs", format!("expected a number or \"disabled\", got {other}")));
            }
        }
        if let Some(v) = f.enable_install_telemetry {
            self.enable_install_telemetry = v;
        }
        // Values of other types are left out (pi's settings schema refuses them).
        match (f.transport.as_ref().and_then(Value::as_str), f.websockets.as_ref().and_then(Value::as_bool)) {
            (Some(t), _) => self.transport = Some(t.to_string()),
            (None, Some(on)) if f.transport.is_none() => {
                self.transport = Some(if on { "websocket" } else { "sse" }.to_string());
            }
            _ => {}
        }
        // pi merges the files deeply: a project's level goes over the user's.
        if let Some(budgets) = f.thinking_budgets.as_ref().filter(|v| v.is_object()) {
            self.thinking_budgets = merged_budgets(self.thinking_budgets, budgets);
        }
        // pi merges the files deeply: each of a project's `codemode` fields goes over the user's.
        if let Some(codemode) = f.codemode.as_ref().and_then(Value::as_object) {
            if let Some(mode) = codemode.get("mode").and_then(Value::as_str) {
                self.codemode_mode = Some(mode.to_string());
            }
            if let Some(budget) = codemode.get("inlineBudget") {
                self.codemode_inline_budget = budget.as_f64().filter(|b| b.is_finite() && *b >= 0.0);
            }
        }
        if let Some(v) = f.shell_path {
            self.shell_path = Some(v);
        }
        if let Some(v) = f.shell_command_prefix {
            self.shell_command_prefix = Some(v);
        }
        // pi merges the files deeply: a project's `images.autoResize` goes over the user's.
        if let Some(v) = f.images.as_ref().and_then(|i| i.get("autoResize")).and_then(Value::as_bool) {
            self.image_auto_resize = v;
        }
        if let Some(v) = f.images.as_ref().and_then(|i| i.get("blockImages")).and_then(Value::as_bool) {
            self.block_images = v;
        }
        if let Some(a) = f.tool_approval {
            let rule = |field: &str, v: &str| v.parse().map_err(|e: String| bad(field, e));
            if let Some(v) = a.enabled {
                self.tool_approval.enabled = Some(v);
            }
            if let Some(v) = a.default {
                self.tool_approval.default = Some(rule("toolApproval.default", &v)?);
            }
            // A later file's rules come first (they override the earlier ones).
            let mut rules = Vec::new();
            for (name, v) in a.tools.unwrap_or_default() {
                let field = format!("toolApproval.tools.{name}");
                let text = v.as_str().ok_or_else(|| bad(&field, format!("expected a string, got {v}")))?;
                rules.push((name, rule(&field, text)?));
            }
            rules.append(&mut self.tool_approval.tools);
            self.tool_approval.tools = rules;
        }
        Ok(())
    }
}

/// Resolve a tool list: plain names replace the inherited selection; a list of
/// only `+name`/`-name` entries edits it.
pub fn apply_tool_edits(inherited: Option<Vec<String>>, list: Vec<String>) -> Vec<String> {
    let only_edits = !list.is_empty() && list.iter().all(|t| t.starts_with('+') || t.starts_with('-'));
    let mut out: Vec<String> = if only_edits {
        inherited.unwrap_or_else(|| crate::tools::DEFAULT_ACTIVE_TOOLS.iter().map(|s| s.to_string()).collect())
    } else {
        list.iter().filter(|t| !t.starts_with('+') && !t.starts_with('-')).cloned().collect()
    };
    for item in &list {
        if let Some(name) = item.strip_prefix('+') {
            if !out.iter().any(|t| t == name) {
                out.push(name.to_string());
            }
        } else if let Some(name) = item.strip_prefix('-') {
            out.retain(|t| t != name);
        }
    }
    out
}

/// Path of the user settings file.
pub fn user_settings_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("settings.json")
}

fn read_settings_file(path: &Path) -> Result<Option<SettingsFile>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::Io { path: path.to_path_buf(), source: e }),
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() })
}

/// Set one (possibly nested, dot-separated) key in the user settings file,
/// keeping everything else in it. pi persists queue modes and the auto toggles.
pub fn persist_setting(agent_dir: &Path, key: &str, value: Value) -> Result<(), ConfigError> {
    let path = user_settings_path(agent_dir);
    let mut root: Map<String, Value> = match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
            .map_err(|e| ConfigError::Parse { path: path.clone(), message: e.to_string() })?,
        Ok(_) => Map::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(ConfigError::Io { path, source: e }),
    };
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut cursor = &mut root;
    for part in parts {
        let slot = cursor.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        cursor = match slot {
            Value::Object(m) => m,
            _ => return Ok(()),
        };
    }
    cursor.insert(last.to_string(), value);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ConfigError::Io { path: dir.to_path_buf(), source: e })?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
    write_atomically(&path, format!("{text}\n").as_bytes()).map_err(|e| ConfigError::Io { path, source: e })
}

/// Write a file through a temporary sibling and a rename, so readers never see half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_honours_retry_after() {
        use std::time::Duration;
        let settings = RetrySettings { enabled: true, max_retries: 3, base_delay_ms: 2000, max_delay_ms: 60_000 };
        assert_eq!(settings.delay(1, None), Duration::from_millis(2000));
        assert_eq!(settings.delay(2, None), Duration::from_millis(4000));
        assert_eq!(settings.delay(3, None), Duration::from_millis(8000));
        assert_eq!(settings.delay(7, None), Duration::from_secs(60));
        assert_eq!(settings.delay(1, Some(Duration::from_secs(7))), Duration::from_secs(7));
        assert_eq!(settings.delay(1, Some(Duration::from_secs(600))), Duration::from_secs(60));
    }

    #[test]
    fn builtin_extensions_are_on_unless_the_last_entry_turns_them_off() {
        let with = |entries: &[&str]| Settings {
            extensions: entries.iter().map(|e| e.to_string()).collect(),
            ..Settings::default()
        };
        assert!(with(&[]).builtin_extension_enabled("mcp"));
        assert!(!with(&["-builtin:mcp"]).builtin_extension_enabled("mcp"));
        assert!(with(&["-builtin:llama.cpp"]).builtin_extension_enabled("mcp"));
        assert!(with(&["-builtin:mcp", "+builtin:mcp"]).builtin_extension_enabled("mcp"));
        assert!(!with(&["builtin:mcp", "-builtin:mcp"]).builtin_extension_enabled("mcp"));
    }

    #[test]
    fn project_settings_override_user_settings() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            agent.path().join("settings.json"),
            r#"{"steeringMode":"all","retry":{"maxRetries":5},"defaultModel":"a","thinkingBudgets":{"low":100,"high":900},"images":{"autoResize":false,"blockImages":true}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        std::fs::write(
            cwd.path().join(".pi/settings.json"),
            r#"{"defaultModel":"b","compaction":{"enabled":false},"thinkingBudgets":{"high":500},"images":{}}"#,
        )
        .unwrap();
        let s = Settings::load(agent.path(), cwd.path()).unwrap();
        assert_eq!(s.steering_mode, QueueMode::All);
        assert_eq!(s.retry.max_retries, 5);
        assert_eq!(s.retry.base_delay_ms, 2000);
        assert_eq!(s.default_model.as_deref(), Some("b"));
        assert!(!s.compaction.enabled);
        assert_eq!(s.compaction.tokens_for("any/model"), (16384, 20000));
        // Deeply merged, as pi merges the files.
        assert_eq!(s.thinking_budgets, ThinkingBudgets { low: Some(100), high: Some(500), ..Default::default() });
        assert!(!s.image_auto_resize && Settings::default().image_auto_resize);
        assert!(s.block_images && !Settings::default().block_images);
    }

    #[test]
    fn cache_warming_is_read_from_the_user_settings_only() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().cache_warming, CacheWarmingMode::Idle);
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        std::fs::write(cwd.path().join(".pi/settings.json"), r#"{"cacheWarming":"off"}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().cache_warming, CacheWarmingMode::Idle);
        std::fs::write(agent.path().join("settings.json"), r#"{"cacheWarming":"streaming"}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().cache_warming, CacheWarmingMode::Streaming);
        std::fs::write(agent.path().join("settings.json"), r#"{"cacheWarming":"sometimes"}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().cache_warming, CacheWarmingMode::Idle);
    }

    #[test]
    fn transport_and_the_legacy_websockets_flag() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let load = |global: &str, project: Option<&str>| {
            std::fs::write(agent.path().join("settings.json"), global).unwrap();
            std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
            std::fs::write(cwd.path().join(".pi/settings.json"), project.unwrap_or("{}")).unwrap();
            Settings::load(agent.path(), cwd.path()).unwrap().transport
        };
        assert_eq!(load("{}", None), None);
        assert_eq!(load(r#"{"transport":"sse"}"#, None).as_deref(), Some("sse"));
        assert_eq!(load(r#"{"websockets":false}"#, None).as_deref(), Some("sse"));
        assert_eq!(load(r#"{"websockets":true}"#, None).as_deref(), Some("websocket"));
        assert_eq!(
            load(r#"{"transport":"websocket-cached","websockets":false}"#, None).as_deref(),
            Some("websocket-cached")
        );
        assert_eq!(load(r#"{"transport":"sse"}"#, Some(r#"{"transport":"websocket"}"#)).as_deref(), Some("websocket"));
        assert_eq!(load(r#"{"transport":7}"#, None), None, "a value of another type is left out");
    }

    #[test]
    fn codemode_settings_merge_per_field() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().codemode_mode, None);
        std::fs::write(agent.path().join("settings.json"), r#"{"codemode":{"mode":"only","inlineBudget":500}}"#)
            .unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        std::fs::write(cwd.path().join(".pi/settings.json"), r#"{"codemode":{"inlineBudget":0}}"#).unwrap();
        let s = Settings::load(agent.path(), cwd.path()).unwrap();
        assert_eq!(s.codemode_mode.as_deref(), Some("only"), "the project keeps the user's mode");
        assert_eq!(s.codemode_inline_budget, Some(0.0), "and sets its own budget");
        std::fs::write(cwd.path().join(".pi/settings.json"), r#"{"codemode":{"inlineBudget":-5}}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().codemode_inline_budget, None);
    }

    #[test]
    fn branch_summary_reserve_tokens_default_and_override() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().branch_summary_reserve_tokens, 16384);
        std::fs::write(agent.path().join("settings.json"), r#"{"branchSummary":{"reserveTokens":4000}}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().branch_summary_reserve_tokens, 4000);
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        std::fs::write(cwd.path().join(".pi/settings.json"), r#"{"branchSummary":{"skipPrompt":true}}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().branch_summary_reserve_tokens, 4000);
        std::fs::write(cwd.path().join(".pi/settings.json"), r#"{"branchSummary":{"reserveTokens":900}}"#).unwrap();
        assert_eq!(Settings::load(agent.path(), cwd.path()).unwrap().branch_summary_reserve_tokens, 900);
    }

    #[test]
    fn compaction_model_overrides_merge_per_field() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            agent.path().join("settings.json"),
            r#"{"compaction":{"keepRecentTokens":9000,"modelOverrides":{"p/m":{"reserveTokens":100}}}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        std::fs::write(
            cwd.path().join(".pi/settings.json"),
            r#"{"compaction":{"modelOverrides":{"p/m":{"keepRecentTokens":50}}}}"#,
        )
        .unwrap();
        let s = Settings::load(agent.path(), cwd.path()).unwrap();
        assert_eq!(s.compaction.tokens_for("p/m"), (100, 50));
        assert_eq!(s.compaction.tokens_for("p/other"), (16384, 9000));
    }

    #[test]
    fn a_broken_file_names_the_file() {
        let agent = tempfile::tempdir().unwrap();
        std::fs::write(agent.path().join("settings.json"), "{ nope").unwrap();
        let err = Settings::load(agent.path(), agent.path()).unwrap_err().to_string();
        assert!(err.contains("settings.json"), "{err}");
        std::fs::write(agent.path().join("settings.json"), r#"{"steeringMode":"sideways"}"#).unwrap();
        let err = Settings::load(agent.path(), agent.path()).unwrap_err().to_string();
        assert!(err.contains("steeringMode") && err.contains("sideways"), "{err}");
    }

    #[test]
    fn persisting_keeps_other_keys() {
        let agent = tempfile::tempdir().unwrap();
        std::fs::write(agent.path().join("settings.json"), r#"{"theme":"dark","retry":{"maxRetries":2}}"#).unwrap();
        persist_setting(agent.path(), "retry.enabled", Value::Bool(false)).unwrap();
        persist_setting(agent.path(), "steeringMode", Value::String("all".into())).unwrap();
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(agent.path().join("settings.json")).unwrap()).unwrap();
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["retry"]["maxRetries"], 2);
        assert_eq!(v["retry"]["enabled"], false);
        assert_eq!(v["steeringMode"], "all");
    }

    #[test]
    fn tool_lists_replace_or_edit() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(apply_tool_edits(None, s(&["+grep", "-bash"])), s(&["read", "edit", "write", "grep"]));
        assert_eq!(apply_tool_edits(None, s(&["read", "ls"])), s(&["read", "ls"]));
    }
}
