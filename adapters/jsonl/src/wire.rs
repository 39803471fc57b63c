//! Wire types of the native dialect's output: events and the response
//! envelope, in the seed's shapes and key order. Message objects are the
//! core's (same JSON as the session file). Response `data` shapes and the
//! command params are the protocol table's (`pi_transport::protocol`).
//!
//! The doc comments here become the descriptions of the generated JSON
//! Schemas (`schemas/jsonl/*.schema.json`).

use pi_core::message::{AgentMessage, ContentBlock, ToolCall, Usage};
use pi_core::model::ThinkingLevel;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

pub use pi_transport::protocol::results::*;
pub use pi_transport::protocol::ui::UiFields;

/// The `assistantMessageEvent` of a `message_update`: one streaming step of
/// the assistant message, without any cumulative snapshot. Clients rebuild the
/// message from these deltas by `contentIndex`; `message_end` is authoritative.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireAssistantEvent {
    /// A text block started.
    TextStart {
        /// Index of the block in the message's `content`.
        content_index: usize,
    },
    /// A piece of text.
    TextDelta {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A text block ended.
    TextEnd {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The whole text of the block.
        content: String,
    },
    /// A thinking block started.
    ThinkingStart {
        /// Index of the block in the message's `content`.
        content_index: usize,
    },
    /// A piece of thinking.
    ThinkingDelta {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The new thinking text.
        delta: String,
    },
    /// A thinking block ended.
    ThinkingEnd {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The whole thinking text of the block.
        content: String,
    },
    /// A tool call started.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The tool call id.
        id: String,
        /// Name of the tool called.
        tool_name: String,
    },
    /// A piece of the tool call's JSON arguments (buffer them; `toolcall_end` has the parsed call).
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The next fragment of the arguments' JSON text.
        delta: String,
    },
    /// A tool call ended.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block in the message's `content`.
        content_index: usize,
        /// The complete call.
        tool_call: WireToolCall,
    },
}

/// The completed tool call of `toolcall_end` (`{type:"toolCall", id, name, arguments}`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WireToolCall {
    /// Always `"toolCall"`.
    #[serde(rename = "type")]
    #[schemars(extend("const" = "toolCall"))]
    pub kind: &'static str,
    #[serde(flatten)]
    pub call: ToolCall,
}

/// A tool result or partial result (`{content, details?, structuredContent?}`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireToolResult {
    /// Content blocks the model sees (text, images).
    pub content: Vec<ContentBlock>,
    /// Tool-specific details (e.g. the edit diff); absent when the tool reports none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The tool's structured result, for programs rather than the model (bash:
    /// `{output, truncated, full_output_path?, exit_code, wall_time_seconds}`;
    /// read: the text, or `{type: "image", data, mimeType, note}`; MCP tools:
    /// the server's result). Only on `tool_execution_end`, as pi 1.6.0 sends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the result itself reports an error (an MCP result with
    /// `isError`); absent otherwise, also for failures the tool threw.
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The tool's own model usage (an extension tool that ran a sub-agent),
    /// as the toolResult message's `usage`; absent when it reports none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `true` when the tool ended the run after its batch (an extension tool's
    /// `terminate: true`, as pi 1.6.0 passes its result on); absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
}

/// An extension UI request (`extension_ui_request`); the fields present depend on `method`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireUiRequest {
    /// Unique id; dialogs are answered with an `extension_ui_response` carrying it.
    pub id: String,
    /// `select`, `confirm`, `input`, `editor` (dialogs) or `notify`, `setStatus`,
    /// `setWidget`, `setTitle`, `set_editor_text` (fire and forget).
    #[schemars(extend("enum" = ["select", "confirm", "input", "editor", "notify", "setStatus", "setWidget", "setTitle", "set_editor_text"]))]
    pub method: String,
    /// The method's fields (absent ones are left out).
    #[serde(flatten)]
    pub fields: UiFields,
}

