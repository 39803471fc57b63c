//! Request side of `anthropic-messages`: the Messages API body (keys in pi
//! 1.6's order), message and tool conversion with prompt-cache markers, the
//! thinking parameters per level (budget, adaptive, managed effort), the
//! `anthropic-beta` features and the request headers.

use serde_json::{Map, Value, json};

use super::convert::{self, LlmMessage};
use super::shared::{
    CacheRetention, adjust_for_thinking, compat_bool, compat_value, configured_headers, has_header, level_string,
    off_allowed, set_header,
};
use super::strict_schema::{anthropic_unsupported_keyword, prefers_strict, strict_parameters};
use super::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
use crate::message::{AssistantMessage, ContentBlock, ToolResultMessage, UserContent};
use crate::model::{Model, ThinkingLevel};

/// `anthropic-version` sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";
const MID_CONVERSATION_OUTPUT_CONFIG_BETA: &str = "mid-conversation-output-config-2026-07-01";
const THINKING_BINDING_CONTROLS_BETA: &str = "thinking-binding-controls-2026-08-01";
const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";
const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];
/// Claude Code's version, sent in the user agent of OAuth-token requests.
const CLAUDE_CODE_VERSION: &str = "2.1.322";
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Claude Code's tool names; OAuth-token requests use this casing.
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];
const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// True for Anthropic OAuth access tokens (sent as a bearer token, Claude Code identity).
pub fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

/// A tool name in Claude Code's casing when it is one of its tools.
pub fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS.iter().find(|t| t.eq_ignore_ascii_case(name)).map_or_else(|| name.to_string(), |t| t.to_string())
}

/// The declared tool a streamed (Claude Code cased) tool name stands for.
pub fn from_claude_code_name(name: &str, tools: &[ToolSpec]) -> String {
    tools.iter().find(|t| t.name.eq_ignore_ascii_case(name)).map_or_else(|| name.to_string(), |t| t.name.clone())
}

/// Anthropic's tool-call id rule (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn normalize_tool_call_id(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(64).collect()
}

/// pi's `getAnthropicCompat`, the flags this implementation uses.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicCompat {
    pub eager_tool_input_streaming: bool,
    pub long_cache_retention: bool,
    pub session_affinity_headers: bool,
    /// `openrouter` (`x-session-id`) or anything else (`x-session-affinity`).
    pub session_affinity_format: Option<String>,
    pub cache_control_on_tools: bool,
    pub allow_empty_signature: bool,
    pub force_adaptive_thinking: bool,
    pub mid_convo_effort: bool,
    pub native_tool_changes: bool,
    pub fallback_models: Vec<String>,
    /// Claude's strict tool use (`strict: true` tools).
    pub strict_tools: bool,
}

impl AnthropicCompat {
    pub fn resolve(model: &Model) -> AnthropicCompat {
        let is_openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        let flag = |key: &str, default: bool| compat_bool(model, key).unwrap_or(default);
        let fallback_models = compat_value(model, "allowedFallbackModels")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter().filter_map(|f| f.get("model").and_then(Value::as_str).map(str::to_string)).collect()
            })
            .unwrap_or_default();
        AnthropicCompat {
            eager_tool_input_streaming: flag("supportsEagerToolInputStreaming", true),
            long_cache_retention: flag("supportsLongCacheRetention", true),
            session_affinity_headers: flag("sendSessionAffinityHeaders", is_openrouter),
            session_affinity_format: compat_value(model, "sessionAffinityFormat")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| is_openrouter.then(|| "openrouter".to_string())),
            cache_control_on_tools: flag("supportsCacheControlOnTools", true),
            allow_empty_signature: flag("allowEmptySignature", false),
            force_adaptive_thinking: flag("forceAdaptiveThinking", false),
            mid_convo_effort: flag("supportsMidConvoEffort", false),
            native_tool_changes: flag("supportsMidConvoSystemMessages", false)
                && flag("supportsMidConvoToolChanges", false),
            fallback_models,
            strict_tools: flag("supportsStrictTools", false),
        }
    }
}

