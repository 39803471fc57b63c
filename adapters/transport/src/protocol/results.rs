//! The typed results of the commands (native `data`, JSON-RPC `result`),
//! one struct per shape, each built from its op's typed reply ([`FromReply`]).
//! They are serialized directly onto the wire, and the JSON Schemas of the
//! responses are generated from them, so what is sent and what is
//! documented cannot drift apart.

use pi_core::message::Usage;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::op::{ContextUsageStats, StateSnapshot};
use pi_core::session::SessionEntry;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub use super::params::WireQueueMode;

/// A result built from the typed reply `T` of its command's op (see
/// `pi_core::op::TypedOp`): a protocol table row compiles only when its
/// result type can be built from its op's reply.
pub trait FromReply<T>: Sized {
    fn from_reply(reply: T) -> Self;
}

/// No result: the native response has no `data`, the JSON-RPC result is `{}`.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub struct Ack {}

impl FromReply<()> for Ack {
    fn from_reply((): ()) -> Self {
        Ack {}
    }
}

/// How a prompt was taken (schema helper for string fields).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WireDisposition {
    /// A run started.
    Started,
    /// Queued as a steering or follow-up message.
    Queued,
    /// Consumed at once (an extension command).
    Handled,
}

/// `prompt`, `steer`, `follow_up` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DispositionData {
    /// `started`, `queued` or `handled`.
    #[schemars(with = "WireDisposition")]
    pub disposition: &'static str,
}

/// `new_session`, `switch_session`, `clone` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CancelledData {
    /// True when an extension cancelled the switch.
    pub cancelled: bool,
    /// `pi serve` only: the session the connection is now attached to.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub attached: Option<AttachedData>,
}

/// `pi serve`: the session a connection was attached to, and what was re-sent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachedData {
    /// The session id.
    pub session_id: String,
    /// The session file (null until the session holds a message).
    pub session_path: Option<String>,
    /// Sequence number of the session's latest event (0: none yet).
    pub last_seq: u64,
    /// How many events after `afterSeq` are re-sent after this reply.
    pub replayed: u64,
    /// True when some events after `afterSeq` are no longer held: read the
    /// state again (`get_messages`).
    pub gap: bool,
}

/// `fork` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ForkData {
    /// Text of the user message the fork was taken from.
    pub text: String,
    /// True when an extension cancelled the fork.
    pub cancelled: bool,
}

/// `get_state` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateData {
    /// The current model, or null when none is configured.
    #[serde(serialize_with = "crate::protocol::model_json::serialize")]
    #[schemars(with = "Option<Model>")]
    pub model: Option<std::sync::Arc<Model>>,
    /// The effective thinking level.
    #[schemars(with = "ThinkingLevel")]
    pub thinking_level: &'static str,
    /// True while a run is active.
    pub is_streaming: bool,
    /// True while a compaction runs.
    pub is_compacting: bool,
    /// How steering messages are delivered.
    #[schemars(with = "WireQueueMode")]
    pub steering_mode: &'static str,
    /// How follow-up messages are delivered.
    #[schemars(with = "WireQueueMode")]
    pub follow_up_mode: &'static str,
    /// Path of the session file (absent with `--no-session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// The session id (a UUID).
    pub session_id: String,
    /// Display name (absent until set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// Whether automatic compaction is on.
    pub auto_compaction_enabled: bool,
    /// Messages in the conversation.
    pub message_count: usize,
    /// Queued steering and follow-up messages.
    pub pending_message_count: usize,
}

/// `get_messages` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MessagesData {
    /// The conversation's messages.
    pub messages: pi_core::MessageList,
}

/// `cycle_model` data (or null when there is nothing to cycle to).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CycleModelData {
    /// The model now selected.
    pub model: Model,
    /// The thinking level with that model.
    #[schemars(with = "ThinkingLevel")]
    pub thinking_level: &'static str,
    /// True when cycling within a scoped model list.
    pub is_scoped: bool,
}

/// `get_available_models` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModelsData {
    /// Every model with usable credentials.
    pub models: Vec<Model>,
}

/// `cycle_thinking_level` data (or null for a model without reasoning).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LevelData {
    /// The new level.
    #[schemars(with = "ThinkingLevel")]
    pub level: &'static str,
}

/// `get_available_thinking_levels` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LevelsData {
    /// Levels the current model supports (`["off"]` without reasoning).
    #[schemars(with = "Vec<ThinkingLevel>")]
    pub levels: Vec<&'static str>,
}

/// Token totals of `get_session_stats`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensData {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `contextUsage` of `get_session_stats`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsageData {
    /// Estimated tokens in the context; null right after a compaction.
    pub tokens: Option<u64>,
    /// The model's context window.
    pub context_window: u64,
    /// Percent of the window in use; null right after a compaction.
    pub percent: Option<f64>,
}

