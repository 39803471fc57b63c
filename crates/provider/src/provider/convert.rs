//! Provider-neutral context preparation shared by every wire API: the agent's
//! messages become the model's user/assistant/toolResult messages (pi's
//! `convertToLlm`), then are cleaned for the target model (pi-ai's
//! `transformMessages`); plus pi's context-size estimate and output-token cap.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{ProviderRequest, ToolSpec};
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ToolResultMessage, UserContent,
    bash_execution_to_text, now_ms,
};
use crate::model::Model;

/// Placeholder for a user image sent to a text-only model.
pub const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
/// Placeholder for a tool-result image sent to a text-only model.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";
/// Text of the synthetic result given to a tool call that never got one.
pub const NO_RESULT_TEXT: &str = "No result provided";

const COMPACTION_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX: &str = "\n</summary>";
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

/// A message as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmMessage {
    User { content: UserContent, timestamp: i64 },
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

impl LlmMessage {
    fn timestamp(&self) -> i64 {
        match self {
            LlmMessage::User { timestamp, .. } => *timestamp,
            LlmMessage::Assistant(m) => m.timestamp,
            LlmMessage::ToolResult(m) => m.timestamp,
        }
    }
}

fn user_text(text: String, timestamp: i64) -> LlmMessage {
    LlmMessage::User { content: UserContent::Blocks(vec![ContentBlock::text(text)]), timestamp }
}

/// pi's `convertToLlm`: bash executions (unless excluded), summaries and custom
/// messages become user messages; system messages are left out (their
/// prompt is the request's `system_prompt`); the rest passes through.
pub fn to_llm(messages: &[AgentMessage]) -> Vec<LlmMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::System(_) => None,
            AgentMessage::User(u) => Some(LlmMessage::User { content: u.content.clone(), timestamp: u.timestamp }),
            AgentMessage::Assistant(a) => Some(LlmMessage::Assistant(a.clone())),
            AgentMessage::ToolResult(t) => Some(LlmMessage::ToolResult(t.clone())),
            AgentMessage::BashExecution(b) if b.exclude_from_context => None,
            AgentMessage::BashExecution(b) => Some(user_text(bash_execution_to_text(b), b.timestamp)),
            AgentMessage::Custom(c) => {
                Some(LlmMessage::User { content: UserContent::Blocks(c.content.blocks()), timestamp: c.timestamp })
            }
            AgentMessage::CompactionSummary(s) => {
                Some(user_text(format!("{COMPACTION_PREFIX}{}{COMPACTION_SUFFIX}", s.summary), s.timestamp))
            }
            AgentMessage::BranchSummary(s) => {
                Some(user_text(format!("{BRANCH_PREFIX}{}{BRANCH_SUFFIX}", s.summary), s.timestamp))
            }
        })
        .collect()
}