pi_core::native_wire! {
    /// Every event the native dialect emits. Events carry no `id`, except
    /// `bash_execution_update` (its command's id) and `extension_ui_request` (its own).
    #[derive(Debug, Clone, Serialize, JsonSchema)]
    #[serde(tag = "type", rename_all_fields = "camelCase")]
    pub enum WireEvent {
        /// The agent starts processing.
        AgentStart,
        /// A low-level agent run ended (a retry, compaction or queued continuation may follow).
        AgentEnd {
            /// Every message appended during this run.
            messages: Vec<AgentMessage>,
            /// True when an automatic retry follows.
            will_retry: bool,
        },
        /// The whole run settled: no retry, compaction retry or queued continuation is left.
        AgentSettled {
            /// True when the run ended because it was aborted.
            aborted: bool,
        },
        /// A turn (one assistant reply and its tool calls) starts.
        TurnStart,
        /// A turn ended.
        TurnEnd {
            /// The turn's assistant message.
            message: AgentMessage,
            /// The tool results of the turn, in call order.
            tool_results: Vec<AgentMessage>,
        },
        /// A message starts (user, assistant, toolResult, bashExecution, …).
        MessageStart {
            /// The message (for the assistant: as it starts).
            message: AgentMessage,
        },
        /// A streaming step of the assistant message.
        MessageUpdate {
            /// The message's usage so far (zeros until the provider reports it), as pi 1.6.0 sends it.
            usage: std::sync::Arc<Usage>,
            /// The delta.
            assistant_message_event: WireAssistantEvent,
        },
        /// A message is complete.
        MessageEnd {
            /// The final message.
            message: AgentMessage,
        },
        /// A chunk of output of an RPC `bash` command.
        BashExecutionUpdate {
            /// The `id` of the `bash` command, verbatim (absent when it had none).
            #[serde(skip_serializing_if = "Option::is_none")]
            #[schemars(with = "Option<Value>")]
            id: Option<Box<RawValue>>,
            /// The output chunk (stdout and stderr interleaved).
            delta: String,
        },
        /// A tool starts executing.
        ToolExecutionStart {
            /// The tool call id.
            tool_call_id: String,
            /// The tool's name.
            tool_name: String,
            /// The call's arguments.
            args: Value,
            /// The call whose tool made this one (`ctx.executeTool()`); absent for the model's calls.
            #[serde(skip_serializing_if = "Option::is_none")]
            parent_tool_call_id: Option<String>,
        },
        /// Progress of a running tool (accumulated output so far, not a delta).
        ToolExecutionUpdate {
            /// The tool call id.
            tool_call_id: String,
            /// The tool's name.
            tool_name: String,
            /// The call's arguments.
            args: Value,
            /// The result so far.
            partial_result: WireToolResult,
            /// The call whose tool made this one (`ctx.executeTool()`); absent for the model's calls.
            #[serde(skip_serializing_if = "Option::is_none")]
            parent_tool_call_id: Option<String>,
        },
        /// A tool finished.
        ToolExecutionEnd {
            /// The tool call id.
            tool_call_id: String,
            /// The tool's name.
            tool_name: String,
            /// The result.
            result: WireToolResult,
            /// True when the tool failed.
            is_error: bool,
            /// Milliseconds the tool ran; absent for a call refused before it ran
            /// (unknown tool, invalid arguments, blocked).
            #[serde(skip_serializing_if = "Option::is_none")]
            duration_ms: Option<u64>,
            /// The call whose tool made this one (`ctx.executeTool()`); absent for the model's calls.
            #[serde(skip_serializing_if = "Option::is_none")]
            parent_tool_call_id: Option<String>,
        },
        /// The steering or follow-up queue changed (full queues).
        QueueUpdate {
            /// Queued steering messages' texts.
            steering: Vec<String>,
            /// Queued follow-up messages' texts.
            follow_up: Vec<String>,
        },
        /// A compaction starts.
        CompactionStart {
            /// `manual`, `threshold` or `overflow`.
            #[schemars(with = "WireCompactionReason")]
            reason: String,
        },
        /// A compaction ended.
        CompactionEnd {
            /// `manual`, `threshold` or `overflow`.
            #[schemars(with = "WireCompactionReason")]
            reason: String,
            /// The result; null when the compaction was aborted or failed.
            result: Option<WireCompactionResult>,
            /// True when the compaction was aborted.
            aborted: bool,
            /// True when the prompt is retried after an overflow compaction.
            will_retry: bool,
            /// Why the compaction failed.
            #[serde(skip_serializing_if = "Option::is_none")]
            error_message: Option<String>,
        },
        /// An automatic retry after a transient error is scheduled.
        AutoRetryStart {
            /// 1-based attempt number.
            attempt: u32,
            /// Retries allowed.
            max_attempts: u32,
            /// Delay before the retry.
            delay_ms: u64,
            /// The error that caused the retry.
            error_message: String,
        },
        /// The automatic retries ended.
        AutoRetryEnd {
            /// True when a retry succeeded.
            success: bool,
            /// The last attempt number.
            attempt: u32,
            /// The final error when `success` is false.
            #[serde(skip_serializing_if = "Option::is_none")]
            final_error: Option<String>,
        },
        /// A summarisation (compaction, branch summary) retry is scheduled.
        SummarizationRetryScheduled {
            /// 1-based attempt number.
            attempt: u32,
            /// Retries allowed.
            max_attempts: u32,
            /// Delay before the retry.
            delay_ms: u64,
            /// The error that caused the retry.
            error_message: String,
        },
        /// A retried summarisation request starts.
        SummarizationRetryAttemptStart {
            /// `compaction` or `branchSummary`.
            #[schemars(extend("enum" = ["compaction", "branchSummary"]))]
            source: String,
            /// The compaction reason (absent for branch summaries).
            #[serde(skip_serializing_if = "Option::is_none")]
            #[schemars(with = "Option<WireCompactionReason>")]
            reason: Option<String>,
        },
        /// The summarisation retry loop ended.
        SummarizationRetryFinished,
        /// The effective thinking level changed.
        ThinkingLevelChanged {
            /// The new level.
            #[schemars(with = "ThinkingLevel")]
            level: String,
        },
        /// The session's display name changed.
        SessionInfoChanged {
            /// The new name.
            name: String,
        },
        /// An entry was appended to the session outside the message flow, as
        /// pi 1.6.0 announces it: the `context_edit` (`replacement: null`)
        /// that leaves a retried or recovered attempt out of the model's
        /// context, or the `usage` entry (`kind: "cache_warm"`) of a prompt-cache refresh.
        EntryAppended {
            /// The entry, as written to the session file.
            #[schemars(with = "pi_core::session::entry::SessionEntry")]
            entry: Value,
        },
        /// An extension threw an error.
        ExtensionError {
            /// The extension's path (or `command:<name>`).
            extension_path: String,
            /// The event it was handling.
            event: String,
            /// The error text.
            error: String,
        },
        /// An extension asks the client for UI.
        ExtensionUiRequest(WireUiRequest),
    }
}

/// A response line: `{id?, type:"response", command?, success, data?|error?}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WireResponse {
    /// The request's `id`, echoed verbatim (absent when the request had none,
    /// and on parse errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub id: Option<Box<RawValue>>,
    /// Always `"response"`.
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    /// The command type; `parse` for unparsable lines; absent when the line had no usable `type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether the command was accepted and carried out.
    pub success: bool,
    /// The command's result, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub data: Option<Box<RawValue>>,
    /// Why the command failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The constant `"response"` tag.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub enum ResponseTag {
    #[default]
    #[serde(rename = "response")]
    Response,
}

impl WireResponse {
    pub fn ok(id: Option<Box<RawValue>>, command: &str, data: Option<Box<RawValue>>) -> Self {
        WireResponse {
            id,
            kind: ResponseTag::Response,
            command: Some(command.to_string()),
            success: true,
            data,
            error: None,
        }
    }

    pub fn err(id: Option<Box<RawValue>>, command: Option<&str>, error: impl Into<String>) -> Self {
        WireResponse {
            id,
            kind: ResponseTag::Response,
            command: command.map(str::to_string),
            success: false,
            data: None,
            error: Some(error.into()),
        }
    }
}
