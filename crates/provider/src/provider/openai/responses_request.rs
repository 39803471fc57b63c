//! Request side of `openai-responses`: the Responses API body (keys in pi
//! 1.6's order), `input` items from the conversation (reasoning items and
//! message ids replayed from signatures, function calls with `call|item`
//! ids), function tools, reasoning effort per level, prompt-cache fields and
//! the request headers.

use serde_json::{Map, Value, json};

use super::request::{clamp_level, short_hash};
use crate::message::{AssistantMessage, ContentBlock, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::provider::convert::{self, LlmMessage};
use crate::provider::shared::{
    CacheRetention, compat_bool, compat_value, configured_headers, has_header, level_entry, off_allowed,
    request_headers, set_header,
};
use crate::provider::strict_schema::strict_parameters;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};

/// Providers whose `call|item` ids are kept as such when replayed.
const ID_PAIR_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
/// The Responses API rejects `max_output_tokens` below this.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// `reasoning.effort` of requests that carry the level in `configuration_update` items.
const CONFIGURATION_UPDATE_EFFORT: &str = "medium";

/// pi's Responses `getCompat`, the flags this implementation uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesCompat {
    pub developer_role: bool,
    /// `openrouter` (`x-session-id`) or `openai` (`session-id` + `x-client-request-id`).
    pub session_affinity_format: String,
    /// `auto`/`enabled` send `prompt_cache_key`, `disabled` does not.
    pub prompt_cache_key_mode: String,
    pub long_cache_retention: bool,
    pub strict_mode: bool,
    pub explicit_prompt_cache_mode: bool,
    pub max_output_tokens: bool,
    pub mid_convo_effort: bool,
    /// Tools are declared in an `additional_tools` input item instead of `tools`.
    pub tools_in_input: bool,
}

impl ResponsesCompat {
    pub fn resolve(model: &Model) -> ResponsesCompat {
        let flag = |key: &str, default: bool| compat_bool(model, key).unwrap_or(default);
        let text = |key: &str| compat_value(model, key).and_then(Value::as_str).map(str::to_string);
        let openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        ResponsesCompat {
            developer_role: flag("supportsDeveloperRole", true),
            session_affinity_format: text("sessionAffinityFormat")
                .unwrap_or_else(|| if openrouter { "openrouter" } else { "openai" }.to_string()),
            prompt_cache_key_mode: text("promptCacheKeyMode").unwrap_or_else(|| "auto".to_string()),
            long_cache_retention: flag("supportsLongCacheRetention", true),
            strict_mode: flag("supportsStrictMode", false),
            explicit_prompt_cache_mode: flag("supportsExplicitPromptCacheMode", false),
            max_output_tokens: flag("supportsMaxOutputTokens", true),
            mid_convo_effort: flag("supportsMidConvoEffort", false),
            tools_in_input: flag("supportsMidConvoSystemMessages", false) && flag("supportsAdditionalTools", false),
        }
    }
}

/// A non-`sk-` credential sent straight to OpenAI is a ChatGPT sign-in token,
/// which rejects several request fields.
pub fn is_chatgpt_sign_in(model: &Model, key: Option<&str>) -> bool {
    model.provider == "openai"
        && model.base_url == "https://api.openai.com/v1"
        && key.is_some_and(|k| !k.starts_with("sk-"))
}

/// The reasoning effort for the request's level, `None` for off (pi's
/// `streamSimple` clamps every other level to the model's).
pub fn requested_level(request: &ProviderRequest) -> Option<ThinkingLevel> {
    match request.thinking_level {
        ThinkingLevel::Off => None,
        level => Some(clamp_level(&request.model, level)).filter(|l| *l != ThinkingLevel::Off),
    }
}

/// The effort string of a level: the model's mapping, else the level's name.
pub(crate) fn effort_value(model: &Model, level: ThinkingLevel) -> Value {
    match level_entry(model, level) {
        Some(v) if !v.is_null() => v.clone(),
        _ => json!(level.as_str()),
    }
}

fn id_part(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    clean.trim_end_matches('_').to_string()
}

/// pi's Responses tool-call id normalization for calls from another model.
pub fn normalize_tool_call_id(model: &Model, id: &str, source: &AssistantMessage) -> String {
    normalize_tool_call_id_among(&ID_PAIR_PROVIDERS, model, id, source)
}