/// Replace runs of images with one placeholder text block.
fn replace_images(content: &[ContentBlock], placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(content.len());
    let mut previous_was_placeholder = false;
    for block in content {
        if matches!(block, ContentBlock::Image(_)) {
            if !previous_was_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder = matches!(block, ContentBlock::Text(t) if t.text == placeholder);
        out.push(block.clone());
    }
    out
}

fn downgrade_images(message: LlmMessage, model: &Model) -> LlmMessage {
    if model.supports_images() {
        return message;
    }
    match message {
        LlmMessage::User { content: UserContent::Blocks(blocks), timestamp } => LlmMessage::User {
            content: UserContent::Blocks(replace_images(&blocks, USER_IMAGE_PLACEHOLDER)),
            timestamp,
        },
        LlmMessage::ToolResult(mut t) => {
            t.content = replace_images(&t.content, TOOL_IMAGE_PLACEHOLDER);
            LlmMessage::ToolResult(t)
        }
        other => other,
    }
}

/// pi-ai's `transformMessages`: images on a text-only model become placeholders;
/// assistant content from another model loses its thinking and signatures (and
/// may get new tool-call ids through `normalize_id`); errored and aborted
/// assistant messages are dropped; every tool call left without a result gets
/// a synthetic error result (`No result provided`).
pub fn transform(
    messages: Vec<LlmMessage>,
    model: &Model,
    normalize_id: Option<&dyn Fn(&str) -> String>,
) -> Vec<LlmMessage> {
    match normalize_id {
        Some(f) => transform_with(messages, model, Some(&|id: &str, _: &AssistantMessage| f(id))),
        None => transform_with(messages, model, None),
    }
}

/// A tool-call id normalizer that also sees the assistant message the call comes from.
pub type SourceAwareIdFn<'a> = &'a dyn Fn(&str, &AssistantMessage) -> String;

/// [`transform`] with an id normalizer that also sees the assistant message
/// the tool call comes from (the Responses API treats foreign calls apart).
pub fn transform_with(
    messages: Vec<LlmMessage>,
    model: &Model,
    normalize_id: Option<SourceAwareIdFn<'_>>,
) -> Vec<LlmMessage> {
    let mut id_map: HashMap<String, String> = HashMap::new();
    let transformed: Vec<LlmMessage> = messages
        .into_iter()
        .map(|m| downgrade_images(m, model))
        .map(|m| match m {
            LlmMessage::ToolResult(mut t) => {
                if let Some(id) = id_map.get(&t.tool_call_id) {
                    t.tool_call_id = id.clone();
                }
                LlmMessage::ToolResult(t)
            }
            LlmMessage::Assistant(mut a) => {
                let same = a.provider == model.provider && a.api == model.api && a.model == model.id;
                let content = std::mem::take(&mut a.content);
                let source = &a;
                let content: Vec<ContentBlock> = content
                    .into_iter()
                    .filter_map(|block| match block {
                        ContentBlock::Thinking(t) => {
                            let keep =
                                same && (t.redacted || t.thinking_signature.is_some() || !t.thinking.trim().is_empty());
                            keep.then_some(ContentBlock::Thinking(t))
                        }
                        ContentBlock::Text(t) if !same => {
                            Some(ContentBlock::Text(TextContent { text: t.text, text_signature: None }))
                        }
                        ContentBlock::ToolCall(mut c) if !same => {
                            c.thought_signature = None;
                            if let Some(normalize) = normalize_id {
                                let new_id = normalize(&c.id, source);
                                if new_id != c.id {
                                    id_map.insert(c.id.clone(), new_id.clone());
                                    c.id = new_id;
                                }
                            }
                            Some(ContentBlock::ToolCall(c))
                        }
                        other => Some(other),
                    })
                    .collect();
                a.content = content;
                LlmMessage::Assistant(a)
            }
            other => other,
        })
        .collect();

    let mut result = Vec::with_capacity(transformed.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let close = |result: &mut Vec<LlmMessage>, pending: &mut Vec<(String, String)>, answered: &mut HashSet<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                result.push(LlmMessage::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text(NO_RESULT_TEXT)],
                    details: None,
                    usage: None,
                    is_error: true,
                    duration_ms: None,
                    timestamp: now_ms(),
                    nested_calls: None,
                    extra: Map::new(),
                }));
            }
        }
        answered.clear();
    };
    for message in transformed {
        match message {
            LlmMessage::Assistant(a) => {
                close(&mut result, &mut pending, &mut answered);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let calls: Vec<(String, String)> = a.tool_calls().map(|c| (c.id.clone(), c.name.clone())).collect();
                if !calls.is_empty() {
                    pending = calls;
                    answered.clear();
                }
                result.push(LlmMessage::Assistant(a));
            }
            LlmMessage::ToolResult(t) => {
                answered.insert(t.tool_call_id.clone());
                result.push(LlmMessage::ToolResult(t));
            }
            user @ LlmMessage::User { .. } => {
                close(&mut result, &mut pending, &mut answered);
                result.push(user);
            }
        }
    }
    close(&mut result, &mut pending, &mut answered);
    result
}

/// `to_llm` then `transform` (without tool-call id normalization).
pub fn prepare(messages: &[AgentMessage], model: &Model) -> Vec<LlmMessage> {
    transform(to_llm(messages), model, None)
}

// ----- context estimate and output cap (pi-ai utils/estimate.js, simple-options.js) -----

const CHARS_PER_TOKEN: f64 = 3.5;
const IMAGE_CHARS: usize = 4800;

