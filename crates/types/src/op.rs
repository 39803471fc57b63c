//! The command API of the core: `Op` in, `Reply` (or `CoreError`) out.
//!
//! Every front end turns its wire requests into these operations. The core
//! answers each tagged op exactly once, through the same ordered output stream
//! as the events, so a reply never overtakes the events that precede it.

use std::str::FromStr;

use serde_json::Value;

use crate::event::CompactionResult;
use crate::message::{AgentMessage, ImageContent};
use crate::model::{Model, ThinkingLevel};
use crate::session::SessionEntry;

/// Opaque correlation token chosen by the adapter; echoed on the reply and on
/// events caused by the op (RPC `bash` output).
pub type RequestTag = u64;

/// How a prompt sent during a run is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// How queued steering / follow-up messages are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// Deliver everything queued at once.
    All,
    /// Deliver one message per turn.
    #[default]
    OneAtATime,
}

impl QueueMode {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::All => "all",
            QueueMode::OneAtATime => "one-at-a-time",
        }
    }
}

impl FromStr for QueueMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all" => Ok(QueueMode::All),
            "one-at-a-time" => Ok(QueueMode::OneAtATime),
            other => Err(format!("Invalid mode: {other}. Valid modes: all, one-at-a-time")),
        }
    }
}

/// A client's answer to an extension dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum UiResponse {
    /// `select`, `input`, `editor`: the chosen or typed text.
    Value(Value),
    /// `confirm`: yes or no.
    Confirmed(bool),
    /// The user dismissed the dialog.
    Cancelled,
}

/// Settings a JSON-RPC `initialize` applies before the session starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InitializeParams {
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub api_key: Option<String>,
    pub thinking_level: Option<ThinkingLevel>,
    pub tools: Option<Vec<String>>,
    /// Tools the client runs itself (answered with `toolResult`).
    pub client_tools: Vec<crate::client::ClientToolSpec>,
}

/// Operations the core performs.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Prompt {
        message: String,
        images: Vec<ImageContent>,
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        message: String,
        images: Vec<ImageContent>,
    },
    FollowUp {
        message: String,
        images: Vec<ImageContent>,
    },
    /// Steer while a run is active, start a run otherwise.
    SendUserMessage {
        message: String,
        images: Vec<ImageContent>,
    },
    Abort,
    NewSession {
        parent_session: Option<String>,
    },
    GetState,
    GetMessages,
    /// `provider` may be absent; `model_id` may also be `provider/id`.
    SetModel {
        provider: Option<String>,
        model_id: String,
    },
    CycleModel,
    GetAvailableModels,
    SetThinkingLevel {
        level: ThinkingLevel,
    },
    CycleThinkingLevel,
    GetAvailableThinkingLevels,
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    Compact {
        custom_instructions: Option<String>,
    },
    SetAutoCompaction {
        enabled: bool,
    },
    SetAutoRetry {
        enabled: bool,
    },
    AbortRetry,
    Bash {
        command: String,
        exclude_from_context: bool,
    },
    AbortBash,
    GetSessionStats,
    ExportHtml {
        output_path: Option<String>,
    },
    SwitchSession {
        session_path: String,
        /// `pi serve`: replay the session's events after this sequence number.
        after_seq: Option<u64>,
    },
    /// Resume by session id, unique id prefix, or path.
    ResumeSession {
        reference: String,
        /// `pi serve`: replay the session's events after this sequence number.
        after_seq: Option<u64>,
    },
    Fork {
        entry_id: String,
    },
    Clone,
    GetForkMessages,
    GetEntries {
        since: Option<String>,
    },
    GetTree,
    GetLastAssistantText,
    SetSessionName {
        name: String,
    },
    GetCommands,
    ClearQueue,
    SetActiveTools {
        tools: Vec<String>,
    },
    Initialize(InitializeParams),
    ExtensionUiResponse {
        id: Option<String>,
        response: UiResponse,
    },
    /// The client's answer to a `ClientRequest` event (tagged: answered with
    /// `Ack`, or an error when no request with this id waits).
    ClientResponse {
        id: String,
        result: Result<crate::client::ClientReply, String>,
    },
    /// Switch the approval mode (ACP session modes).
    SetApprovalMode {
        mode: crate::client::ApprovalMode,
    },
    /// Stop serving. `abort`: abort active work first; otherwise wait until idle.
    Shutdown {
        abort: bool,
    },
    /// Stop the agent if it is idle (nothing running, nothing waiting on the
    /// client): answered `Ack`, then the actor stops; otherwise a `Busy`
    /// error and nothing changes. `pi serve` unloads idle sessions with it.
    Unload,
    /// The ids of the requests to the client still waiting for an answer
    /// (extension dialogs): `pi serve` re-sends them to a client that attaches.
    PendingRequests,
    /// Answered with `Ack` in turn, after the replies of earlier ops that
    /// answer at once: a front end orders an answer of its own (the error
    /// for a bad record) after them.
    Barrier,
    /// Log in to a provider with its subscription (OAuth): answered with
    /// [`Reply::LoginStarted`] once the sign-in URL or device code is known;
    /// [`crate::event::AgentEvent::LoginEnd`] follows when it completes.
    Login(crate::login::LoginRequest),
}

/// How a prompt was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A run started.
    Started,
    /// Queued as steering or follow-up.
    Queued,
    /// Consumed by an extension command.
    Handled,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Started => "started",
            Disposition::Queued => "queued",
            Disposition::Handled => "handled",
        }
    }
}