/// [`normalize_tool_call_id`] where `providers` keep `call|item` id pairs
/// (each Responses-based API has its own list).
pub fn normalize_tool_call_id_among(providers: &[&str], model: &Model, id: &str, source: &AssistantMessage) -> String {
    if !providers.contains(&model.provider.as_str()) {
        return id_part(id);
    }
    let Some((call, item)) = id.split_once('|') else { return id_part(id) };
    let item = item.split('|').next().unwrap_or(item);
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item_id = if foreign {
        let hashed = format!("fc_{}", short_hash(item));
        hashed.chars().take(64).collect()
    } else {
        id_part(item)
    };
    if !item_id.starts_with("fc_") {
        item_id = id_part(&format!("fc_{item_id}"));
    }
    format!("{}|{item_id}", id_part(call))
}

/// Message id and phase from a text signature (`{"v":1,"id","phase"}` or a bare id).
fn parse_text_signature(signature: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = signature.filter(|s| !s.is_empty())?;
    if sig.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(sig)
        && v.get("v") == Some(&json!(1))
        && let Some(id) = v.get("id").and_then(Value::as_str)
    {
        let phase = v.get("phase").and_then(Value::as_str).filter(|p| *p == "commentary" || *p == "final_answer");
        return Some((id.to_string(), phase.map(str::to_string)));
    }
    Some((sig.to_string(), None))
}

fn image_url(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

fn tool_output(model: &Model, content: &[ContentBlock]) -> Value {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.join("\n");
    let images: Vec<(&str, &str)> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some((i.mime_type.as_str(), i.data.as_str())),
            _ => None,
        })
        .collect();
    let has_text = !text.trim().is_empty();
    if images.is_empty() || !model.supports_images() {
        let s = if has_text {
            text
        } else if images.is_empty() {
            "(no tool output)".into()
        } else {
            "(see attached image)".into()
        };
        return json!(s);
    }
    let mut out = Vec::new();
    if has_text {
        out.push(json!({"type": "input_text", "text": text}));
    }
    out.extend(
        images.iter().map(|(m, d)| json!({"type": "input_image", "detail": "auto", "image_url": image_url(m, d)})),
    );
    Value::Array(out)
}

fn assistant_items(model: &Model, a: &AssistantMessage, msg_index: usize) -> Vec<Value> {
    let same_provider_api = a.provider == model.provider && a.api == model.api;
    let different_model = same_provider_api && a.model != model.id;
    let mut out = Vec::new();
    let mut text_index = 0;
    for block in &a.content {
        match block {
            ContentBlock::Thinking(t) => {
                if let Some(item) = t.thinking_signature.as_deref().and_then(|s| serde_json::from_str::<Value>(s).ok())
                {
                    out.push(item);
                }
            }
            ContentBlock::Text(t) => {
                let fallback = if text_index == 0 {
                    format!("msg_pi_{msg_index}")
                } else {
                    format!("msg_pi_{msg_index}_{text_index}")
                };
                text_index += 1;
                let (id, phase) = match parse_text_signature(t.text_signature.as_deref()) {
                    Some((id, phase)) if id.chars().count() > 64 => (format!("msg_{}", short_hash(&id)), phase),
                    Some(x) => x,
                    None => (fallback, None),
                };
                let mut item = Map::new();
                item.insert("type".into(), json!("message"));
                item.insert("role".into(), json!("assistant"));
                item.insert("content".into(), json!([{"type": "output_text", "text": t.text, "annotations": []}]));
                item.insert("status".into(), json!("completed"));
                item.insert("id".into(), json!(id));
                if let Some(p) = phase {
                    item.insert("phase".into(), json!(p));
                }
                out.push(Value::Object(item));
            }
            ContentBlock::ToolCall(c) => {
                let mut parts = c.id.split('|');
                let call_id = parts.next().unwrap_or("");
                let item_id = parts.next().filter(|i| !different_model && i.starts_with("fc_"));
                let mut item = Map::new();
                item.insert("type".into(), json!("function_call"));
                if let Some(id) = item_id {
                    item.insert("id".into(), json!(id));
                }
                item.insert("call_id".into(), json!(call_id));
                item.insert("name".into(), json!(c.name));
                item.insert("arguments".into(), json!(c.arguments.to_string()));
                out.push(Value::Object(item));
            }
            ContentBlock::Image(_) => {}
        }
    }
    out
}