/// Length in UTF-16 code units, as JavaScript counts it.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

fn tokens_of(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

fn content_chars(content: &[ContentBlock]) -> usize {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => js_len(&t.text),
            _ => IMAGE_CHARS,
        })
        .sum()
}

/// pi's per-message token estimate (chars / 3.5, images count 4800 chars).
pub fn estimate_message_tokens(message: &LlmMessage) -> u64 {
    match message {
        LlmMessage::User { content: UserContent::Text(t), .. } => tokens_of(js_len(t)),
        LlmMessage::User { content: UserContent::Blocks(b), .. } => tokens_of(content_chars(b)),
        LlmMessage::ToolResult(t) => tokens_of(content_chars(&t.content)),
        LlmMessage::Assistant(a) => tokens_of(
            a.content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => js_len(&t.text),
                    ContentBlock::Thinking(t) => js_len(&t.thinking),
                    ContentBlock::ToolCall(c) => js_len(&c.name) + js_len(&c.arguments.to_string()),
                    ContentBlock::Image(_) => 0,
                })
                .sum(),
        ),
    }
}

fn tools_json(tools: &[ToolSpec]) -> String {
    let list: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    Value::Array(list).to_string()
}

/// pi's `estimateContextTokens`: the usage of the last successful assistant
/// message (when nothing was inserted before it later) plus an estimate of
/// what follows it; without such usage, an estimate of everything, system
/// prompt and tool declarations included.
pub fn estimate_context_tokens(system_prompt: &str, tools: &[ToolSpec], messages: &[LlmMessage]) -> u64 {
    let mut latest_prefix = i64::MIN;
    let mut last_usage: Option<(usize, u64)> = None;
    for (i, m) in messages.iter().enumerate() {
        if let LlmMessage::Assistant(a) = m {
            let tokens = a.usage.context_tokens();
            if a.timestamp >= latest_prefix
                && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                && tokens > 0
            {
                last_usage = Some((i, tokens));
            }
        }
        latest_prefix = latest_prefix.max(m.timestamp());
    }
    match last_usage {
        Some((index, tokens)) => tokens + messages[index + 1..].iter().map(estimate_message_tokens).sum::<u64>(),
        None => {
            let system = tokens_of(js_len(system_prompt))
                + if tools.is_empty() { 0 } else { tokens_of(js_len(&tools_json(tools))) };
            system + messages.iter().map(estimate_message_tokens).sum::<u64>()
        }
    }
}

/// pi's `clampMaxTokensToContext`: fit the output cap into the context window,
/// keeping a safety margin (4096 tokens, or 15% of the input while that still
/// leaves 32768 tokens of output).
pub fn clamp_max_tokens(context_window: u64, input: u64, max_tokens: u64) -> u64 {
    if context_window == 0 {
        return max_tokens.max(1);
    }
    let (cw, input) = (context_window as i64, input as i64);
    let margin = 4096_i64.max((input as f64 * 0.15).ceil() as i64);
    let mut room = cw - input - margin;
    if room < 32768 {
        room = 32768_i64.min(cw - input - 4096);
    }
    (max_tokens as i64).min(room.max(1)) as u64
}

/// The output-token cap to send: the caller's cap (or the model's), fitted into the context.
pub fn output_budget(request: &ProviderRequest, llm: &[LlmMessage]) -> u64 {
    let wanted = request.max_tokens.unwrap_or(request.model.max_tokens);
    let input = estimate_context_tokens(&request.system_prompt, &request.tools, llm);
    clamp_max_tokens(request.model.context_window, input, wanted)
}

/// The output-token cap to send, if any: [`output_budget`], or for a
/// provider-specific `stream()` call
/// ([`ApiOptions::max_tokens_as_given`](super::ApiOptions)) the caller's
/// `maxTokens` alone, as pi-ai's `stream()` sends it.
pub fn output_cap(request: &ProviderRequest, llm: &[LlmMessage]) -> Option<u64> {
    if request.api_options.max_tokens_as_given {
        return request.max_tokens.filter(|m| *m > 0);
    }
    Some(output_budget(request, llm))
}

#[cfg(test)]
pub(crate) mod tests;
