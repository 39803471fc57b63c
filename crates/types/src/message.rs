//! Conversation messages and content blocks, in pi's JSON shape.
//!
//! These types serialize exactly as pi writes them into session files and
//! sends them on the native wire (`role`-tagged objects, camelCase fields,
//! absent optionals omitted). Unknown fields read from a session file are kept
//! in `extra` so that nothing written by another pi version is lost.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::message_text::Text;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Plain text content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    // Shared, not copied, between the session, the conversation and replies.
    pub text: Text,
    /// Provider signature of the text block (some APIs round-trip it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// Model reasoning ("thinking") content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    pub thinking: String,
    /// Opaque signature the provider needs to accept the block back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning (the signature holds it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// Base64 image content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON arguments (an object).
    pub arguments: Value,
    /// Provider signature attached to the call (Gemini thought signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// Set when the streamed arguments were not valid JSON (`arguments` is
    /// then `{}`): the parser's message and the text received, as pi 1.6.0
    /// records it. Such a call is never executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    Text(TextContent),
    Thinking(ThinkingContent),
    Image(ImageContent),
    ToolCall(ToolCall),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent { text: Text::from(text.into()), text_signature: None })
    }
}

/// User content: pi accepts a bare string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// Concatenated text of all text blocks.
    pub fn text(&self) -> String {
        match self {
            UserContent::Text(t) => t.clone(),
            UserContent::Blocks(blocks) => join_text(blocks),
        }
    }

    /// The content as a list of blocks.
    pub fn blocks(&self) -> Vec<ContentBlock> {
        match self {
            UserContent::Text(t) => vec![ContentBlock::text(t.clone())],
            UserContent::Blocks(b) => b.clone(),
        }
    }
}

/// Concatenate the text blocks of a content list.
pub fn join_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for b in blocks {
        if let ContentBlock::Text(t) = b {
            out.push_str(&t.text);
        }
    }
    out
}

/// An optional field read leniently: a value of another type (written by
/// some other program) reads as absent rather than making the whole message
/// unreadable; a record read that way keeps its original text.
fn lenient<'de, D: serde::Deserializer<'de>, T: serde::de::DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

/// Serialize a float the way JavaScript prints numbers: integral values
/// without a fractional part (`0`, not `0.0`).
pub fn js_number<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 { s.serialize_i64(*v as i64) } else { s.serialize_f64(*v) }
}

/// Cost in US dollars, split like pi's usage object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    #[serde(default, serialize_with = "js_number")]
    pub input: f64,
    #[serde(default, serialize_with = "js_number")]
    pub output: f64,
    #[serde(default, serialize_with = "js_number")]
    pub cache_read: f64,
    #[serde(default, serialize_with = "js_number")]
    pub cache_write: f64,
    #[serde(default, serialize_with = "js_number")]
    pub total: f64,
    /// pi 1.6's flag: `total` is the provider's billed cost (OpenRouter), not
    /// computed from the model's prices. Absent until a cost is computed.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub total_from_provider: Option<bool>,
    /// Fields written by other pi versions, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token usage of one model call, with its cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    /// Reasoning tokens (part of `output`), as the provider reports them;
    /// absent until the provider reports usage.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub reasoning: Option<u64>,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub cost: Cost,
    /// Fields written by other pi versions, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Usage {
    /// Add another usage (tokens and cost) into this one.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }

    /// Tokens counted toward the context window by this call.
    pub fn context_tokens(&self) -> u64 {
        if self.total_tokens > 0 {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

/// Why the assistant stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

/// A user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub content: UserContent,
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    pub timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The provider's own stop reason (`stop`, `tool_calls`, `end_turn`, …).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub raw_stop_reason: Option<String>,
    /// Milliseconds from the request to the end of the reply.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub duration_ms: Option<u64>,
    /// The thinking level requested for this reply (`off`, `low`, …).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub thinking_level: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AssistantMessage {
    /// A message of `model` with no content yet: zero usage, stamped now.
    pub fn empty(model: &crate::model::Model, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Usage::default(),
            stop_reason,
            timestamp: now_ms(),
            response_id: None,
            error_message: None,
            raw_stop_reason: None,
            duration_ms: None,
            thinking_level: None,
            extra: Map::new(),
        }
    }

    /// Concatenated text blocks.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Nested model work done by the tool, counted in the session totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub is_error: bool,
    /// Milliseconds the tool ran (absent for a call refused before running).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub duration_ms: Option<u64>,
    pub timestamp: i64,
    /// The calls the tool made to other tools (pi's `ctx.executeTool()`), bounded.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub nested_calls: Option<NestedToolCalls>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a tool result keeps of the calls its tool made to other tools: no
/// results, and at most so much (`complete: false` when something was left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NestedToolCalls {
    pub calls: Vec<NestedToolCallRecord>,
    pub complete: bool,
}

/// One call a tool made to another tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCallRecord {
    /// `<calling call's id>/<n>`.
    pub id: String,
    pub name: String,
    pub status: NestedCallStatus,
    /// The arguments, unless they were too large to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The size of arguments left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub duration_ms: Option<u64>,
    /// The start of the error text of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a nested call ended (`unfinished`: it had not when the record was taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NestedCallStatus {
    Ok,
    Error,
    Unfinished,
}

