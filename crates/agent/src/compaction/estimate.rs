//! Token estimates as pi 1.6 makes them (`estimateTokens`, `calculateContextTokens`,
//! `shouldCompact`): characters / 4, rounded up, where a character is a
//! UTF-16 code unit as in JavaScript's `String.length`.

use serde_json::Value;

use crate::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason, Usage, UserContent};
use crate::provider::ToolSpec;

/// Characters an image counts for (pi's `ESTIMATED_IMAGE_CHARS`).
pub const IMAGE_CHARS: u64 = 4800;

/// Length of `text` in UTF-16 code units (JavaScript `String.length`).
pub fn js_len(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

fn tokens(chars: u64) -> u64 {
    chars.div_ceil(4)
}

/// Text and image characters of a content list (thinking and tool calls not counted).
fn text_and_images(blocks: &[ContentBlock]) -> u64 {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => js_len(&t.text),
            ContentBlock::Image(_) => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

fn user_content_chars(content: &UserContent) -> u64 {
    match content {
        UserContent::Text(t) => js_len(t),
        UserContent::Blocks(b) => text_and_images(b),
    }
}

/// pi's `estimateTokens` for one message.
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::User(m) => user_content_chars(&m.content),
        AgentMessage::Custom(m) => user_content_chars(&m.content),
        AgentMessage::ToolResult(m) => text_and_images(&m.content),
        AgentMessage::Assistant(m) => m
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => js_len(&t.text),
                ContentBlock::Thinking(t) => js_len(&t.thinking),
                ContentBlock::ToolCall(c) => js_len(&c.name) + js_len(&c.arguments.to_string()),
                ContentBlock::Image(_) => 0,
            })
            .sum(),
        AgentMessage::BashExecution(m) => js_len(&m.command) + js_len(&m.output),
        AgentMessage::CompactionSummary(m) => js_len(&m.summary),
        AgentMessage::BranchSummary(m) => js_len(&m.summary),
        AgentMessage::System(m) => {
            let sections = m.sections.iter().flatten().filter_map(|(_, v)| v.as_str()).map(js_len).sum::<u64>();
            let tools = m.tools_added.as_ref().and_then(|t| serde_json::to_string(t).ok()).map_or(0, |t| js_len(&t));
            user_content_chars(&m.content) + sections + tools
        }
    };
    tokens(chars)
}

/// Sum of [`estimate_tokens`] over `messages`.
pub fn estimate_messages(messages: &[AgentMessage]) -> u64 {
    messages.iter().map(estimate_tokens).sum()
}

/// pi's estimate of a stored pi 1.6 `system` message: its content, its
/// sections and the JSON of the tools it declares.
pub fn estimate_system_value(message: &Value) -> u64 {
    let mut chars = match message.get("content") {
        Some(Value::String(s)) => js_len(s),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map_or(0, js_len),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    };
    if let Some(Value::Object(sections)) = message.get("sections") {
        chars += sections.values().filter_map(Value::as_str).map(js_len).sum::<u64>();
    }
    if let Some(tools) = message.get("toolsAdded").filter(|t| !t.is_null()) {
        chars += js_len(&tools.to_string());
    }
    tokens(chars)
}

/// Our stand-in for pi's system message: the system prompt text plus the
/// JSON of the tools declared to the model.
pub fn estimate_system_prompt(prompt: &str, tools: &[ToolSpec]) -> u64 {
    let declared: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let tools_chars = if declared.is_empty() { 0 } else { js_len(&Value::Array(declared).to_string()) };
    tokens(js_len(prompt) + tools_chars)
}

/// pi's `calculateContextTokens`: `totalTokens`, else the sum of the parts.
pub fn context_tokens(usage: &Usage) -> u64 {
    usage.context_tokens()
}

/// The usage of an assistant reply that can be trusted for context size:
/// not aborted, not an error, and not all zero.
pub fn valid_usage(message: &AgentMessage) -> Option<&Usage> {
    match message {
        AgentMessage::Assistant(a) => assistant_usage(a),
        _ => None,
    }
}

/// [`valid_usage`] on an assistant message.
pub fn assistant_usage(a: &AssistantMessage) -> Option<&Usage> {
    let usable = !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error) && context_tokens(&a.usage) > 0;
    usable.then_some(&a.usage)
}

/// pi's `estimateContextTokens`: the last valid usage plus an estimate of the
/// messages after it, else an estimate of everything. Returns the tokens and
/// the index of the message whose usage was used.
pub fn estimate_context(messages: &[AgentMessage]) -> (u64, Option<usize>) {
    match messages.iter().rposition(|m| valid_usage(m).is_some()) {
        Some(i) => {
            let usage = valid_usage(&messages[i]).map_or(0, context_tokens);
            (usage + estimate_messages(&messages[i + 1..]), Some(i))
        }
        None => (estimate_messages(messages), None),
    }
}

/// pi's `shouldCompact`: automatic compaction when the context uses more
/// than `context_window - reserve_tokens`.
pub fn should_compact(context_tokens: u64, context_window: u64, reserve_tokens: u64) -> bool {
    i128::from(context_tokens) > i128::from(context_window) - i128::from(reserve_tokens)
}