/// `get_session_stats` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatsData {
    /// Path of the session file (absent with `--no-session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// The session id.
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    /// Tokens over the whole session (compaction and tool usage included).
    pub tokens: TokensData,
    /// Cost in US dollars over the whole session.
    pub cost: f64,
    /// Current context window use (absent without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsageData>,
}

/// `bash` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashData {
    /// Combined stdout and stderr (the tail when truncated).
    pub output: String,
    /// Exit code (absent when cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when `abort_bash` stopped the command.
    pub cancelled: bool,
    /// True when the output was truncated.
    pub truncated: bool,
    /// Path of the full output when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// `export_html` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportHtmlData {
    /// Path of the HTML file written.
    pub path: String,
}

/// One entry of `get_fork_messages`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkMessageData {
    /// Id of the user message's entry (pass it to `fork`).
    pub entry_id: String,
    /// The message's text.
    pub text: String,
}

/// `get_fork_messages` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ForkMessagesData {
    /// Every user message of the session.
    pub messages: Vec<ForkMessageData>,
}

/// `get_entries` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntriesData {
    /// Entries in append order (header excluded), after `since` when given.
    pub entries: Vec<SessionEntry>,
    /// The current leaf entry (null for an empty session).
    pub leaf_id: Option<String>,
}

/// One node of `get_tree`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeNodeData {
    /// The entry.
    pub entry: SessionEntry,
    /// Its children, in append order.
    pub children: Vec<TreeNodeData>,
    /// Label set on this entry by a `label` entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When the label was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_timestamp: Option<String>,
}

/// `get_tree` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeData {
    /// Root nodes (orphaned entries are extra roots).
    #[schemars(with = "Vec<TreeNodeData>")]
    pub tree: TreeJson,
    /// The current leaf entry (null for an empty session).
    pub leaf_id: Option<String>,
}

/// `get_last_assistant_text` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LastAssistantTextData {
    /// Text of the last assistant message; null when there is none.
    pub text: Option<String>,
}

/// Where a slash command comes from (schema helper).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WireCommandSource {
    /// Registered by an extension.
    Extension,
    /// A prompt template.
    Prompt,
    /// A skill (named `skill:<name>`).
    Skill,
}

/// Where a template or skill was found (schema helper).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WireCommandLocation {
    /// User level (the agent dir).
    User,
    /// Project level (`.pi/`).
    Project,
    /// An explicit path (flag or setting).
    Path,
}

/// One entry of `get_commands`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandData {
    /// Name, invoked as `/name`.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `extension`, `prompt` or `skill`.
    #[schemars(with = "WireCommandSource")]
    pub source: String,
    /// `user`, `project` or `path` (absent for extensions).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<WireCommandLocation>")]
    pub location: Option<String>,
    /// Absolute path of the command's source file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What registered the command (pi 1.6.0's provenance field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_info: Option<CommandSourceData>,
}

/// `sourceInfo` of a `get_commands` entry, as pi 1.6.0 sends it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandSourceData {
    /// The resource's absolute path, or `builtin:<name>` for a built-in command.
    pub path: String,
    /// How it was found: `auto` (a conventional directory), `local` (a
    /// settings entry or a command-line path), `cli` (`--extension`),
    /// `builtin`, or `package`.
    pub source: String,
    /// `user`, `project` or `temporary`.
    pub scope: String,
    /// `top-level`, or `package` for a pi package's resource.
    pub origin: String,
    /// The directory the resource was found from, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

/// `get_commands` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommandsData {
    /// Extension commands, prompt templates and skills.
    pub commands: Vec<CommandData>,
}

/// `clear_queue` data: what was queued.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    /// Steering messages removed.
    pub steering: Vec<String>,
    /// Follow-up messages removed.
    pub follow_up: Vec<String>,
}

/// A login waiting for the user: open `url` (browser sign-in), or open
/// `verificationUri` and enter `userCode` (device code). `loginCompleted`
/// follows.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginResult {
    /// The provider id.
    pub provider: String,
    /// The login's name, e.g. "Anthropic (Claude Pro/Max)".
    pub name: String,
    /// `browser` or `device_code`.
    pub method: String,
    /// The sign-in page to open (browser sign-in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// What to tell the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The code to enter (device code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_code: Option<String>,
    /// Where to enter it (device code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_uri: Option<String>,
    /// Seconds the code stays valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<f64>,
}

/// Active tools.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolsData {
    /// Names of the active tools.
    pub tools: Vec<String>,
}

/// Why a compaction runs (schema helper for string fields).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WireCompactionReason {
    /// Requested with the `compact` command.
    Manual,
    /// The context crossed the auto-compaction threshold after a run.
    Threshold,
    /// The model rejected the context as too long; the prompt is retried after compacting.
    Overflow,
}

