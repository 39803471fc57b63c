//! Request side of `mistral-conversations` (Mistral's native chat
//! completions endpoint, as pi 1.6 calls it): the wire payload (keys in pi's
//! order), message conversion with Mistral's nine-character tool-call ids and
//! thinking chunks, tools, reasoning effort or prompt mode per level, and the
//! headers (prompt-cache affinity).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::convert::{self, LlmMessage};
use super::openai::request::{clamp_level, short_hash};
use super::shared::{CacheRetention, compat_bool, configured_headers, level_entry, set_header};
use super::strict_schema::strict_parameters;
use super::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
use crate::message::{ContentBlock, UserContent};
use crate::model::{Model, ThinkingLevel};

const TOOL_CALL_ID_LENGTH: usize = 9;

/// pi's `deriveMistralToolCallId`: nine alphanumeric characters.
pub fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.chars().count() == TOOL_CALL_ID_LENGTH {
        return normalized;
    }
    let base = if normalized.is_empty() { id.to_string() } else { normalized };
    let seed = if attempt == 0 { base } else { format!("{base}:{attempt}") };
    short_hash(&seed).chars().filter(char::is_ascii_alphanumeric).take(TOOL_CALL_ID_LENGTH).collect()
}

/// Maps foreign tool-call ids to distinct Mistral ids (pi's normalizer).
#[derive(Default)]
struct IdNormalizer {
    ids: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl IdNormalizer {
    fn normalize(&mut self, id: &str) -> String {
        if let Some(existing) = self.ids.get(id) {
            return existing.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            match self.owners.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.ids.insert(id.to_string(), candidate.clone());
                    self.owners.insert(candidate.clone(), id.to_string());
                    return candidate;
                }
            }
        }
    }
}

/// `reasoning_effort` and `prompt_mode` for the request's level: models with
/// a level map take an effort (unmapped levels mean `high`), other reasoning
/// models a `reasoning` prompt mode.
pub fn reasoning_fields(model: &Model, level: ThinkingLevel) -> (Option<Value>, Option<&'static str>) {
    let level = match level {
        ThinkingLevel::Off => None,
        l => Some(clamp_level(model, l)).filter(|l| *l != ThinkingLevel::Off),
    };
    let map = model.thinking_level_map.as_ref().filter(|_| model.reasoning);
    let effort = match (map, level) {
        (None, _) => None,
        (Some(_), Some(l)) => {
            Some(level_entry(model, l).filter(|v| !v.is_null()).cloned().unwrap_or_else(|| json!("high")))
        }
        (Some(_), None) => level_entry(model, ThinkingLevel::Off).filter(|v| !v.is_null()).cloned(),
    };
    let prompt_mode = (model.reasoning && map.is_none() && level.is_some()).then_some("reasoning");
    (effort, prompt_mode)
}

fn image_chunk(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": format!("data:{mime};base64,{data}")})
}

fn tool_result_text(text: &str, has_images: bool, supports_images: bool, is_error: bool) -> String {
    let prefix = if is_error { "[tool error] " } else { "" };
    let trimmed = text.trim();
    if !trimmed.is_empty() {
        let suffix =
            if has_images && !supports_images { "\n[tool image omitted: model does not support images]" } else { "" };
        return format!("{prefix}{trimmed}{suffix}");
    }
    let body = match (has_images, supports_images) {
        (true, true) => "(see attached image)",
        (true, false) => "(image omitted: model does not support images)",
        _ => "(no tool output)",
    };
    format!("{prefix}{body}")
}

