//! Wire types of the native dialect's output: events and responses, in the
//! seed's shapes and key order. Message objects are the core's (same JSON as
//! the session file).

use pi_core::message::{AgentMessage, ContentBlock, ToolCall};
use pi_core::model::Model;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The `assistantMessageEvent` of a `message_update`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireAssistantEvent {
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        content_index: usize,
        id: String,
        tool_name: String,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
        tool_call: WireToolCall,
    },
}

/// The completed tool call of `toolcall_end` (`{type:"toolCall", id, name, arguments}`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WireToolCall {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(flatten)]
    pub call: ToolCall,
}

/// A tool result or partial result (`{content, details?}`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WireToolResult {
    pub content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// `compaction_end.result` and the `compact` response data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireCompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub estimated_tokens_after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<pi_core::message::Usage>,
    pub details: Value,
}

/// An extension UI request (`extension_ui_request`), fields per method.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireUiRequest {
    pub id: String,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_lines: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widget_placement: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// Every event the native dialect emits.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireEvent {
    AgentStart,
    AgentEnd {
        messages: Vec<AgentMessage>,
        will_retry: bool,
    },
    AgentSettled {
        aborted: bool,
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
        assistant_message_event: WireAssistantEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    BashExecutionUpdate {
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<Value>")]
        id: Option<Box<RawValue>>,
        delta: String,
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
        partial_result: WireToolResult,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: WireToolResult,
        is_error: bool,
    },
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    CompactionStart {
        reason: String,
    },
    CompactionEnd {
        reason: String,
        result: Option<WireCompactionResult>,
        aborted: bool,
        will_retry: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
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
        #[serde(skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    SummarizationRetryScheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    SummarizationRetryAttemptStart {
        source: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    SummarizationRetryFinished,
    ThinkingLevelChanged {
        level: String,
    },
    SessionInfoChanged {
        name: String,
    },
    ExtensionError {
        extension_path: String,
        event: String,
        error: String,
    },
    ExtensionUiRequest(WireUiRequest),
}

/// `data` of a response: absent, or a value (which may be `null`).
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseData {
    Absent,
    Value(Value),
}

impl ResponseData {
    fn is_absent(&self) -> bool {
        matches!(self, ResponseData::Absent)
    }
}

impl Serialize for ResponseData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResponseData::Absent => s.serialize_none(),
            ResponseData::Value(v) => v.serialize(s),
        }
    }
}

impl JsonSchema for ResponseData {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ResponseData".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Value as JsonSchema>::json_schema(generator)
    }
}

/// A response line: `{id?, type:"response", command?, success, data?|error?}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WireResponse {
    /// The request's `id`, echoed verbatim (absent when the request had none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub id: Option<Box<RawValue>>,
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    /// The command type; `parse` for unparsable lines; absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub success: bool,
    #[serde(skip_serializing_if = "ResponseData::is_absent")]
    pub data: ResponseData,
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
    pub fn ok(id: Option<Box<RawValue>>, command: &str, data: ResponseData) -> Self {
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
            data: ResponseData::Absent,
            error: Some(error.into()),
        }
    }
}

/// `get_state` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateData {
    pub model: Option<Model>,
    pub thinking_level: String,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub steering_mode: String,
    pub follow_up_mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    pub auto_compaction_enabled: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
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
    pub tokens: Option<u64>,
    pub context_window: u64,
    pub percent: Option<f64>,
}

/// `get_session_stats` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatsData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    pub tokens: TokensData,
    pub cost: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsageData>,
}

/// `bash` data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashData {
    pub output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// One entry of `get_commands`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandData {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One node of `get_tree`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeNodeData {
    pub entry: Value,
    pub children: Vec<TreeNodeData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_timestamp: Option<String>,
}