/// Output of a shell command run by the client through the RPC `bash` command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    pub command: String,
    pub output: String,
    /// Absent when the command was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    /// Path of the full log when the output was truncated; absent otherwise
    /// (pi 1.6 writes no `fullOutputPath` key for an untruncated command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// When true the output is kept out of the model's context.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_from_context: bool,
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The summary that replaces compacted history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    pub summary: String,
    pub tokens_before: u64,
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The summary of an abandoned branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    pub summary: String,
    pub from_id: String,
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A message injected by an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: UserContent,
    #[serde(default = "default_true")]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_true() -> bool {
    true
}

/// A tool as a system message declares it to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDeclaration {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default)]
    pub parameters: Value,
    /// pi's request for constrained (strict schema) sampling, e.g.
    /// `{"type": "json_schema", "strict": "prefer"}` on its built-in tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool a system message withdraws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolReference {
    pub name: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// pi 1.6's system message: the prompt and tools the model has, recorded in
/// the conversation. The first declares every prompt section and tool;
/// later ones patch sections by name (`null` removes one) and add or remove
/// tools. Replaying them in order gives the current prompt and tools
/// (module `system_message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Instructions appended to the prompt; pi and pi-rpc write `""` and
    /// carry the prompt in `sections`.
    #[serde(default = "no_content")]
    pub content: UserContent,
    /// Prompt sections by name, in prompt order (a null value removes one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<std::collections::BTreeMap<String, Option<String>>>")]
    pub sections: Option<Map<String, Value>>,
    pub timestamp: i64,
    /// Tools the model may call from here on (a changed one is removed, then added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<ToolDeclaration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn no_content() -> UserContent {
    UserContent::Text(String::new())
}

/// Any message of the conversation (pi's `AgentMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum AgentMessage {
    /// pi 1.6's prompt and tool declarations (see [`SystemMessage`]).
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    CompactionSummary(CompactionSummaryMessage),
    BranchSummary(BranchSummaryMessage),
    Custom(CustomMessage),
}

impl AgentMessage {
    /// A user message made of text and optional images, stamped now.
    pub fn user(text: &str, images: &[ImageContent]) -> Self {
        let mut blocks = vec![ContentBlock::text(text)];
        blocks.extend(images.iter().cloned().map(ContentBlock::Image));
        AgentMessage::User(UserMessage { content: UserContent::Blocks(blocks), timestamp: now_ms(), extra: Map::new() })
    }

    pub fn role(&self) -> &'static str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::Custom(_) => "custom",
        }
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            AgentMessage::System(m) => m.timestamp,
            AgentMessage::User(m) => m.timestamp,
            AgentMessage::Assistant(m) => m.timestamp,
            AgentMessage::ToolResult(m) => m.timestamp,
            AgentMessage::BashExecution(m) => m.timestamp,
            AgentMessage::CompactionSummary(m) => m.timestamp,
            AgentMessage::BranchSummary(m) => m.timestamp,
            AgentMessage::Custom(m) => m.timestamp,
        }
    }
}

/// Text a bash execution contributes to the model's context (pi's format).
pub fn bash_execution_to_text(m: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", m.command);
    if m.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str("```\n");
        text.push_str(&m.output);
        text.push_str("\n```");
    }
    if m.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if m.truncated
        && let Some(path) = &m.full_output_path
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_message_serializes_in_pi_key_order() {
        let m = AgentMessage::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("hi")],
            api: "openai-completions".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
            timestamp: 1,
            response_id: None,
            error_message: None,
            raw_stop_reason: None,
            duration_ms: None,
            thinking_level: None,
            extra: Map::new(),
        });
        let s = serde_json::to_string(&m).unwrap();
        assert!(
            s.starts_with(r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai-completions""#),
            "{s}"
        );
        assert!(s.contains(r#""stopReason":"toolUse""#));
        let back: AgentMessage = serde_json::from_str(&s).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let line = r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":5,"durationMs":42}"#;
        let m: AgentMessage = serde_json::from_str(line).unwrap();
        let out = serde_json::to_value(&m).unwrap();
        assert_eq!(out["durationMs"], 42);
    }

    #[test]
    fn user_content_accepts_string_and_blocks() {
        let a: AgentMessage = serde_json::from_str(r#"{"role":"user","content":"hey","timestamp":1}"#).unwrap();
        let b: AgentMessage =
            serde_json::from_str(r#"{"role":"user","content":[{"type":"text","text":"hey"}],"timestamp":1}"#).unwrap();
        match (a, b) {
            (AgentMessage::User(a), AgentMessage::User(b)) => assert_eq!(a.content.text(), b.content.text()),
            _ => panic!("not user messages"),
        }
    }

    #[test]
    fn bash_text_matches_pi() {
        let mut m = BashExecutionMessage {
            command: "exit 7".into(),
            output: String::new(),
            exit_code: Some(7),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: false,
            timestamp: 0,
            extra: Map::new(),
        };
        assert_eq!(bash_execution_to_text(&m), "Ran `exit 7`\n(no output)\n\nCommand exited with code 7");
        m.command = "printf 'no newline'".into();
        m.output = "no newline".into();
        m.exit_code = Some(0);
        assert_eq!(bash_execution_to_text(&m), "Ran `printf 'no newline'`\n```\nno newline\n```");
    }
}