/// pi's `toChatMessages` in wire form (system prompt first).
pub fn convert_messages(model: &Model, system_prompt: &str, llm: &[LlmMessage]) -> Vec<Value> {
    let images = model.supports_images();
    let mut out = Vec::new();
    if !system_prompt.is_empty() {
        out.push(json!({"role": "system", "content": system_prompt}));
    }
    for message in llm {
        match message {
            LlmMessage::User { content: UserContent::Text(t), .. } => out.push(json!({"role": "user", "content": t})),
            LlmMessage::User { content: UserContent::Blocks(blocks), .. } => {
                let had_images = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                let content: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        ContentBlock::Image(i) if images => Some(image_chunk(&i.mime_type, &i.data)),
                        _ => None,
                    })
                    .collect();
                if !content.is_empty() {
                    out.push(json!({"role": "user", "content": content}));
                } else if had_images && !images {
                    out.push(json!({"role": "user", "content": "(image omitted: model does not support images)"}));
                }
            }
            LlmMessage::Assistant(a) => {
                let mut parts = Vec::new();
                let mut calls = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            parts.push(json!({"type": "text", "text": t.text}));
                        }
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            parts.push(json!({"type": "thinking", "thinking": [{"type": "text", "text": t.thinking}]}));
                        }
                        ContentBlock::ToolCall(c) => {
                            let args = if c.arguments.is_null() { json!({}) } else { c.arguments.clone() };
                            calls.push(json!({"id": c.id, "type": "function",
                                "function": {"name": c.name, "arguments": args.to_string()}, "index": 0}));
                        }
                        _ => {}
                    }
                }
                if parts.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert("prefix".into(), json!(false));
                if !parts.is_empty() {
                    m.insert("content".into(), Value::Array(parts));
                }
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            LlmMessage::ToolResult(t) => {
                let texts: Vec<&str> = t
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(x) => Some(x.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let has_images = t.content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                let text = tool_result_text(&texts.join("\n"), has_images, images, t.is_error);
                let mut content = vec![json!({"type": "text", "text": text})];
                if images {
                    content.extend(t.content.iter().filter_map(|b| match b {
                        ContentBlock::Image(i) => Some(image_chunk(&i.mime_type, &i.data)),
                        _ => None,
                    }));
                }
                out.push(
                    json!({"role": "tool", "name": t.tool_name, "content": content, "tool_call_id": t.tool_call_id}),
                );
            }
        }
    }
    out
}

/// Function tools, strict only where the model opts in (`supportsStrictMode`).
fn convert_tools(model: &Model, tools: &[ToolSpec]) -> Vec<Value> {
    let supported = compat_bool(model, "supportsStrictMode").unwrap_or(false);
    tools
        .iter()
        .map(|t| {
            let strict = strict_parameters(t, supported, None);
            let strict_flag = strict.is_some();
            let parameters = strict.unwrap_or_else(|| t.parameters.clone());
            json!({"type": "function", "function": {"name": t.name, "description": t.description,
                "parameters": parameters, "strict": strict_flag}})
        })
        .collect()
}

/// The wire payload, keys in pi's order.
pub fn build_body(request: &ProviderRequest) -> Value {
    let model = &request.model;
    let unprepared = convert::to_llm(&request.messages);
    let max_tokens = convert::output_cap(request, &unprepared);
    let normalizer = std::cell::RefCell::new(IdNormalizer::default());
    let normalize = |id: &str| normalizer.borrow_mut().normalize(id);
    let llm = convert::transform(unprepared, model, Some(&normalize));
    let (effort, prompt_mode) = reasoning_fields(model, request.thinking_level);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("stream".into(), json!(true));
    body.insert("messages".into(), Value::Array(convert_messages(model, &request.system_prompt, &llm)));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(convert_tools(model, &request.tools)));
    }
    if let Some(t) = &request.api_options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(max_tokens) = max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    if let Some(choice) = request.api_options.tool_choice.as_ref().filter(|c| super::shared::truthy(c)) {
        body.insert("tool_choice".into(), tool_choice(choice));
    }
    if let Some(e) = effort {
        body.insert("reasoning_effort".into(), e);
    }
    if let Some(mode) = prompt_mode {
        body.insert("prompt_mode".into(), json!(mode));
    }
    if let Some(id) = request.session_id.as_ref().filter(|_| CacheRetention::of(request) != CacheRetention::None) {
        body.insert("prompt_cache_key".into(), json!(id));
    }
    Value::Object(body)
}

/// pi-ai's Mistral `toolChoice`: one of Mistral's words as it is, else the
/// OpenAI-style `{function: {name}}` as `{type: "function", function: {name}}`.
fn tool_choice(choice: &Value) -> Value {
    match choice.as_str() {
        Some("auto" | "none" | "any" | "required") => choice.clone(),
        _ => {
            let name = choice.pointer("/function/name").cloned().unwrap_or(Value::Null);
            json!({"type": "function", "function": {"name": name}})
        }
    }
}

/// Request headers: bearer key, SSE accept, configured headers, and the
/// session as `x-affinity` (unless configured).
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(key) = request.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key for provider: {}", request.model.provider),
        ));
    };
    let mut headers = vec![("accept".to_string(), "text/event-stream".to_string())];
    headers.push(("authorization".into(), format!("Bearer {key}")));
    let configured = configured_headers(request);
    let explicit_affinity = configured.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-affinity"));
    for (k, v) in configured {
        set_header(&mut headers, &k, v);
    }
    if let Some(id) = request.session_id.as_deref().filter(|_| !explicit_affinity) {
        set_header(&mut headers, "x-affinity", id);
    }
    Ok(headers)
}

/// `<baseUrl>/v1/chat/completions`.
pub fn endpoint(model: &Model) -> String {
    format!("{}/v1/chat/completions", model.base_url.trim_end_matches('/'))
}