/// pi's `convertResponsesMessages` (system prompt first, as `developer` or `system`).
pub fn convert_input(
    model: &Model,
    compat: &ResponsesCompat,
    request: &ProviderRequest,
    llm: &[LlmMessage],
    configuration_effort: Option<&Value>,
) -> Vec<Value> {
    let mut out = Vec::new();
    if compat.tools_in_input && !request.tools.is_empty() {
        out.push(
            json!({"type": "additional_tools", "role": "developer", "tools": convert_tools(&request.tools, compat)}),
        );
    }
    if !request.system_prompt.is_empty() {
        let role = if model.reasoning && compat.developer_role { "developer" } else { "system" };
        out.push(json!({"role": role, "content": request.system_prompt}));
    }
    let mut msg_index = 0;
    for message in llm {
        match message {
            LlmMessage::User { content: UserContent::Text(t), .. } => {
                out.push(json!({"role": "user", "content": [{"type": "input_text", "text": t}]}));
            }
            LlmMessage::User { content: UserContent::Blocks(blocks), .. } => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(json!({"type": "input_text", "text": t.text})),
                        ContentBlock::Image(i) => Some(
                            json!({"type": "input_image", "detail": "auto", "image_url": image_url(&i.mime_type, &i.data)}),
                        ),
                        _ => None,
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                out.push(json!({"role": "user", "content": parts}));
            }
            LlmMessage::Assistant(a) => {
                let items = assistant_items(model, a, msg_index);
                if items.is_empty() {
                    continue;
                }
                let same_model = a.provider == model.provider && a.api == model.api && a.model == model.id;
                if let Some(level) =
                    a.extra.get("providerThinkingLevel").filter(|_| configuration_effort.is_some() && same_model)
                {
                    out.push(json!({"type": "configuration_update", "reasoning": {"effort": level}}));
                }
                out.extend(items);
            }
            LlmMessage::ToolResult(t) => {
                let call_id = t.tool_call_id.split('|').next().unwrap_or("");
                out.push(json!({"type": "function_call_output", "call_id": call_id,
                    "output": tool_output(model, &t.content)}));
            }
        }
        msg_index += 1;
    }
    if let Some(effort) = configuration_effort {
        out.push(json!({"type": "configuration_update", "reasoning": {"effort": effort}}));
    }
    out
}

/// Function tools (strict where the tool prefers it and the model supports it;
/// `strict` is only sent to models that support strict mode).
pub fn convert_tools(tools: &[ToolSpec], compat: &ResponsesCompat) -> Vec<Value> {
    convert_tools_with(tools, compat, json!(false))
}

/// [`convert_tools`] where a tool that is not strict gets `not_strict` (pi's
/// default `strict`: `false`, or `null` for the Codex backend).
pub fn convert_tools_with(tools: &[ToolSpec], compat: &ResponsesCompat, not_strict: Value) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let strict = strict_parameters(t, compat.strict_mode, None);
            let mut f = Map::new();
            f.insert("type".into(), json!("function"));
            f.insert("name".into(), json!(t.name));
            f.insert("description".into(), json!(t.description));
            f.insert("parameters".into(), strict.clone().unwrap_or_else(|| t.parameters.clone()));
            if compat.strict_mode {
                f.insert("strict".into(), if strict.is_some() { json!(true) } else { not_strict.clone() });
            }
            Value::Object(f)
        })
        .collect()
}

/// The effort sent in `configuration_update` items, when the model takes it there.
pub fn configuration_effort(request: &ProviderRequest, compat: &ResponsesCompat) -> Option<Value> {
    let level = requested_level(request)?;
    let sign_in = is_chatgpt_sign_in(&request.model, request.api_key.as_deref());
    (compat.mid_convo_effort && !sign_in).then(|| effort_value(&request.model, level))
}