/// How thinking is requested for this call (pi's `streamSimple` decisions).
#[derive(Debug, Clone, PartialEq)]
pub enum Thinking {
    /// Thinking off (`thinking: {type: disabled}` when the model can turn it off).
    Off,
    /// Adaptive thinking with an effort (`forceAdaptiveThinking` models).
    Adaptive { effort: String },
    /// Budget-based extended thinking.
    Budget { budget_tokens: u64 },
}

/// Everything decided before the body is written.
#[derive(Debug, Clone)]
pub struct Plan {
    pub compat: AnthropicCompat,
    pub thinking: Thinking,
    pub max_tokens: u64,
    pub oauth: bool,
    /// Prompt-cache marker, none with a call's `cacheRetention: "none"`.
    pub cache_control: Option<Value>,
    /// Send tools that merely prefer strict schemas without them (after Claude
    /// rejected this session's strict tools for exceeding its limits).
    pub no_preferred_strict: bool,
    /// Authenticated with a workload-federation access token
    /// ([`super::anthropic_federation`]): a bearer token with the OAuth beta.
    pub federated: bool,
}

/// pi's `mapThinkingLevelToEffort` (Claude's effort levels, also on Bedrock).
pub(crate) fn effort_for(model: &Model, level: ThinkingLevel) -> String {
    if let Some(mapped) = level_string(model, level) {
        return mapped.to_string();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .to_string()
}

/// Decide the thinking mode and output cap like pi's `streamSimple`.
pub fn plan(request: &ProviderRequest, llm: &[LlmMessage]) -> Plan {
    let model = &request.model;
    let compat = AnthropicCompat::resolve(model);
    // A provider-specific `stream()` call: the caller's cap, else the model's, as pi-ai's `stream()` sends it.
    let base = match request.api_options.max_tokens_as_given {
        true => request.max_tokens.filter(|m| *m > 0).unwrap_or(model.max_tokens),
        false => convert::output_budget(request, llm),
    };
    let level = request.thinking_level;
    let (thinking, max_tokens) = if level == ThinkingLevel::Off {
        (Thinking::Off, base)
    } else if compat.force_adaptive_thinking {
        (Thinking::Adaptive { effort: effort_for(model, level) }, base)
    } else if let Some(budget) = request.api_options.thinking_budget {
        (Thinking::Budget { budget_tokens: budget }, base)
    } else {
        let (adjusted, budget) =
            adjust_for_thinking(base, model.max_tokens, level, &request.api_options.thinking_budgets);
        let input = convert::estimate_context_tokens(&request.system_prompt, &request.tools, llm);
        let max_tokens = convert::clamp_max_tokens(model.context_window, input, adjusted);
        let budget = budget.min(max_tokens.saturating_sub(1024));
        (Thinking::Budget { budget_tokens: budget }, max_tokens)
    };
    let retention = CacheRetention::of(request);
    let ttl = retention == CacheRetention::Long && compat.long_cache_retention;
    let cache_control = match retention {
        CacheRetention::None => None,
        _ if ttl => Some(json!({"type": "ephemeral", "ttl": "1h"})),
        _ => Some(json!({"type": "ephemeral"})),
    };
    let oauth = request.api_key.as_deref().is_some_and(is_oauth_token);
    Plan { compat, thinking, max_tokens, oauth, cache_control, no_preferred_strict: false, federated: false }
}

/// A system text block with the prompt-cache marker, if any.
fn cached_text(text: &str, plan: &Plan) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if let Some(cc) = &plan.cache_control {
        block["cache_control"] = cc.clone();
    }
    block
}

