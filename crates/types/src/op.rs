//! The command API of the core: `Op` in, `Reply` (or `CoreError`) out.
//!
//! Every front end turns its wire requests into these operations. The core
//! answers each tagged op exactly once, through the same ordered output stream
//! as the events, so a reply never overtakes the events that precede it.

use std::str::FromStr;

use serde_json::Value;

use crate::event::CompactionResult;
use crate::message::ImageContent;
use crate::model::{Model, ThinkingLevel};
use crate::session::SessionEntry;

/// An op with the type of its reply, declared by the `ops!` table: the
/// protocol table binds each command to one (its decoder makes this op, its
/// result is built from this reply type), so a command whose result does not
/// fit its op's reply does not compile.
pub trait TypedOp: Into<Op> {
    const KIND: OpKind;
    /// What the op is answered with (`()` for a bare `Ack`).
    type Reply;
    /// The reply, as the core sends it.
    fn reply(reply: Self::Reply) -> Reply;
    /// The reply back from what the core sent; `None` when it is another
    /// op's (a bug of the core).
    fn take_reply(reply: Reply) -> Option<Self::Reply>;
}

/// Declares every op once: its data and the reply that answers it. From the
/// table come [`Op`], [`OpKind`], one struct per op in [`ops`] (what a front
/// end decodes a command into) and each op's [`TypedOp`] impl.
macro_rules! ops {
    (@struct $(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident: $t:ty),* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name { $($(#[$fm])* pub $f: $t),* }
        impl From<$name> for Op {
            fn from(op: $name) -> Op {
                Op::$name { $($f: op.$f),* }
            }
        }
    };
    (@struct $(#[$m:meta])* $name:ident ($t:ty)) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name(pub $t);
        impl From<$name> for Op {
            fn from(op: $name) -> Op {
                Op::$name(op.0)
            }
        }
    };
    (@struct $(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;
        impl From<$name> for Op {
            fn from(_: $name) -> Op {
                Op::$name
            }
        }
    };
    (@typed $name:ident, Ack) => {
        impl TypedOp for $name {
            const KIND: OpKind = OpKind::$name;
            type Reply = ();
            fn reply((): ()) -> Reply {
                Reply::Ack
            }
            fn take_reply(reply: Reply) -> Option<()> {
                matches!(reply, Reply::Ack).then_some(())
            }
        }
    };
    (@typed $name:ident, $variant:ident, $reply:ty) => {
        impl TypedOp for $name {
            const KIND: OpKind = OpKind::$name;
            type Reply = $reply;
            fn reply(reply: $reply) -> Reply {
                Reply::$variant(reply)
            }
            fn take_reply(reply: Reply) -> Option<$reply> {
                match reply {
                    Reply::$variant(reply) => Some(reply),
                    _ => None,
                }
            }
        }
    };
    ($(
        $(#[$meta:meta])*
        $name:ident $({ $($(#[$fmeta:meta])* $field:ident: $fty:ty),* $(,)? })? $(($inner:ty))?
            -> $variant:ident $(($reply:ty))?;
    )*) => {
        /// Operations the core performs.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub enum Op {
            $($(#[$meta])* $name $({ $($(#[$fmeta])* $field: $fty),* })? $(($inner))?,)*
        }

        /// Which op, without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum OpKind {
            $($name,)*
        }

        impl Op {
            pub fn kind(&self) -> OpKind {
                match self {
                    $(Op::$name { .. } => OpKind::$name,)*
                }
            }
        }

        impl OpKind {
            /// Every op, in the table's order.
            pub const ALL: &[OpKind] = &[$(OpKind::$name),*];
        }

        /// One struct per op, made by the front ends' decoders and turned into
        /// [`Op`] with `into()`; each knows its reply type ([`TypedOp`]).
        pub mod ops {
            use super::*;
            $(
                ops!(@struct $(#[$meta])* $name $({ $($(#[$fmeta])* $field: $fty),* })? $(($inner))?);
                ops!(@typed $name, $variant $(, $reply)?);
            )*
        }
    };
}

/// Opaque correlation token chosen by the adapter; echoed on the reply and on
/// events caused by the op (RPC `bash` output).
pub type RequestTag = u64;

/// How a prompt sent during a run is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// How queued steering / follow-up messages are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum UiResponse {
    /// `select`, `input`, `editor`: the chosen or typed text.
    Value(Value),
    /// `confirm`: yes or no.
    Confirmed(bool),
    /// The user dismissed the dialog.
    Cancelled,
}

/// Settings a JSON-RPC `initialize` applies before the session starts.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

ops! {
    /// Send a user prompt (queued as `streaming_behavior` says during a run).
    Prompt {
        message: String,
        images: Vec<ImageContent>,
        streaming_behavior: Option<StreamingBehavior>,
    } -> Prompt(Disposition);
    /// Queue a steering message.
    Steer {
        message: String,
        images: Vec<ImageContent>,
    } -> Prompt(Disposition);
    /// Queue a follow-up message.
    FollowUp {
        message: String,
        images: Vec<ImageContent>,
    } -> Prompt(Disposition);
    /// Steer while a run is active, start a run otherwise.
    SendUserMessage {
        message: String,
        images: Vec<ImageContent>,
    } -> Prompt(Disposition);
    /// Abort the current operation; answered once it has ended.
    Abort -> Ack;
    NewSession {
        parent_session: Option<String>,
    } -> Switched(Switched);
    GetState -> State(Box<StateSnapshot>);
    GetMessages -> Messages(crate::message_list::MessageList);
    /// `provider` may be absent; `model_id` may also be `provider/id`.
    SetModel {
        provider: Option<String>,
        model_id: String,
    } -> Model(Box<Model>);
    CycleModel -> CycleModel(Option<Box<CycledModel>>);
    GetAvailableModels -> Models(Vec<Model>);
    SetThinkingLevel {
        level: ThinkingLevel,
    } -> Ack;
    CycleThinkingLevel -> CycleThinkingLevel(Option<ThinkingLevel>);
    GetAvailableThinkingLevels -> ThinkingLevels(Vec<ThinkingLevel>);
    SetSteeringMode {
        mode: QueueMode,
    } -> Ack;
    SetFollowUpMode {
        mode: QueueMode,
    } -> Ack;
    Compact {
        custom_instructions: Option<String>,
    } -> Compaction(Box<CompactionResult>);
    SetAutoCompaction {
        enabled: bool,
    } -> Ack;
    SetAutoRetry {
        enabled: bool,
    } -> Ack;
    AbortRetry -> Ack;
    Bash {
        command: String,
        exclude_from_context: bool,
    } -> Bash(BashResult);
    AbortBash -> Ack;
    GetSessionStats -> SessionStats(Box<SessionStats>);
    ExportHtml {
        output_path: Option<String>,
    } -> ExportHtml(String);
    SwitchSession {
        session_path: String,
        /// `pi serve`: replay the session's events after this sequence number.
        after_seq: Option<u64>,
    } -> Switched(Switched);
    /// Resume by session id, unique id prefix, or path.
    ResumeSession {
        reference: String,
        /// `pi serve`: replay the session's events after this sequence number.
        after_seq: Option<u64>,
    } -> Switched(Switched);
    Fork {
        entry_id: String,
    } -> Fork(Forked);
    Clone -> Switched(Switched);
    GetForkMessages -> ForkMessages(Vec<ForkMessage>);
    GetEntries {
        since: Option<String>,
    } -> Entries(EntryList);
    GetTree -> Tree(TreeWithLeaf);
    GetLastAssistantText -> LastAssistantText(Option<String>);
    SetSessionName {
        name: String,
    } -> Ack;
    GetCommands -> Commands(Vec<CommandInfo>);
    ClearQueue -> QueueCleared(ClearedQueues);
    SetActiveTools {
        tools: Vec<String>,
    } -> ActiveTools(Vec<String>);
    Initialize(InitializeParams) -> Session(SessionInfo);
    ExtensionUiResponse {
        id: Option<String>,
        response: UiResponse,
    } -> Ack;
    /// The client's answer to a `ClientRequest` event (tagged: answered with
    /// `Ack`, or an error when no request with this id waits).
    ClientResponse {
        id: String,
        result: Result<crate::client::ClientReply, String>,
    } -> Ack;
    /// Switch the approval mode (ACP session modes).
    SetApprovalMode {
        mode: crate::client::ApprovalMode,
    } -> Ack;
    /// Stop serving. `abort`: abort active work first; otherwise wait until idle.
    Shutdown {
        abort: bool,
    } -> Ack;
    /// Stop the agent if it is idle (nothing running, nothing waiting on the
    /// client): answered `Ack`, then the actor stops; otherwise a `Busy`
    /// error and nothing changes. `pi serve` unloads idle sessions with it.
    Unload -> Ack;
    /// The ids of the requests to the client still waiting for an answer
    /// (extension dialogs): `pi serve` re-sends them to a client that attaches.
    PendingRequests -> PendingRequests(Vec<String>);
    /// Answered with `Ack` in turn, after the replies of earlier ops that
    /// answer at once: a front end orders an answer of its own (the error
    /// for a bad record) after them.
    Barrier -> Ack;
    /// Log in to a provider with its subscription (OAuth): answered once
    /// the sign-in URL or device code is known; `AgentEvent::LoginEnd`
    /// follows when the login completes.
    Login(crate::login::LoginRequest) -> LoginStarted(Box<crate::login::LoginStarted>);
}

/// How a prompt was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContextUsageStats {
    /// None right after a compaction, until a fresh reply reports usage.
    pub tokens: Option<u64>,
    pub context_window: u64,
    /// Percent (0..100) of the window in use.
    pub percent: Option<f64>,
}

/// A snapshot of the session state (`get_state`, `getStatus`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StateSnapshot {
    /// The model in use, shared with the agent (a snapshot does not copy it).
    pub model: Option<std::sync::Arc<Model>>,
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
    /// The active tools' names, shared with the agent (a snapshot does not copy them).
    pub active_tools: std::sync::Arc<Vec<String>>,
    pub context_usage: Option<ContextUsageStats>,
    /// The session file's header line (`pi --mode json` prints it first),
    /// shared with the session (a snapshot does not copy it).
    pub session_header: std::sync::Arc<crate::session::SessionHeader>,
}

/// Token totals of the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `get_session_stats` data.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BashResult {
    pub output: String,
    /// None when cancelled.
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
}

/// A user message one can fork from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// The session as a forest (`get_tree`), kept flat: nodes refer to their
/// children by position, so a 100,000-entry chain is walked, cloned, compared
/// and dropped without recursion.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TreeNode {
    pub entry: SessionEntry,
    /// Positions in [`SessionTree::nodes`] of the children, in order.
    pub children: Vec<usize>,
    pub label: Option<String>,
    pub label_timestamp: Option<String>,
}

/// Where a slash command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// A slash command listed by `get_commands`: the seed's fields (`location`,
/// `path`) and pi 1.6.0's `sourceInfo`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommandInfo {
    pub name: String,
    pub description: Option<String>,
    pub source: CommandSource,
    pub location: Option<CommandLocation>,
    pub path: Option<String>,
    pub source_info: Option<CommandSourceInfo>,
}

/// What registered a command, as pi 1.6.0 describes it (`sourceInfo`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommandSourceInfo {
    /// The resource's absolute path, or `builtin:<name>` for a built-in.
    pub path: String,
    /// How it was found: `auto` (a conventional directory), `local` (a
    /// settings entry or a command-line path), `cli` (`--extension`),
    /// `builtin`, or a pi package's source.
    pub source: String,
    /// `user`, `project` or `temporary`.
    pub scope: String,
    /// `top-level`, or `package` for a pi package's resource.
    pub origin: String,
    /// The directory the resource was found from, when there is one.
    pub base_dir: Option<String>,
}

/// The model picked by `cycle_model`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CycledModel {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub is_scoped: bool,
}

/// Identity of the session after `initialize`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    pub session_path: Option<String>,
    pub model: Option<Box<Model>>,
}

/// Successful result of an op: one variant per shape of result; which one
/// answers which op is declared in the `ops!` table above ([`TypedOp`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Reply {
    /// Success without data.
    Ack,
    /// `prompt`, `steer`, `follow_up`, `send_user_message`.
    Prompt(Disposition),
    /// `new_session`, `switch_session`, `resume_session`, `clone`.
    Switched(Switched),
    Fork(Forked),
    State(Box<StateSnapshot>),
    /// The conversation, shared with the agent (not copied), or read from
    /// the session file as it is written out.
    Messages(crate::message_list::MessageList),
    Model(Box<Model>),
    CycleModel(Option<Box<CycledModel>>),
    Models(Vec<Model>),
    CycleThinkingLevel(Option<ThinkingLevel>),
    ThinkingLevels(Vec<ThinkingLevel>),
    Compaction(Box<CompactionResult>),
    Bash(BashResult),
    SessionStats(Box<SessionStats>),
    /// The path the HTML was written to.
    ExportHtml(String),
    ForkMessages(Vec<ForkMessage>),
    Entries(EntryList),
    Tree(TreeWithLeaf),
    LastAssistantText(Option<String>),
    Commands(Vec<CommandInfo>),
    QueueCleared(ClearedQueues),
    Session(SessionInfo),
    ActiveTools(Vec<String>),
    /// Ids of the requests to the client awaiting an answer, oldest first.
    PendingRequests(Vec<String>),
    /// A login waits for the user (see [`Op::Login`]).
    LoginStarted(Box<crate::login::LoginStarted>),
}

/// How a session switch ended (`new_session`, `switch_session`, `resume_session`, `clone`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Switched {
    /// True when an extension cancelled the switch.
    pub cancelled: bool,
    /// `pi serve`: the session the connection is now attached to (it
    /// answers `new_session`, `switch_session`, `resumeSession` there).
    pub attached: Option<Attachment>,
}

impl Switched {
    /// A switch made (or cancelled) by the agent itself.
    pub fn new(cancelled: bool) -> Self {
        Switched { cancelled, attached: None }
    }
}

/// How a `fork` ended: the text of the message forked from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Forked {
    pub text: String,
    /// True when an extension cancelled the fork.
    pub cancelled: bool,
}

/// `get_entries`: entries in append order, and the leaf.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntryList {
    pub entries: Vec<SessionEntry>,
    pub leaf_id: Option<String>,
}

/// `get_tree`: the session's tree, and the leaf.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TreeWithLeaf {
    pub tree: SessionTree,
    pub leaf_id: Option<String>,
}

/// `clear_queue`: what both queues held.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClearedQueues {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// How a connection was attached to a session by `pi serve`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