/// The request body, keys in pi's order.
pub fn build_body(request: &ProviderRequest) -> Value {
    let model = &request.model;
    let compat = ResponsesCompat::resolve(model);
    let unprepared = convert::to_llm(&request.messages);
    let max_tokens = convert::output_cap(request, &unprepared).unwrap_or(0);
    let normalize = |id: &str, source: &AssistantMessage| normalize_tool_call_id(model, id, source);
    let llm = convert::transform_with(unprepared, model, Some(&normalize));
    let configuration = configuration_effort(request, &compat);
    let sign_in = is_chatgpt_sign_in(model, request.api_key.as_deref());
    let retention = CacheRetention::of(request);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("input".into(), Value::Array(convert_input(model, &compat, request, &llm, configuration.as_ref())));
    body.insert("stream".into(), json!(true));
    if compat.prompt_cache_key_mode != "disabled"
        && retention != CacheRetention::None
        && let Some(id) = &request.session_id
    {
        body.insert("prompt_cache_key".into(), json!(id.chars().take(64).collect::<String>()));
    }
    if !sign_in {
        let long = retention == CacheRetention::Long && compat.long_cache_retention;
        if long && !compat.explicit_prompt_cache_mode {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if long && compat.explicit_prompt_cache_mode {
            body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
        } else if retention == CacheRetention::None && compat.explicit_prompt_cache_mode {
            body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
        }
    }
    body.insert("store".into(), json!(false));
    if compat.max_output_tokens && !sign_in && max_tokens > 0 {
        body.insert("max_output_tokens".into(), json!(max_tokens.max(MIN_OUTPUT_TOKENS)));
    }
    if let Some(t) = request.api_options.temperature.as_ref().filter(|_| !sign_in) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tier) = &request.api_options.service_tier {
        body.insert("service_tier".into(), tier.clone());
    }
    if !request.tools.is_empty() && !compat.tools_in_input {
        body.insert("tools".into(), Value::Array(convert_tools(&request.tools, &compat)));
    }
    if let Some(choice) = &request.api_options.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        match requested_level(request) {
            Some(level) => {
                let effort = if configuration.is_some() {
                    json!(CONFIGURATION_UPDATE_EFFORT)
                } else {
                    effort_value(model, level)
                };
                let summary = request.api_options.reasoning_summary.as_deref().unwrap_or("auto");
                body.insert("reasoning".into(), json!({"effort": effort, "summary": summary}));
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None if model.provider != "github-copilot" && off_allowed(model) => {
                let off = level_entry(model, ThinkingLevel::Off).cloned().unwrap_or_else(|| json!("none"));
                body.insert("reasoning".into(), json!({"effort": off}));
            }
            None => {}
        }
        if model.provider == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    // Last, so the model's and the caller's sampling parameters win over named fields.
    request.api_options.apply_sampling(model, requested_level(request).unwrap_or(ThinkingLevel::Off), &mut body);
    Value::Object(body)
}

/// Request headers: model headers, session affinity, request headers, and
/// the bearer key (configured `Authorization` headers stand in for a key).
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let compat = ResponsesCompat::resolve(&request.model);
    let configured = configured_headers(request);
    let key = match request.api_key.as_deref().filter(|k| !k.is_empty()) {
        Some(k) => k.to_string(),
        None if has_header(&configured, "authorization") || has_header(&configured, "cf-aig-authorization") => {
            "unused".to_string()
        }
        None => {
            return Err(ProviderError::new(
                ProviderErrorKind::Auth,
                format!("No API key for provider: {}", request.model.provider),
            ));
        }
    };
    let mut headers = vec![("authorization".to_string(), format!("Bearer {key}"))];
    if let Some(h) = &request.model.headers {
        for (k, v) in h {
            if let Some(s) = v.as_str() {
                set_header(&mut headers, k, s);
            }
        }
    }
    if let Some(id) = request.session_id.as_ref().filter(|_| CacheRetention::of(request) != CacheRetention::None) {
        if compat.session_affinity_format == "openrouter" {
            set_header(&mut headers, "x-session-id", id.clone());
        } else {
            if compat.session_affinity_format == "openai" {
                set_header(&mut headers, "session-id", id.clone());
            }
            set_header(&mut headers, "x-client-request-id", id.clone());
        }
    }
    for (k, v) in request_headers(request) {
        set_header(&mut headers, &k, v);
    }
    crate::provider::edits::finish_headers(request, &mut headers);
    Ok(headers)
}

/// The endpoint under the model's base URL.
pub fn endpoint(model: &Model) -> String {
    format!("{}/responses", model.base_url.trim_end_matches('/'))
}
