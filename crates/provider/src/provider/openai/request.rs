//! Request side of `openai-completions`: the Chat Completions body (keys in
//! pi's order), message conversion, tool declarations, reasoning options and
//! the request headers.

use serde_json::{Map, Value, json};

use super::compat::{OpenAiCompat, level_map};
use super::reasoning::{
    apply_cache_control, chat_template_values, clamped_thinking_budget, parse_legacy_encrypted, parse_reasoning_details,
};
use crate::message::{ContentBlock, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::provider::convert::{self, LlmMessage};
use crate::provider::shared::{self, CacheRetention, request_headers};
use crate::provider::strict_schema::strict_parameters;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};

/// pi-ai's `shortHash` (two 32-bit multiplicative hashes, base 36).
pub fn short_hash(s: &str) -> String {
    let (mut h1, mut h2): (u32, u32) = (0xdead_beef, 0x41c6_ce57);
    for ch in s.encode_utf16() {
        h1 = (h1 ^ u32::from(ch)).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ u32::from(ch)).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507) ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507) ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// Tool-call ids from other APIs made acceptable to Chat Completions
/// (`call|item` ids from the Responses API; 40 chars at most for OpenAI).
pub fn normalize_tool_call_id(model: &Model, id: &str) -> String {
    let clean = |s: &str| {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect::<String>()
    };
    if let Some((call, item)) = id.split_once('|') {
        let (call, item) = (clean(call), clean(item));
        let combined = if item.is_empty() { call.clone() } else { format!("{call}_{item}") };
        if combined.chars().count() <= 40 {
            return combined;
        }
        let hash: String = short_hash(id).chars().take(8).collect();
        let keep = 1.max(40 - hash.chars().count() - 1);
        let prefix: String = call.chars().take(keep).collect();
        return format!("{prefix}_{hash}");
    }
    if model.provider == "openai" && id.chars().count() > 40 {
        return id.chars().take(40).collect();
    }
    id.to_string()
}

/// pi's `clampThinkingLevel`: the requested level if supported, else the
/// nearest supported one above it, else below it.
pub fn clamp_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let levels = model.thinking_levels();
    if levels.contains(&level) {
        return level;
    }
    let pos = ThinkingLevel::ALL.iter().position(|l| *l == level).unwrap_or(0);
    ThinkingLevel::ALL[pos..]
        .iter()
        .chain(ThinkingLevel::ALL[..pos].iter().rev())
        .find(|l| levels.contains(l))
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}

fn tool_json(tool: &ToolSpec, compat: &OpenAiCompat) -> Value {
    let strict = strict_parameters(tool, compat.supports_strict_mode, None);
    let mut function = Map::new();
    function.insert("name".into(), json!(tool.name));
    function.insert("description".into(), json!(tool.description));
    function.insert("parameters".into(), strict.clone().unwrap_or_else(|| tool.parameters.clone()));
    if compat.supports_strict_mode {
        function.insert("strict".into(), json!(strict.is_some()));
    }
    json!({"type": "function", "function": function})
}

const BRIDGE_TEXT: &str = "I have processed the tool results.";