/// `compaction_end.result` and the `compact` result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireCompactionResult {
    /// The summary that replaces the compacted history.
    pub summary: String,
    /// Id of the first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// Estimated context tokens before compacting.
    pub tokens_before: u64,
    /// Heuristic estimate of the rebuilt context right after compacting.
    pub estimated_tokens_after: u64,
    /// Usage of the summarisation call(s); may be absent for custom compaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Compaction details (e.g. `readFiles`, `modifiedFiles`).
    pub details: Value,
}

/// JSON-RPC `prompt`, `sendUserMessage`, `steer`, `followUp` result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PromptResult {
    /// Always true: failures after acceptance come as notifications.
    pub accepted: bool,
    /// `started`, `queued` or `handled`.
    #[schemars(with = "WireDisposition")]
    pub disposition: &'static str,
}

/// JSON-RPC `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResult {
    /// The session id.
    pub session_id: String,
    /// Path of the session file (null without persistence).
    pub session_path: Option<String>,
    /// The model id (null without a model).
    pub model: Option<String>,
    /// The model's provider (null without a model).
    pub provider: Option<String>,
}

/// JSON-RPC `getStatus` result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    /// True when no run, compaction or bash command is active.
    pub idle: bool,
    /// The model id (null without a model).
    pub model: Option<String>,
    /// The model's provider (null without a model).
    pub provider: Option<String>,
    /// The effective thinking level.
    #[schemars(with = "ThinkingLevel")]
    pub thinking_level: &'static str,
    /// Fraction (0 to 1) of the context window in use; null when unknown.
    pub context_usage: Option<f64>,
    /// Names of the active tools.
    pub active_tools: Vec<String>,
    /// The session id.
    pub session_id: String,
}

impl StatusResult {
    pub fn of(s: &StateSnapshot) -> Self {
        StatusResult {
            idle: !s.is_streaming && !s.is_compacting && !s.is_bash_running,
            model: s.model.as_ref().map(|m| m.id.clone()),
            provider: s.model.as_ref().map(|m| m.provider.clone()),
            thinking_level: s.thinking_level.as_str(),
            context_usage: s.context_usage.and_then(|c| c.percent).map(|p| p / 100.0),
            active_tools: s.active_tools.to_vec(),
            session_id: s.session_id.clone(),
        }
    }
}

impl ContextUsageData {
    pub fn of(c: ContextUsageStats) -> Self {
        ContextUsageData { tokens: c.tokens, context_window: c.context_window, percent: c.percent }
    }
}

/// The `tree` array of `get_tree`. A session chain is as deep as it is long
/// (100,000 entries make 100,000 levels), so it is written with an explicit
/// stack instead of nested `Serialize` calls, and never passes through a
/// `serde_json::Value` (whose drop recurses).
#[derive(Debug, Clone)]
pub struct TreeJson(pub pi_core::op::SessionTree);

impl Serialize for TreeJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut out = Vec::new();
        self.write(&mut out).map_err(S::Error::custom)?;
        let text = String::from_utf8(out).map_err(S::Error::custom)?;
        serde_json::value::RawValue::from_string(text).map_err(S::Error::custom)?.serialize(s)
    }
}

impl TreeJson {
    /// `[{entry, children, label?, labelTimestamp?}, …]`, the shape of [`TreeNodeData`].
    pub fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        struct Frame<'a> {
            node: Option<&'a pi_core::op::TreeNode>,
            children: std::slice::Iter<'a, usize>,
            first: bool,
        }
        let tree = &self.0;
        out.write_all(b"[")?;
        let mut stack = vec![Frame { node: None, children: tree.roots.iter(), first: true }];
        while let Some(frame) = stack.last_mut() {
            if let Some(node) = frame.children.next().and_then(|&i| tree.nodes.get(i)) {
                if !std::mem::replace(&mut frame.first, false) {
                    out.write_all(b",")?;
                }
                out.write_all(br#"{"entry":"#)?;
                serde_json::to_writer(&mut *out, &node.entry)?;
                out.write_all(br#","children":["#)?;
                stack.push(Frame { node: Some(node), children: node.children.iter(), first: true });
                continue;
            }
            out.write_all(b"]")?;
            if let Some(node) = stack.pop().and_then(|f| f.node) {
                for (key, value) in [("label", &node.label), ("labelTimestamp", &node.label_timestamp)] {
                    if let Some(value) = value {
                        write!(out, r#","{key}":"#)?;
                        serde_json::to_writer(&mut *out, value)?;
                    }
                }
                out.write_all(b"}")?;
            }
        }
        Ok(())
    }
}

/// `get_tree` data written as [`TreeData`] serialises: `{"tree":…,"leafId":…}`.
impl crate::streamed::WriteJson for TreeData {
    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(br#"{"tree":"#)?;
        self.tree.write(out)?;
        out.write_all(br#","leafId":"#)?;
        serde_json::to_writer(&mut *out, &self.leaf_id)?;
        out.write_all(b"}")
    }
}
