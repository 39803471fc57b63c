//! The core's one event enum: everything a front end may tell its client.
//!
//! Adapters map these to their wire in one exhaustive `match`. Field values are
//! already in pi's shapes (messages, tool results) so the native dialect can
//! serialize them as they are.

use serde_json::Value;

use crate::message::{AgentMessage, ContentBlock, ToolCall, Usage};
use crate::model::{Model, ThinkingLevel};
use crate::op::RequestTag;

/// A streaming step inside one assistant message (pi's `assistantMessageEvent`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AssistantStreamEvent {
    TextStart { content_index: usize },
    TextDelta { content_index: usize, delta: String },
    TextEnd { content_index: usize, content: String },
    ThinkingStart { content_index: usize },
    ThinkingDelta { content_index: usize, delta: String },
    ThinkingEnd { content_index: usize, content: String },
    ToolCallStart { content_index: usize, id: String, tool_name: String },
    ToolCallDelta { content_index: usize, delta: String },
    ToolCallEnd { content_index: usize, tool_call: ToolCall },
}

/// Result payload of a finished tool (or a partial one while it runs).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolResultPayload {
    pub content: Vec<ContentBlock>,
    pub details: Option<Value>,
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Manual => "manual",
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// What a successful compaction produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub estimated_tokens_after: u64,
    pub usage: Option<Usage>,
    pub details: Value,
}

/// Where a summarisation retry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SummarizationSource {
    Compaction(CompactionReason),
    BranchSummary,
}

/// A request for user interaction made by an extension.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtensionUiRequest {
    /// Unique id the client echoes in its response (dialogs only).
    pub id: String,
    /// Name of the extension that asked.
    pub extension: String,
    pub kind: ExtensionUiKind,
}

/// The nine UI methods of the extension UI sub-protocol.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ExtensionUiKind {
    Select { title: String, options: Vec<String>, timeout_ms: Option<u64> },
    Confirm { title: String, message: String, timeout_ms: Option<u64> },
    Input { title: String, placeholder: Option<String>, timeout_ms: Option<u64> },
    Editor { title: String, prefill: Option<String>, timeout_ms: Option<u64> },
    Notify { message: String, notify_type: Option<String> },
    SetStatus { status_key: String, status_text: Option<String> },
    SetWidget { widget_key: String, widget_lines: Option<Vec<String>>, widget_placement: Option<String> },
    SetTitle { title: String },
    SetEditorText { text: String },
}

impl ExtensionUiKind {
    /// Dialogs wait for an answer; the other methods are fire-and-forget.
    pub fn is_dialog(&self) -> bool {
        matches!(
            self,
            ExtensionUiKind::Select { .. }
                | ExtensionUiKind::Confirm { .. }
                | ExtensionUiKind::Input { .. }
                | ExtensionUiKind::Editor { .. }
        )
    }

    /// The method name of the native sub-protocol.
    pub fn method(&self) -> &'static str {
        match self {
            ExtensionUiKind::Select { .. } => "select",
            ExtensionUiKind::Confirm { .. } => "confirm",
            ExtensionUiKind::Input { .. } => "input",
            ExtensionUiKind::Editor { .. } => "editor",
            ExtensionUiKind::Notify { .. } => "notify",
            ExtensionUiKind::SetStatus { .. } => "setStatus",
            ExtensionUiKind::SetWidget { .. } => "setWidget",
            ExtensionUiKind::SetTitle { .. } => "setTitle",
            ExtensionUiKind::SetEditorText { .. } => "set_editor_text",
        }
    }
}

/// Context window usage after a model reply.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContextUsage {
    pub tokens: u64,
    pub context_window: u64,
}

/// Everything the agent core reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AgentEvent {
    AgentStart,
    AgentEnd {
        messages: Vec<AgentMessage>,
        will_retry: bool,
    },
    /// The whole run of one prompt is over: no retry, compaction retry or queued message follows.
    AgentSettled {
        aborted: bool,
        usage: Usage,
    },
    TurnStart,
    TurnEnd {
        message: AgentMessage,
        tool_results: Vec<AgentMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    MessageUpdate {
        event: AssistantStreamEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: ToolResultPayload,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResultPayload,
        is_error: bool,
    },
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        result: Option<Box<CompactionResult>>,
        aborted: bool,
        will_retry: bool,
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        final_error: Option<String>,
    },
    SummarizationRetryScheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    SummarizationRetryAttemptStart {
        source: SummarizationSource,
    },
    SummarizationRetryFinished,
    /// A chunk of output of an RPC `bash` command; `request` is the command's tag.
    BashExecutionUpdate {
        request: Option<RequestTag>,
        delta: String,
    },
    ThinkingLevelChanged {
        level: ThinkingLevel,
    },
    ModelChanged {
        model: Box<Model>,
        thinking_level: ThinkingLevel,
    },
    SessionInfoChanged {
        name: String,
    },
    /// Context usage after an assistant reply (drives JSON-RPC `contextUsage`).
    ContextUsage(ContextUsage),
    /// A model or tool error the client should hear about (the native dialect shows it in messages).
    RunError {
        error: crate::error::CoreError,
        will_retry: bool,
    },
    ExtensionError {
        extension_path: String,
        event: String,
        error: String,
    },
    ExtensionUiRequest(ExtensionUiRequest),
    /// The core asks the client (an approval, a file, a terminal, a client
    /// tool's result) and waits for an `Op::ClientResponse` with this id.
    ClientRequest(crate::client::ClientRequest),
    /// The core stopped waiting for this request (abort, timeout): a late answer is ignored.
    ClientRequestEnded {
        id: String,
    },
}

/// Where a background task's events go (the actor's queue; a test's list).
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    async fn emit(&self, event: AgentEvent);

    /// Emit several events, in order (a sink may hand them on together).
    async fn emit_all(&self, events: Vec<AgentEvent>) {
        for event in events {
            self.emit(event).await;
        }
    }

    /// Hand on several events at once if that needs no wait, as
    /// [`EventSink::emit_all`] would; else give them back (by default).
    fn try_emit_all(&self, events: Vec<AgentEvent>) -> Result<(), Vec<AgentEvent>> {
        Err(events)
    }
}