fn image_block(mime: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

/// pi's `convertContentBlocks`: joined text, or blocks when there are images.
fn tool_result_content(content: &[ContentBlock]) -> Value {
    if !content.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        return json!(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
            ContentBlock::Image(i) => Some(image_block(&i.mime_type, &i.data)),
            _ => None,
        })
        .collect();
    if !blocks.iter().any(|b| b["type"] == "text") {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

/// Error results may not carry images: they get a placeholder, and the images
/// follow all results of the turn with a caption (pi's `splitErrorToolResultImages`).
fn split_error_images(t: &ToolResultMessage) -> Option<(Vec<ContentBlock>, String, Vec<Value>)> {
    if !t.is_error || !t.content.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
        return None;
    }
    let mut content = Vec::new();
    let mut images = Vec::new();
    let mut previous_placeholder = false;
    for block in &t.content {
        if let ContentBlock::Image(i) = block {
            if !previous_placeholder {
                content.push(ContentBlock::text(ERROR_IMAGE_PLACEHOLDER));
            }
            previous_placeholder = true;
            images.push(image_block(&i.mime_type, &i.data));
            continue;
        }
        previous_placeholder = matches!(block, ContentBlock::Text(x) if x.text == ERROR_IMAGE_PLACEHOLDER);
        content.push(block.clone());
    }
    let caption = format!("Images from the error result of tool call {} ({}):", t.tool_call_id, t.tool_name);
    Some((content, caption, images))
}

fn assistant_blocks(a: &AssistantMessage, plan: &Plan) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in &a.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => blocks.push(json!({"type": "text", "text": t.text})),
            ContentBlock::Thinking(t) if t.redacted => {
                blocks.push(
                    json!({"type": "redacted_thinking", "data": t.thinking_signature.clone().unwrap_or_default()}),
                );
            }
            ContentBlock::Thinking(t) => {
                let signature = t.thinking_signature.as_deref().filter(|s| !s.trim().is_empty());
                match signature {
                    None if t.thinking.trim().is_empty() => {}
                    None if plan.compat.allow_empty_signature => {
                        blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": ""}));
                    }
                    None => blocks.push(json!({"type": "text", "text": t.thinking})),
                    Some(sig) => blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": sig})),
                }
            }
            ContentBlock::ToolCall(c) => {
                let name = if plan.oauth { to_claude_code_name(&c.name) } else { c.name.clone() };
                let input = if c.arguments.is_null() { json!({}) } else { c.arguments.clone() };
                blocks.push(json!({"type": "tool_use", "id": c.id, "name": name, "input": input}));
            }
            _ => {}
        }
    }
    blocks
}

fn is_effort(v: &str) -> bool {
    matches!(v, "low" | "medium" | "high" | "xhigh" | "max")
}

/// pi's `convertMessages` for the Messages API, cache marker on the last user message.
/// With managed effort, each earlier assistant message of this provider is
/// preceded by a marker of the effort it was produced with.
pub fn convert_messages(model: &Model, plan: &Plan, llm: &[LlmMessage], managed: bool) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < llm.len() {
        match &llm[i] {
            LlmMessage::User { content: UserContent::Text(t), .. } => {
                if !t.trim().is_empty() {
                    out.push(json!({"role": "user", "content": t}));
                }
            }
            LlmMessage::User { content: UserContent::Blocks(blocks), .. } => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) if t.text.trim().is_empty() => None,
                        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                        ContentBlock::Image(img) => Some(image_block(&img.mime_type, &img.data)),
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
            LlmMessage::Assistant(a) => {
                let blocks = assistant_blocks(a, plan);
                if !blocks.is_empty() {
                    let level = a.extra.get("providerThinkingLevel").and_then(Value::as_str).filter(|l| is_effort(l));
                    if let Some(level) =
                        level.filter(|_| managed && a.api == "anthropic-messages" && a.provider == model.provider)
                    {
                        out.push(json!({"role": "system", "content": [], "output_config": {"effort": level}}));
                    }
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            LlmMessage::ToolResult(_) => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while let Some(LlmMessage::ToolResult(t)) = llm.get(i) {
                    let split = split_error_images(t);
                    let content = match &split {
                        Some((content, _, _)) => tool_result_content(content),
                        None => tool_result_content(&t.content),
                    };
                    results.push(json!({"type": "tool_result", "tool_use_id": t.tool_call_id, "content": content,
                        "is_error": t.is_error}));
                    if let Some((_, caption, images)) = split {
                        error_images.push(json!({"type": "text", "text": caption}));
                        error_images.extend(images);
                    }
                    i += 1;
                }
                results.extend(error_images);
                out.push(json!({"role": "user", "content": results}));
                continue;
            }
        }
        i += 1;
    }
    if let Some(cache_control) = &plan.cache_control {
        mark_last_user_message(&mut out, cache_control);
    }
    out
}

