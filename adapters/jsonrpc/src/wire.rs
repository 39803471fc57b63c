//! Typed JSON-RPC notifications. `notify.rs` builds these from the core's
//! events (results are the protocol table's), and the JSON Schemas of the dialect
//! (`schemas/jsonrpc/*.schema.json`) are generated from them; the doc
//! comments are the schema descriptions. Field order is the wire's key order.

use pi_core::message::{ContentBlock, StopReason};
use pi_core::model::ThinkingLevel;
use pi_transport::protocol::results::{WireCompactionReason, WireCompactionResult};
use pi_transport::protocol::ui::UiFields;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pi_core::jsonrpc_wire! {
    /// Every notification the server sends (`{"jsonrpc":"2.0","method":…,"params":…}`, no `id`).
    #[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
    #[serde(tag = "method", content = "params")]
    pub enum ServerNotification {
        /// Sent right after the `initialize` response.
        Initialized(InitializedParams),
        /// Streamed assistant output: text deltas, thinking deltas, and the complete message.
        AssistantMessage(AssistantMessageParams),
        /// A tool call starts executing.
        ToolCall(ToolCallParams),
        /// Progress of a running tool (accumulated output so far).
        ToolUpdate(ToolUpdateParams),
        /// A tool call finished.
        ToolResult(ToolResultParams),
        /// The run of a prompt settled (after retries and queued messages).
        TurnEnd(TurnEndParams),
        /// The steering or follow-up queue changed.
        QueueUpdate(QueueUpdateParams),
        /// A compaction starts.
        CompactionStart(CompactionStartParams),
        /// A compaction ended.
        CompactionEnd(CompactionEndParams),
        /// An automatic retry after a transient error is scheduled.
        AutoRetryStart(AutoRetryStartParams),
        /// The automatic retries ended.
        AutoRetryEnd(AutoRetryEndParams),
        /// A chunk of output of a `bash` request.
        BashOutput(BashOutputParams),
        /// The model or thinking level changed (after the response of the request that changed it).
        ModelChanged(ModelChangedParams),
        /// The session's display name changed.
        SessionNameChanged(SessionNameChangedParams),
        /// Context window usage after an assistant reply.
        ContextUsage(ContextUsageParams),
        /// A model or tool error during a run (the request was already answered).
        Error(ErrorParams),
        /// An extension threw an error.
        ExtensionError(ExtensionErrorParams),
        /// An extension asks the client for UI; dialogs are answered with an
        /// `extension:response` notification carrying the same `id`.
        ExtensionUi(ExtensionUiParams),
        /// A login started with `login` ended: the credential is stored (`success`), or `error` says why not.
        LoginCompleted(LoginCompletedParams),
    }
}

/// `loginCompleted` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginCompletedParams {
    /// The provider logged in to.
    pub provider: String,
    /// True when the credential is stored in auth.json.
    pub success: bool,
    /// Why the login failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `initialized` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializedParams {
    /// The session id.
    pub session_id: String,
    /// The model id (null without a model).
    pub model: Option<String>,
    /// The model's provider (null without a model).
    pub provider: Option<String>,
}

/// `assistantMessage` params, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AssistantMessageParams {
    /// A piece of answer text.
    Delta {
        /// The new text.
        delta: String,
    },
    /// A piece of thinking.
    ThinkingDelta {
        /// The new thinking text.
        thinking: String,
    },
    /// The assistant message is complete.
    Complete {
        /// The message's text.
        content: String,
        /// Tokens of this reply.
        usage: TokenUsage,
        /// Cost of this reply in US dollars.
        cost: f64,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// The model id.
        model: String,
        /// The error, when `stopReason` is `error` or `aborted`.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
}

/// Token counts of one reply.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens (cache reads and writes included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// `toolCall` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallParams {
    /// The tool's name.
    pub tool_name: String,
    /// The call's arguments.
    pub input: Value,
    /// The tool call id.
    pub tool_call_id: String,
}

/// A tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToolOutput {
    /// Content blocks (text, images).
    pub content: Vec<ContentBlock>,
}

/// `toolUpdate` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolUpdateParams {
    /// The tool call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The output so far.
    pub output: ToolOutput,
}