/// Context window usage as reported by `get_session_stats`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextUsageStats {
    /// None right after a compaction, until a fresh reply reports usage.
    pub tokens: Option<u64>,
    pub context_window: u64,
    /// Percent (0..100) of the window in use.
    pub percent: Option<f64>,
}

/// A snapshot of the session state (`get_state`, `getStatus`).
#[derive(Debug, Clone, PartialEq)]
pub struct StateSnapshot {
    pub model: Option<Model>,
    pub thinking_level: ThinkingLevel,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub is_bash_running: bool,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub session_file: Option<String>,
    pub session_id: String,
    pub session_name: Option<String>,
    pub auto_compaction_enabled: bool,
    pub auto_retry_enabled: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
    pub active_tools: Vec<String>,
    pub context_usage: Option<ContextUsageStats>,
    /// The session file's header line (`pi --mode json` prints it first).
    pub session_header: crate::session::SessionHeader,
}

/// Token totals of the session.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `get_session_stats` data.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionStats {
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    pub tokens: TokenTotals,
    pub cost: f64,
    pub context_usage: Option<ContextUsageStats>,
}

/// Result of an RPC `bash` command.
#[derive(Debug, Clone, PartialEq)]
pub struct BashResult {
    pub output: String,
    /// None when cancelled.
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
}

/// A user message one can fork from.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// The session as a forest (`get_tree`), kept flat: nodes refer to their
/// children by position, so a 100,000-entry chain is walked, cloned, compared
/// and dropped without recursion.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionTree {
    /// Every node, in the session's append order.
    pub nodes: Vec<TreeNode>,
    /// Positions in `nodes` of the roots, in order.
    pub roots: Vec<usize>,
}

impl SessionTree {
    /// The root nodes, in order.
    pub fn roots(&self) -> impl Iterator<Item = &TreeNode> {
        self.roots.iter().filter_map(|&i| self.nodes.get(i))
    }

    /// The children of `node`, in order.
    pub fn children<'a>(&'a self, node: &'a TreeNode) -> impl Iterator<Item = &'a TreeNode> {
        node.children.iter().filter_map(|&i| self.nodes.get(i))
    }
}

/// One node of `get_tree`.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    pub entry: SessionEntry,
    /// Positions in [`SessionTree::nodes`] of the children, in order.
    pub children: Vec<usize>,
    pub label: Option<String>,
    pub label_timestamp: Option<String>,
}

/// Where a slash command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandSource {
    Extension,
    Prompt,
    Skill,
}

impl CommandSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandSource::Extension => "extension",
            CommandSource::Prompt => "prompt",
            CommandSource::Skill => "skill",
        }
    }
}

/// Where a template or skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandLocation {
    User,
    Project,
    Path,
}

impl CommandLocation {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandLocation::User => "user",
            CommandLocation::Project => "project",
            CommandLocation::Path => "path",
        }
    }
}

/// A slash command listed by `get_commands`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandInfo {
    pub name: String,
    pub description: Option<String>,
    pub source: CommandSource,
    pub location: Option<CommandLocation>,
    pub path: Option<String>,
}

/// The model picked by `cycle_model`.
#[derive(Debug, Clone, PartialEq)]
pub struct CycledModel {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub is_scoped: bool,
}

/// Identity of the session after `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub session_path: Option<String>,
    pub model: Option<Box<Model>>,
}

/// Successful result of an op.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Success without data.
    Ack,
    Prompt {
        disposition: Disposition,
    },
    /// `new_session`, `switch_session`, `clone`.
    Switched {
        cancelled: bool,
    },
    Fork {
        text: String,
        cancelled: bool,
    },
    State(Box<StateSnapshot>),
    /// The conversation, shared with the agent (not copied).
    Messages(std::sync::Arc<Vec<AgentMessage>>),
    Model(Box<Model>),
    CycleModel(Option<Box<CycledModel>>),
    Models(Vec<Model>),
    CycleThinkingLevel(Option<ThinkingLevel>),
    ThinkingLevels(Vec<ThinkingLevel>),
    Compaction(Box<CompactionResult>),
    Bash(BashResult),
    SessionStats(Box<SessionStats>),
    ExportHtml {
        path: String,
    },
    ForkMessages(Vec<ForkMessage>),
    Entries {
        entries: Vec<SessionEntry>,
        leaf_id: Option<String>,
    },
    Tree {
        tree: SessionTree,
        leaf_id: Option<String>,
    },
    LastAssistantText(Option<String>),
    Commands(Vec<CommandInfo>),
    QueueCleared {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    Session(SessionInfo),
    ActiveTools(Vec<String>),
    /// `pi serve`: the connection is attached to a session (answers
    /// `new_session`, `switch_session`, `resumeSession` there).
    Attached(Attachment),
    /// Ids of the requests to the client awaiting an answer, oldest first.
    PendingRequests(Vec<String>),
    /// A login waits for the user (see [`Op::Login`]).
    LoginStarted(Box<crate::login::LoginStarted>),
}

/// How a connection was attached to a session by `pi serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub session_id: String,
    /// The session file (None until the session holds a message).
    pub session_file: Option<String>,
    /// Sequence number of the session's latest event (0: none yet).
    pub last_seq: u64,
    /// Events re-sent after the reply (those after the requested `afterSeq`).
    pub replayed: u64,
    /// Some events after the requested `afterSeq` are no longer held (the
    /// buffer overflowed, or the session was reloaded): the client should
    /// read the state again (`get_messages`).
    pub gap: bool,
}