fn mark_last_user_message(messages: &mut [Value], cache_control: &Value) {
    let Some(last) = messages.last_mut() else { return };
    if last["role"] != "user" && last["role"] != "system" {
        return;
    }
    match last.get_mut("content") {
        Some(Value::Array(blocks)) => {
            if let Some(Value::Object(block)) = blocks.last_mut() {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                if matches!(kind, "text" | "image" | "tool_result" | "tool_addition" | "tool_removal") {
                    block.insert("cache_control".into(), cache_control.clone());
                }
            }
        }
        Some(Value::String(text)) => {
            let text = std::mem::take(text);
            last["content"] = json!([{"type": "text", "text": text, "cache_control": cache_control}]);
        }
        _ => {}
    }
}

/// Tool declarations: root `type/properties/required` (plus
/// `additionalProperties` and definitions), eager input streaming, cache
/// marker on the last one.
pub fn convert_tools(tools: &[ToolSpec], plan: &Plan) -> Vec<Value> {
    let cache = plan.cache_control.as_ref().filter(|_| plan.compat.cache_control_on_tools);
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let supported = plan.compat.strict_tools && !plan.no_preferred_strict;
            let strict = strict_parameters(tool, supported, Some(anthropic_unsupported_keyword));
            let p = strict.as_ref().unwrap_or(&tool.parameters);
            // A strict schema keeps its own keys; the root keywords Anthropic reads come last.
            let mut schema = match &strict {
                Some(Value::Object(o)) => o.clone(),
                _ => Map::new(),
            };
            schema.insert("type".into(), json!("object"));
            schema.insert("properties".into(), p.get("properties").cloned().unwrap_or_else(|| json!({})));
            schema.insert("required".into(), p.get("required").cloned().unwrap_or_else(|| json!([])));
            for key in ["additionalProperties", "$defs", "definitions"] {
                if let Some(v) = p.get(key) {
                    schema.insert(key.into(), v.clone());
                }
            }
            let mut t = Map::new();
            let name = if plan.oauth { to_claude_code_name(&tool.name) } else { tool.name.clone() };
            t.insert("name".into(), json!(name));
            t.insert("description".into(), json!(tool.description));
            if plan.compat.eager_tool_input_streaming {
                t.insert("eager_input_streaming".into(), json!(true));
            }
            if strict.is_some() {
                t.insert("strict".into(), json!(true));
            }
            t.insert("input_schema".into(), Value::Object(schema));
            if let Some(cc) = cache.filter(|_| i + 1 == tools.len()) {
                t.insert("cache_control".into(), cc.clone());
            }
            Value::Object(t)
        })
        .collect()
}

/// The placeholder tool pi declares when tool changes are native, so that
/// the first change keeps the cached prefix.
fn deferred_placeholder() -> Value {
    json!({"name": "__pi_deferred_placeholder__", "description": "Reserved placeholder. Never available. Never call this.",
        "input_schema": {"type": "object", "properties": {}, "required": []}, "defer_loading": true})
}