fn text_of(blocks: &[ContentBlock]) -> Vec<&str> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn image_part(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

const REASONING_FIELDS: [&str; 3] = ["reasoning", "reasoning_content", "reasoning_text"];

/// pi's `convertMessages` for Chat Completions.
pub fn convert_messages(model: &Model, compat: &OpenAiCompat, system_prompt: &str, llm: &[LlmMessage]) -> Vec<Value> {
    let mut out = Vec::new();
    if !system_prompt.is_empty() {
        let role = if model.reasoning && compat.supports_developer_role { "developer" } else { "system" };
        out.push(json!({"role": role, "content": system_prompt}));
    }
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < llm.len() {
        let msg = &llm[i];
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(msg, LlmMessage::User { .. })
        {
            out.push(json!({"role": "assistant", "content": BRIDGE_TEXT}));
        }
        match msg {
            LlmMessage::User { content: UserContent::Text(t), .. } => {
                out.push(json!({"role": "user", "content": t}));
                last_role = Some("user");
            }
            LlmMessage::User { content: UserContent::Blocks(blocks), .. } => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) if t.text.is_empty() => None,
                        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        ContentBlock::Image(img) => Some(image_part(&img.mime_type, &img.data)),
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "content": parts}));
                    last_role = Some("user");
                }
            }
            LlmMessage::Assistant(a) => {
                if let Some(m) = assistant_message(model, compat, a) {
                    out.push(m);
                    last_role = Some("assistant");
                }
            }
            LlmMessage::ToolResult(_) => {
                let mut images = Vec::new();
                while let Some(LlmMessage::ToolResult(t)) = llm.get(i) {
                    let text = text_of(&t.content).join("\n");
                    let has_images = t.content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                    let content = if !text.trim().is_empty() {
                        text
                    } else if has_images {
                        "(see attached image)".to_string()
                    } else {
                        "(no tool output)".to_string()
                    };
                    let mut m = Map::new();
                    m.insert("role".into(), json!("tool"));
                    m.insert("content".into(), json!(content));
                    m.insert("tool_call_id".into(), json!(t.tool_call_id));
                    if compat.requires_tool_result_name && !t.tool_name.is_empty() {
                        m.insert("name".into(), json!(t.tool_name));
                    }
                    out.push(Value::Object(m));
                    if has_images && model.supports_images() {
                        images.extend(t.content.iter().filter_map(|b| match b {
                            ContentBlock::Image(img) => Some(image_part(&img.mime_type, &img.data)),
                            _ => None,
                        }));
                    }
                    i += 1;
                }
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    if compat.requires_assistant_after_tool_result {
                        out.push(json!({"role": "assistant", "content": BRIDGE_TEXT}));
                    }
                    let mut parts = vec![json!({"type": "text", "text": "Attached image(s) from tool result:"})];
                    parts.extend(images);
                    out.push(json!({"role": "user", "content": parts}));
                    last_role = Some("user");
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

fn assistant_message(model: &Model, compat: &OpenAiCompat, a: &crate::message::AssistantMessage) -> Option<Value> {
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    let empty_content = compat.requires_assistant_after_tool_result || compat.requires_non_null_assistant_content;
    m.insert("content".into(), if empty_content { json!("") } else { Value::Null });
    let texts: Vec<&str> = text_of(&a.content).into_iter().filter(|t| !t.trim().is_empty()).collect();
    let text = texts.concat();
    let thinking: Vec<(&str, Option<&str>)> = a
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                Some((t.thinking.as_str(), t.thinking_signature.as_deref()))
            }
            _ => None,
        })
        .collect();
    let signed_details = a.content.iter().find_map(|b| match b {
        ContentBlock::Thinking(t) => parse_reasoning_details(t.thinking_signature.as_deref()),
        _ => None,
    });
    let legacy_details: Vec<Value> =
        a.tool_calls().filter_map(|c| parse_legacy_encrypted(c.thought_signature.as_deref())).collect();
    let details = signed_details.or_else(|| (!legacy_details.is_empty()).then_some(legacy_details));
    if !thinking.is_empty() && compat.requires_thinking_as_text {
        let joined = thinking.iter().map(|(t, _)| *t).collect::<Vec<_>>().join("\n\n");
        let mut parts = vec![json!({"type": "text", "text": joined})];
        parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
        m.insert("content".into(), Value::Array(parts));
    } else {
        if !text.is_empty() {
            m.insert("content".into(), json!(text));
        }
        if let Some((_, sig)) = thinking.first().filter(|_| details.is_none()) {
            let sig = match *sig {
                Some("reasoning") if model.provider == "opencode-go" => Some("reasoning_content"),
                other => other,
            };
            if let Some(field) = sig.filter(|s| REASONING_FIELDS.contains(s)) {
                let joined = thinking.iter().map(|(t, _)| *t).collect::<Vec<_>>().join("\n");
                m.insert(field.to_string(), json!(joined));
            }
        }
    }
    let calls: Vec<Value> = a
        .tool_calls()
        .map(|c| {
            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect();
    let has_calls = !calls.is_empty();
    if has_calls {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(d) = details {
        m.insert("reasoning_details".into(), Value::Array(d));
    }
    if compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !m.contains_key("reasoning_content")
    {
        m.insert("reasoning_content".into(), json!(""));
    }
    let has_content = match m.get("content") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    (has_content || has_calls).then_some(Value::Object(m))
}

/// Reasoning options for the thinking level, per `compat.thinking_format`.
fn apply_thinking(
    params: &mut Map<String, Value>,
    model: &Model,
    compat: &OpenAiCompat,
    level: Option<ThinkingLevel>,
    budget: Option<u64>,
) {
    if !model.reasoning {
        return;
    }
    let effort = level.map(ThinkingLevel::as_str);
    let mapped = |level: &str| level_map(model, level).filter(|v| !v.is_null()).cloned();
    let effort_value = |e: &str| mapped(e).unwrap_or_else(|| json!(e));
    let off = level_map(model, "off");
    let off_not_null = !matches!(off, Some(Value::Null));
    match compat.thinking_format.as_str() {
        "zai" => {
            let thinking = if effort.is_some() {
                json!({"type": "enabled", "clear_thinking": false})
            } else {
                json!({"type": "disabled"})
            };
            params.insert("thinking".into(), thinking);
            if let Some(e) = effort.filter(|_| compat.supports_reasoning_effort) {
                let v = level_map(model, e).cloned().unwrap_or_else(|| json!(e));
                if v.is_string() {
                    params.insert("reasoning_effort".into(), v);
                }
            }
        }
        "qwen" => {
            params.insert("enable_thinking".into(), json!(effort.is_some()));
            if let Some(e) = effort.filter(|_| compat.supports_reasoning_effort) {
                let v = effort_value(e);
                if v.is_string() {
                    params.insert("reasoning_effort".into(), v);
                }
            }
        }
        "qwen-chat-template" => {
            params.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        "chat-template" => {
            if let Some(v) = chat_template_values(model, level, &compat.chat_template_kwargs, budget) {
                params.insert("chat_template_kwargs".into(), v);
            }
        }
        "baseten" => {
            if let Some(v) = chat_template_values(model, level, &compat.chat_template_args, budget) {
                params.insert("chat_template_args".into(), v);
            }
            if compat.supports_reasoning_effort {
                let v = match effort {
                    Some(e) => level_map(model, e).cloned().unwrap_or_else(|| json!(e)),
                    None => level_map(model, "off").cloned().unwrap_or(Value::Null),
                };
                if v.is_string() {
                    params.insert("reasoning_effort".into(), v);
                }
            }
        }
        "deepseek" => {
            if effort.is_some() {
                params.insert("thinking".into(), json!({"type": "enabled"}));
            } else if off_not_null {
                params.insert("thinking".into(), json!({"type": "disabled"}));
            }
            if let Some(e) = effort.filter(|_| compat.supports_reasoning_effort) {
                params.insert("reasoning_effort".into(), effort_value(e));
            }
        }
        "openrouter" => {
            if let Some(e) = effort {
                params.insert("reasoning".into(), json!({"effort": effort_value(e)}));
            } else if off_not_null {
                params.insert("reasoning".into(), json!({"effort": mapped("off").unwrap_or_else(|| json!("none"))}));
            }
        }
        "ant-ling" => {
            if let Some(v) = effort.and_then(|e| level_map(model, e)).filter(|v| v.is_string()) {
                params.insert("reasoning".into(), json!({"effort": v}));
            }
        }
        "together" => {
            params.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
            if let Some(e) = effort.filter(|_| compat.supports_reasoning_effort) {
                params.insert("reasoning_effort".into(), effort_value(e));
            }
        }
        "string-thinking" => {
            if let Some(e) = effort {
                params.insert("thinking".into(), effort_value(e));
            } else if off_not_null {
                params.insert("thinking".into(), mapped("off").unwrap_or_else(|| json!("none")));
            }
        }
        _ if compat.supports_reasoning_effort => match effort {
            Some(e) => {
                params.insert("reasoning_effort".into(), effort_value(e));
            }
            None => {
                if let Some(v) = off.filter(|v| v.is_string()) {
                    params.insert("reasoning_effort".into(), v.clone());
                }
            }
        },
        _ => {}
    }
}

/// The request body, keys in pi's order.
pub fn build_body(request: &ProviderRequest, compat: &OpenAiCompat) -> Value {
    let model = &request.model;
    let llm_unprepared = convert::to_llm(&request.messages);
    let cap = convert::output_cap(request, &llm_unprepared);
    let max_tokens = cap.unwrap_or(model.max_tokens);
    let normalize = |id: &str| normalize_tool_call_id(model, id);
    let llm = convert::transform(llm_unprepared, model, Some(&normalize));
    let mut params = Map::new();
    params.insert("model".into(), json!(model.id));
    params.insert("messages".into(), Value::Array(convert_messages(model, compat, &request.system_prompt, &llm)));
    params.insert("stream".into(), json!(true));
    let retention = CacheRetention::of(request);
    let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
    let cache_key = retention != CacheRetention::None
        && (compat.prompt_cache_key_mode == "enabled"
            || (compat.prompt_cache_key_mode == "auto" && (model.base_url.contains("api.openai.com") || long)));
    if let Some(id) = request.session_id.as_deref().filter(|_| cache_key) {
        params.insert("prompt_cache_key".into(), json!(id.chars().take(64).collect::<String>()));
    }
    if long {
        params.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if compat.supports_usage_in_streaming {
        params.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        params.insert("store".into(), json!(false));
    }
    let field = if compat.max_tokens_field == "max_tokens" { "max_tokens" } else { "max_completion_tokens" };
    if let Some(cap) = cap {
        params.insert(field.into(), json!(cap));
    }
    if let Some(t) = &request.api_options.temperature {
        params.insert("temperature".into(), json!(t));
    }
    let has_history = llm.iter().any(|m| match m {
        LlmMessage::ToolResult(_) => true,
        LlmMessage::Assistant(a) => a.tool_calls().next().is_some(),
        LlmMessage::User { .. } => false,
    });
    if !request.tools.is_empty() {
        params.insert("tools".into(), request.tools.iter().map(|t| tool_json(t, compat)).collect());
        if compat.zai_tool_stream {
            params.insert("tool_stream".into(), json!(true));
        }
    } else if compat.requires_tools_with_tool_history && has_history {
        params.insert("tools".into(), json!([]));
    }
    if compat.cache_control_format.as_deref() == Some("anthropic") && retention != CacheRetention::None {
        let ttl = long;
        let cache_control = if ttl { json!({"type": "ephemeral", "ttl": "1h"}) } else { json!({"type": "ephemeral"}) };
        let mut tools = params.get("tools").and_then(Value::as_array).cloned();
        if let Some(Value::Array(messages)) = params.get_mut("messages") {
            apply_cache_control(messages, tools.as_mut(), &cache_control);
        }
        if let (Some(list), Some(slot)) = (tools, params.get_mut("tools")) {
            *slot = Value::Array(list);
        }
    }
    if let Some(choice) = request.api_options.tool_choice.as_ref().filter(|c| shared::truthy(c)) {
        params.insert("tool_choice".into(), choice.clone());
    }
    if let Some(p) = &compat.vllm_priority {
        params.insert("priority".into(), p.clone());
    }
    // pi clamps only a requested level; `off` stays off even when the model cannot turn thinking off.
    let level = match request.thinking_level {
        ThinkingLevel::Off => None,
        l => Some(clamp_level(model, l)).filter(|l| *l != ThinkingLevel::Off),
    };
    let budget = clamped_thinking_budget(model, level, &request.api_options.thinking_budgets, max_tokens);
    apply_thinking(&mut params, model, compat, level, budget);
    if let (Some(field), Some(b)) = (&compat.thinking_token_budget_field, budget) {
        params.insert(field.clone(), json!(b));
    }
    if let Some(routing) = &compat.open_router_routing {
        params.insert("provider".into(), routing.clone());
    }
    if let Some(routing) = &compat.vercel_gateway_routing {
        let mut gateway = Map::new();
        for key in ["only", "order"] {
            if let Some(v) = routing.get(key).filter(|v| !v.is_null()) {
                gateway.insert(key.into(), v.clone());
            }
        }
        if !gateway.is_empty() {
            params.insert("providerOptions".into(), json!({"gateway": gateway}));
        }
    }
    // Last, so the model's and the caller's sampling parameters win over named fields.
    request.api_options.apply_sampling(model, level.unwrap_or(ThinkingLevel::Off), &mut params);
    Value::Object(params)
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(k, v)| k.eq_ignore_ascii_case(name) && !v.trim().is_empty())
}

/// Request headers: model headers, session affinity, request headers, and the
/// bearer key (configured `Authorization` headers win over the key).
pub fn build_headers(request: &ProviderRequest, compat: &OpenAiCompat) -> Result<Vec<(String, String)>, ProviderError> {
    let mut extra: Vec<(String, String)> = Vec::new();
    if let Some(h) = &request.model.headers {
        for (k, v) in h {
            if let Some(s) = v.as_str() {
                extra.push((k.clone(), s.to_string()));
            }
        }
    }
    let cache_session = CacheRetention::of(request) != CacheRetention::None;
    if let Some(id) = request.session_id.as_deref().filter(|_| compat.send_session_affinity_headers && cache_session) {
        if compat.session_affinity_format == "openrouter" {
            extra.push(("x-session-id".into(), id.to_string()));
        } else {
            if compat.session_affinity_format == "openai" {
                extra.push(("session_id".into(), id.to_string()));
            }
            extra.push(("x-client-request-id".into(), id.to_string()));
            extra.push(("x-session-affinity".into(), id.to_string()));
        }
    }
    extra.extend(request_headers(request));
    let key = match request.api_key.as_deref().filter(|k| !k.is_empty()) {
        Some(k) => k.to_string(),
        None if has_header(&extra, "authorization") || has_header(&extra, "cf-aig-authorization") => "unused".into(),
        None => {
            return Err(ProviderError::new(
                ProviderErrorKind::Auth,
                format!("No API key for provider: {}", request.model.provider),
            ));
        }
    };
    let mut headers = vec![("authorization".to_string(), format!("Bearer {key}"))];
    headers.extend(extra);
    crate::provider::edits::finish_headers(request, &mut headers);
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::convert::tests::model;

    #[test]
    fn short_hash_matches_pi() {
        assert_eq!(short_hash(""), "k4n83c7h0j2b");
        assert_eq!(short_hash("abc"), "y0biex7f9bbh");
        assert_eq!(short_hash("héllo 👋"), "1hhn7nd1cbiw7c");
    }

    #[test]
    fn tool_call_ids_are_normalized_like_pi() {
        let m = model(false);
        assert_eq!(normalize_tool_call_id(&m, "call_1|item+2"), "call_1_item_2");
        let long = "call_1|fc_68a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3+/=";
        let expected_hash: String = "sjunngnoi5c3".chars().take(8).collect();
        assert_eq!(normalize_tool_call_id(&m, long), format!("call_1_{expected_hash}"));
        assert_eq!(normalize_tool_call_id(&m, &"x".repeat(50)), "x".repeat(50));
        let mut openai = model(false);
        openai.provider = "openai".into();
        assert_eq!(normalize_tool_call_id(&openai, &"x".repeat(50)), "x".repeat(40));
    }

    #[test]
    fn thinking_levels_clamp_like_pi() {
        let mut m = model(false);
        assert_eq!(clamp_level(&m, ThinkingLevel::High), ThinkingLevel::Off);
        m.reasoning = true;
        assert_eq!(clamp_level(&m, ThinkingLevel::Max), ThinkingLevel::High);
        m.thinking_level_map = serde_json::json!({"max": "max", "minimal": null}).as_object().cloned();
        assert_eq!(clamp_level(&m, ThinkingLevel::Xhigh), ThinkingLevel::Max);
        assert_eq!(clamp_level(&m, ThinkingLevel::Minimal), ThinkingLevel::Low);
    }
}