/// `toolResult` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultParams {
    /// The tool call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The output.
    pub output: ToolOutput,
    /// Tool-specific details (`{}` when none).
    pub details: Value,
    /// True when the tool failed.
    pub is_error: bool,
}

/// `turnEnd` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEndParams {
    /// Tokens used by the run (input, output, cache reads and writes).
    pub total_tokens: u64,
    /// Cost of the run in US dollars.
    pub total_cost: f64,
    /// True when the run was aborted.
    pub aborted: bool,
}

/// `queueUpdate` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueUpdateParams {
    /// Queued steering messages' texts.
    pub steering: Vec<String>,
    /// Queued follow-up messages' texts.
    pub follow_up: Vec<String>,
}

/// `compactionStart` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CompactionStartParams {
    /// `manual`, `threshold` or `overflow`.
    #[schemars(with = "WireCompactionReason")]
    pub reason: &'static str,
}

/// `compactionEnd` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEndParams {
    /// `manual`, `threshold` or `overflow`.
    #[schemars(with = "WireCompactionReason")]
    pub reason: &'static str,
    /// The result; null when aborted or failed.
    pub result: Option<WireCompactionResult>,
    /// True when aborted.
    pub aborted: bool,
    /// True when the prompt is retried after an overflow compaction.
    pub will_retry: bool,
    /// Why it failed (null otherwise).
    pub error_message: Option<String>,
}

/// `autoRetryStart` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoRetryStartParams {
    /// 1-based attempt number.
    pub attempt: u32,
    /// Retries allowed.
    pub max_attempts: u32,
    /// Delay before the retry.
    pub delay_ms: u64,
    /// The error that caused it.
    pub error_message: String,
}

/// `autoRetryEnd` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoRetryEndParams {
    /// True when a retry succeeded.
    pub success: bool,
    /// The last attempt number.
    pub attempt: u32,
    /// The final error (null on success).
    pub final_error: Option<String>,
}

/// `bashOutput` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BashOutputParams {
    /// The output chunk.
    pub delta: String,
}

/// `modelChanged` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangedParams {
    /// The model id.
    pub model: String,
    /// The model's provider.
    pub provider: String,
    /// The effective thinking level.
    #[schemars(with = "ThinkingLevel")]
    pub thinking_level: &'static str,
}

/// `sessionNameChanged` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionNameChangedParams {
    /// The new name.
    pub name: String,
}

/// `contextUsage` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ContextUsageParams {
    /// Tokens in the context.
    pub used: u64,
    /// The model's context window.
    pub total: u64,
    /// `used / total` (0 to 1).
    pub percentage: f64,
}

/// The string codes of the `error` notification (and of `error.data.kind`).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WireErrorKind {
    /// -32700 (only in `error.data.kind`).
    ParseError,
    /// -32600 (only in `error.data.kind`).
    InvalidRequest,
    InvalidParams,
    NotFound,
    Busy,
    Unsupported,
    ModelError,
    ToolError,
    RateLimit,
    ContextLimit,
    Aborted,
    InternalError,
}

/// `error` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorParams {
    /// The error text.
    pub message: String,
    /// String code: `model_error`, `rate_limit`, `context_limit`, …
    #[schemars(with = "WireErrorKind")]
    pub code: &'static str,
    /// True when the agent retries (or trying again later may succeed).
    pub retryable: bool,
}

/// `extension:error` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionErrorParams {
    /// The extension's path.
    pub extension_path: String,
    /// The event it was handling.
    pub event: String,
    /// The error text.
    pub error: String,
}

/// `extension:ui` params.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExtensionUiParams {
    /// Correlation id, echoed in `extension:response`.
    pub id: String,
    /// The extension's name.
    pub extension: String,
    /// `dialog` for select/confirm/input/editor, else the method name.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["dialog", "notify", "setStatus", "setWidget", "setTitle", "set_editor_text"]))]
    pub kind: &'static str,
    /// The UI method (`select`, `confirm`, `input`, `editor`, `notify`, …).
    #[schemars(extend("enum" = ["select", "confirm", "input", "editor", "notify", "setStatus", "setWidget", "setTitle", "set_editor_text"]))]
    pub method: &'static str,
    /// The method's fields (absent fields are left out).
    pub data: UiFields,
}