/// The `anthropic-beta` features: the configured header when there is one,
/// else the features this request needs.
pub fn beta_features(request: &ProviderRequest, plan: &Plan) -> Vec<String> {
    let model = &request.model;
    let is_beta = |k: &String| k.eq_ignore_ascii_case("anthropic-beta");
    let from_model = model.headers.iter().flatten().filter(|(k, _)| is_beta(k)).map(|(_, v)| v.as_str());
    let from_request = request.headers.iter().filter(|(k, _)| is_beta(k)).map(|(_, v)| Some(v.as_str()));
    // `Some(None)`: configured as null, which turns the features off.
    let configured: Option<Option<&str>> = from_model.chain(from_request).last();
    let mut features: Vec<String> = Vec::new();
    let mut add = |f: &str| {
        if !f.is_empty() && !features.iter().any(|x| x == f) {
            features.push(f.to_string());
        }
    };
    match configured {
        Some(None) => return Vec::new(),
        Some(Some(value)) => {
            for f in value.split(',') {
                add(f.trim());
            }
            return features;
        }
        None => {}
    }
    if plan.oauth {
        OAUTH_BETAS.iter().for_each(|f| add(f));
    }
    if !request.tools.is_empty() && !plan.compat.eager_tool_input_streaming {
        add(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if model.reasoning && matches!(plan.thinking, Thinking::Budget { .. }) {
        add(INTERLEAVED_THINKING_BETA);
    }
    if !plan.compat.fallback_models.is_empty() {
        add(SERVER_SIDE_FALLBACK_BETA);
    }
    if plan.compat.mid_convo_effort {
        add(MID_CONVERSATION_OUTPUT_CONFIG_BETA);
        add(THINKING_BINDING_CONTROLS_BETA);
    }
    if plan.compat.native_tool_changes && !request.tools.is_empty() {
        add(INLINE_TOOLS_BETA);
    }
    features
}

/// The request body, keys in pi's order.
pub fn build_body(request: &ProviderRequest, plan: &Plan, llm: &[LlmMessage]) -> Value {
    let model = &request.model;
    let thinking_disabled =
        model.reasoning && plan.thinking == Thinking::Off && off_allowed(model) && !request.api_options.thinking_unsaid;
    let managed = plan.compat.mid_convo_effort && !thinking_disabled;
    let mut messages = convert_messages(model, plan, llm, managed);
    let active_effort = match &plan.thinking {
        Thinking::Adaptive { effort } if !request.api_options.effort_unsaid => effort.clone(),
        _ => "high".to_string(),
    };
    let display = request.api_options.display();
    if managed {
        messages.push(json!({"role": "system", "content": [], "output_config": {"effort": active_effort}}));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(plan.max_tokens));
    body.insert("stream".into(), json!(true));
    let mut system = Vec::new();
    if plan.oauth {
        system.push(cached_text(CLAUDE_CODE_IDENTITY, plan));
    }
    if !request.system_prompt.is_empty() {
        system.push(cached_text(&request.system_prompt, plan));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    // Temperature goes with thinking off only, and not to models with effort markers (Opus 4.7+).
    if let Some(t) = &request.api_options.temperature
        && plan.thinking == Thinking::Off
        && !plan.compat.mid_convo_effort
        && compat_bool(model, "supportsTemperature").unwrap_or(true)
    {
        body.insert("temperature".into(), json!(t));
    }
    if !request.tools.is_empty() {
        let mut tools = convert_tools(&request.tools, plan);
        if plan.compat.native_tool_changes {
            tools.push(deferred_placeholder());
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if thinking_disabled {
        body.insert("thinking".into(), json!({"type": "disabled"}));
    } else if managed {
        body.insert(
            "thinking".into(),
            json!({"type": "adaptive", "display": display,
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}}),
        );
        body.insert("output_config".into(), json!({"effort": "low"}));
    } else if model.reasoning {
        match &plan.thinking {
            Thinking::Off => {}
            Thinking::Adaptive { effort } => {
                body.insert("thinking".into(), json!({"type": "adaptive", "display": display}));
                // A `stream()` call's `thinkingEnabled` without `effort` leaves the effort to Claude.
                if !request.api_options.effort_unsaid {
                    body.insert("output_config".into(), json!({"effort": effort}));
                }
            }
            Thinking::Budget { budget_tokens } => {
                let budget = if *budget_tokens == 0 { 1024 } else { *budget_tokens };
                body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget, "display": display}));
            }
        }
    }
    if let Some(user_id) =
        request.api_options.metadata.as_ref().and_then(|m| m.get("user_id")).filter(|u| u.is_string())
    {
        body.insert("metadata".into(), json!({"user_id": user_id}));
    }
    // A string is one of Claude's choices (`auto`, `any`, `none`), an object (`{type: "tool", name}`) goes as it is.
    if let Some(choice) = request.api_options.tool_choice.as_ref().filter(|c| super::shared::truthy(c)) {
        let choice = if choice.is_string() { json!({"type": choice}) } else { choice.clone() };
        body.insert("tool_choice".into(), choice);
    }
    if !plan.compat.fallback_models.is_empty() {
        let list: Vec<Value> = plan.compat.fallback_models.iter().map(|m| json!({"model": m})).collect();
        body.insert("fallbacks".into(), Value::Array(list));
    }
    Value::Object(body)
}

/// Request headers: API key (or bearer token for OAuth), version, beta
/// features, session affinity, then model and request headers.
pub fn build_headers(request: &ProviderRequest, plan: &Plan) -> Result<Vec<(String, String)>, ProviderError> {
    let configured = configured_headers(request);
    // pi's `<authenticated>` stand-in of ambient credentials is never sent.
    let key = request.api_key.as_deref().filter(|k| !k.is_empty() && !crate::provider::ambient::is_placeholder(k));
    let header_auth = ["authorization", "x-api-key", "cf-aig-authorization"].iter().any(|h| has_header(&configured, h));
    if key.is_none() && !header_auth {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key for provider: {}", request.model.provider),
        ));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    // Copilot takes its token as a bearer token, with no session affinity.
    let copilot = request.model.provider == crate::provider::copilot::PROVIDER;
    match key {
        Some(k) if plan.oauth || copilot || plan.federated => {
            headers.push(("authorization".into(), format!("Bearer {k}")))
        }
        Some(k) => headers.push(("x-api-key".into(), k.to_string())),
        None => {}
    }
    headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
    headers.push(("accept".into(), "application/json".into()));
    headers.push(("anthropic-dangerous-direct-browser-access".into(), "true".into()));
    if plan.oauth {
        headers.push(("user-agent".into(), format!("claude-cli/{CLAUDE_CODE_VERSION}")));
        headers.push(("x-app".into(), "cli".into()));
    } else if let Some(id) = request.session_id.as_deref().filter(|_| plan.compat.session_affinity_headers && !copilot)
    {
        let name = if plan.compat.session_affinity_format.as_deref() == Some("openrouter") {
            "x-session-id"
        } else {
            "x-session-affinity"
        };
        headers.push((name.into(), id.to_string()));
    }
    for (k, v) in configured {
        if !k.eq_ignore_ascii_case("anthropic-beta") {
            set_header(&mut headers, &k, v);
        }
    }
    let mut betas = beta_features(request, plan);
    if plan.federated && !betas.iter().any(|b| b == crate::provider::anthropic_federation::OAUTH_BETA) {
        betas.push(crate::provider::anthropic_federation::OAUTH_BETA.to_string());
    }
    if !betas.is_empty() {
        set_header(&mut headers, "anthropic-beta", betas.join(","));
    }
    crate::provider::edits::finish_headers(request, &mut headers);
    Ok(headers)
}

/// The endpoint: the beta Messages API under the model's base URL.
pub fn endpoint(model: &Model) -> String {
    format!("{}/v1/messages?beta=true", model.base_url.trim_end_matches('/'))
}

/// Whether the request sends any tool strict only because it prefers it
/// (what a strict-limit rejection can be retried without).
pub fn has_preferred_strict_tools(request: &ProviderRequest, plan: &Plan) -> bool {
    plan.compat.strict_tools
        && !plan.no_preferred_strict
        && request
            .tools
            .iter()
            .any(|t| prefers_strict(t) && strict_parameters(t, true, Some(anthropic_unsupported_keyword)).is_some())
}

/// Prepare the conversation for this model (pi's `transformMessages` with
/// Anthropic's id rule) and the plan.
pub fn prepare(request: &ProviderRequest, no_preferred_strict: bool) -> (Vec<LlmMessage>, Plan) {
    let unprepared = convert::to_llm(&request.messages);
    let mut plan = plan(request, &unprepared);
    plan.no_preferred_strict = no_preferred_strict;
    let normalize = |id: &str| normalize_tool_call_id(id);
    let llm = convert::transform(unprepared, &request.model, Some(&normalize));
    (llm, plan)
}
