//! What the core asks of its client, whatever the dialect: approval of a
//! tool call, the editor's files (`read`/`write`/`edit` through the client),
//! its terminals (`bash` through the client), and tools the client runs
//! itself.
//!
//! One mechanism carries all of them: the core emits an
//! [`AgentEvent::ClientRequest`](crate::event::AgentEvent::ClientRequest)
//! with a fresh id and waits; the front end answers with
//! [`Op::ClientResponse`](crate::op::Op::ClientResponse) (or, for approvals
//! in the seed dialects, with the extension UI answer to the dialog it
//! showed). Abort cancels a wait (the front end hears
//! [`AgentEvent::ClientRequestEnded`](crate::event::AgentEvent::ClientRequestEnded)),
//! and once the client is gone every wait ends at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::event::EventSink;
use crate::message::ContentBlock;

pub mod approval;
mod broker;

pub use approval::{ApprovalMode, ApprovalPolicy, Approvals, Rule};
pub use broker::{ALLOW, ALWAYS_ALLOW, ALWAYS_BLOCK, BLOCK, ClientBroker};

/// The choices of the approval dialog the seed dialects show (a `select`).
pub fn approval_choices() -> Vec<String> {
    [ALLOW, BLOCK, ALWAYS_ALLOW, ALWAYS_BLOCK].iter().map(|s| s.to_string()).collect()
}

/// A request to the client; `id` is echoed by its answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientRequest {
    pub id: String,
    pub kind: ClientRequestKind,
}

/// What the core asks.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ClientRequestKind {
    /// May this tool call run?
    Permission(PermissionRequest),
    /// The text of a file as the editor has it (unsaved changes included).
    ReadTextFile { path: PathBuf },
    /// Write a file through the editor (it creates it when missing).
    WriteTextFile { path: PathBuf, content: String },
    /// Start a command in a client terminal (for the tool call `tool_call_id`).
    CreateTerminal(TerminalCommand),
    /// The output of a terminal so far.
    TerminalOutput { terminal_id: String },
    /// Wait until the terminal's command exits.
    WaitForTerminalExit { terminal_id: String },
    /// Kill the terminal's command (the terminal stays until released).
    KillTerminal { terminal_id: String },
    /// Free the terminal.
    ReleaseTerminal { terminal_id: String },
    /// Run a tool the client declared; answered with its result.
    ToolCall { tool_call_id: String, tool_name: String, args: Value },
}

impl ClientRequestKind {
    /// The tool call this request serves, when it serves one.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            ClientRequestKind::Permission(p) => Some(&p.tool_call_id),
            ClientRequestKind::CreateTerminal(t) => Some(&t.tool_call_id),
            ClientRequestKind::ToolCall { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        }
    }
}

/// A tool call waiting for approval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PermissionRequest {
    pub tool_call_id: String,
    pub tool_name: String,
    /// The arguments it would run with.
    pub args: Value,
    /// A one-line description (`bash: ls -la`).
    pub title: String,
}

/// A command for a client terminal.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TerminalCommand {
    pub tool_call_id: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

/// How a client terminal's command ended.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExitStatus {
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PermissionAnswer {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The dialog was dismissed (or the turn cancelled): the call does not run.
    Cancelled,
}

/// A client's answer, by kind of request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ClientReply {
    Permission(PermissionAnswer),
    /// `ReadTextFile`.
    Text(String),
    /// Requests without data (write, kill, release).
    Done,
    TerminalCreated {
        terminal_id: String,
    },
    TerminalOutput {
        output: String,
        truncated: bool,
        exit: Option<ExitStatus>,
    },
    TerminalExited(ExitStatus),
    ToolResult {
        content: Vec<ContentBlock>,
        details: Option<Value>,
        is_error: bool,
    },
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientFailure {
    /// The client answered with an error.
    #[error("{0}")]
    Error(String),
    /// Abort (or the turn's cancellation) ended the wait.
    #[error("the request was cancelled")]
    Cancelled,
    /// No answer in time (the wait, in milliseconds).
    #[error("the client did not answer within {} seconds", seconds(*.0))]
    TimedOut(u64),
    /// The client is gone (its input ended).
    #[error("the client is gone")]
    Gone,
}

/// What the client can do, as it declared it (ACP `clientCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
}

/// A tool the client runs itself (declared in JSON-RPC `initialize`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// Default wait for a client tool's result.
pub const CLIENT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// The client side of one agent: what the front end declared when it
/// started the session (or later, by `initialize`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSetup {
    pub capabilities: ClientCapabilities,
    /// Tools the client runs (answered by `toolResult`).
    pub tools: Vec<ClientToolSpec>,
    /// How long a client tool may take before its call fails.
    pub tool_timeout: Duration,
    /// Which tool calls need the user's approval.
    pub approval: ApprovalPolicy,
}

impl Default for ClientSetup {
    fn default() -> Self {
        ClientSetup {
            capabilities: ClientCapabilities::default(),
            tools: Vec::new(),
            tool_timeout: CLIENT_TOOL_TIMEOUT,
            approval: ApprovalPolicy::default(),
        }
    }
}

/// A running tool's way to the client: the broker of open requests, where
/// their events go, and what the client can do.
#[derive(Clone)]
pub struct ClientLink {
    pub broker: Arc<ClientBroker>,
    pub events: Arc<dyn EventSink>,
    pub capabilities: ClientCapabilities,
    pub approvals: Arc<Approvals>,
}

impl std::fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLink").field("capabilities", &self.capabilities).finish_non_exhaustive()
    }
}

impl ClientLink {
    /// Ask the client and wait for its answer (or cancellation, the timeout, its going away).
    pub async fn request(
        &self,
        kind: ClientRequestKind,
        cancel: &CancellationToken,
        timeout: Option<Duration>,
    ) -> Result<ClientReply, ClientFailure> {
        self.broker.request(self.events.as_ref(), kind, cancel, timeout).await
    }

    /// The editor's text of `path`.
    pub async fn read_text_file(&self, path: PathBuf, cancel: &CancellationToken) -> Result<String, ClientFailure> {
        match self.request(ClientRequestKind::ReadTextFile { path }, cancel, None).await? {
            ClientReply::Text(text) => Ok(text),
            other => Err(unexpected(&other)),
        }
    }

    /// Write `content` to `path` through the editor.
    pub async fn write_text_file(
        &self,
        path: PathBuf,
        content: String,
        cancel: &CancellationToken,
    ) -> Result<(), ClientFailure> {
        self.request(ClientRequestKind::WriteTextFile { path, content }, cancel, None).await.map(|_| ())
    }
}

/// Milliseconds as seconds, the way pi prints numbers (`0.5`, `30`).
pub fn seconds(ms: u64) -> String {
    crate::js::js_number_string(ms as f64 / 1000.0)
}

fn unexpected(reply: &ClientReply) -> ClientFailure {
    ClientFailure::Error(format!("unexpected answer from the client: {reply:?}"))
}
