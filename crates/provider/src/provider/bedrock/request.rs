//! The `ConverseStream` request body as pi 1.6.0 builds it: messages with
//! Bedrock's content blocks (`text`, `image`, `toolUse`, `toolResult`,
//! `reasoningContent`, `cachePoint`), the system prompt, `inferenceConfig`,
//! `toolConfig`, and the thinking parameters in
//! `additionalModelRequestFields` (Claude: adaptive or budget thinking;
//! OpenAI GPT models: their reasoning effort).

use base64::Engine;
use serde_json::{Map, Value, json};

use super::super::convert::{self, LlmMessage};
use super::super::shared::{CacheRetention, adjust_for_thinking, compat_bool, level_string};
use super::super::strict_schema::strict_parameters;
use super::super::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
use crate::message::{AssistantMessage, ContentBlock, ToolResultMessage, UserContent};
use crate::model::{Model, ThinkingLevel};

const EMPTY_TEXT: &str = "<empty>";
const THINKING_BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// pi's candidates for model-name tests: id and name, lowercased, as they
/// are and with spaces, `_`, `.` and `:` runs turned into `-`.
fn candidates(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    for value in [&model.id, &model.name] {
        let lower = value.to_lowercase();
        let mut dashed = String::with_capacity(lower.len());
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

fn any_contains(model: &Model, needles: &[&str]) -> bool {
    candidates(model).iter().any(|c| needles.iter().any(|n| c.contains(n)))
}

/// An Anthropic Claude model on Bedrock (by id or name).
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude") || id.contains("anthropic/claude") || name.contains("claude")
}

/// Claude models with adaptive thinking (Opus 4.6+, Sonnet 4.6, the 5 family).
pub fn adaptive_thinking(model: &Model) -> bool {
    any_contains(model, &["opus-4-6", "opus-4-7", "opus-4-8", "opus-5", "sonnet-4-6", "sonnet-5", "haiku-5", "fable-5"])
}

/// Models with a native `xhigh` effort, which also take `thinking.block_binding`.
fn native_xhigh(model: &Model) -> bool {
    any_contains(model, &["opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5"])
}

/// Claude models that take cache points (`AWS_BEDROCK_FORCE_CACHE=1` for others).
fn prompt_caching(model: &Model, force: bool) -> bool {
    if !any_contains(model, &["claude"]) {
        return force;
    }
    any_contains(model, &["fable-5", "opus-5", "sonnet-5", "haiku-5", "-4-", "claude-3-7-sonnet", "claude-3-5-haiku"])
}

/// Tool-call ids Bedrock accepts: `[a-zA-Z0-9_-]`, at most 64 characters.
pub fn normalize_tool_call_id(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(64).collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"text": text}))
}

fn image_block(mime: &str, data: &str) -> Result<Value, ProviderError> {
    let format = match mime {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(ProviderError::new(ProviderErrorKind::InvalidRequest, format!("Unknown image type: {other}")));
        }
    };
    Ok(json!({"image": {"source": {"bytes": data}, "format": format}}))
}

fn cache_point(retention: CacheRetention) -> Value {
    match retention {
        CacheRetention::Long => json!({"cachePoint": {"type": "default", "ttl": "1h"}}),
        CacheRetention::Short | CacheRetention::None => json!({"cachePoint": {"type": "default"}}),
    }
}

fn tool_result_content(content: &[ContentBlock]) -> Result<Vec<Value>, ProviderError> {
    let mut out = Vec::new();
    for block in content {
        match block {
            ContentBlock::Image(i) => out.push(image_block(&i.mime_type, &i.data)?),
            ContentBlock::Text(t) => out.extend(text_block(&t.text)),
            _ => {}
        }
    }
    if out.is_empty() {
        out.push(json!({"text": EMPTY_TEXT}));
    }
    Ok(out)
}

/// Claude rejects error results with images: they get a placeholder and the
/// images follow all results of the turn, with a caption.
fn split_error_images(t: &ToolResultMessage) -> Option<(Vec<ContentBlock>, Vec<ContentBlock>)> {
    if !t.is_error || !t.content.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
        return None;
    }
    let mut content = Vec::new();
    let mut trailing = vec![ContentBlock::text(format!(
        "Images from the error result of tool call {} ({}):",
        t.tool_call_id, t.tool_name
    ))];
    let mut previous_placeholder = false;
    for block in &t.content {
        if let ContentBlock::Image(_) = block {
            if !previous_placeholder {
                content.push(ContentBlock::text(ERROR_IMAGE_PLACEHOLDER));
            }
            previous_placeholder = true;
            trailing.push(block.clone());
            continue;
        }
        previous_placeholder = matches!(block, ContentBlock::Text(x) if x.text == ERROR_IMAGE_PLACEHOLDER);
        content.push(block.clone());
    }
    Some((content, trailing))
}

fn assistant_blocks(a: &AssistantMessage, model: &Model) -> Vec<Value> {
    let mut out = Vec::new();
    for block in &a.content {
        match block {
            ContentBlock::Text(t) => out.extend(text_block(&t.text)),
            ContentBlock::ToolCall(c) => {
                let input = if c.arguments.is_null() { json!({}) } else { without_empty_keys(&c.arguments) };
                out.push(json!({"toolUse": {"toolUseId": c.id, "name": c.name, "input": input}}));
            }
            ContentBlock::Thinking(t) if t.redacted => {
                let signature = t.thinking_signature.as_deref().unwrap_or_default();
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature)
                    && !bytes.is_empty()
                {
                    out.push(json!({"reasoningContent": {"redactedContent": signature}}));
                }
            }
            ContentBlock::Thinking(t) if t.thinking.trim().is_empty() => {}
            ContentBlock::Thinking(t) if is_claude(model) => {
                match t.thinking_signature.as_deref().filter(|s| !s.trim().is_empty()) {
                    None => out.push(json!({"text": t.thinking})),
                    Some(signature) => out.push(
                        json!({"reasoningContent": {"reasoningText": {"text": t.thinking, "signature": signature}}}),
                    ),
                }
            }
            ContentBlock::Thinking(t) => out.push(json!({"reasoningContent": {"reasoningText": {"text": t.thinking}}})),
            _ => {}
        }
    }
    out
}

/// Bedrock's documents reject empty keys (pi's `sanitizeBedrockDocument`).
fn without_empty_keys(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(without_empty_keys).collect()),
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| !k.is_empty()).map(|(k, v)| (k.clone(), without_empty_keys(v))).collect(),
        ),
        other => other.clone(),
    }
}

/// pi's `convertMessages` for Converse.
pub fn convert_messages(
    model: &Model,
    llm: &[LlmMessage],
    cache: Option<CacheRetention>,
) -> Result<Vec<Value>, ProviderError> {
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < llm.len() {
        match &llm[i] {
            LlmMessage::User { content, .. } => {
                let mut parts = Vec::new();
                match content {
                    UserContent::Text(t) => parts.push(text_block(t).unwrap_or_else(|| json!({"text": EMPTY_TEXT}))),
                    UserContent::Blocks(blocks) => {
                        for b in blocks {
                            match b {
                                ContentBlock::Text(t) => parts.extend(text_block(&t.text)),
                                ContentBlock::Image(img) => parts.push(image_block(&img.mime_type, &img.data)?),
                                _ => {}
                            }
                        }
                        if parts.is_empty() {
                            parts.push(json!({"text": EMPTY_TEXT}));
                        }
                    }
                }
                out.push(json!({"role": "user", "content": parts}));
            }
            LlmMessage::Assistant(a) => {
                let blocks = assistant_blocks(a, model);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            LlmMessage::ToolResult(_) => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while let Some(LlmMessage::ToolResult(t)) = llm.get(i) {
                    let split = if is_claude(model) { split_error_images(t) } else { None };
                    let content = match &split {
                        Some((content, _)) => tool_result_content(content)?,
                        None => tool_result_content(&t.content)?,
                    };
                    let status = if t.is_error { "error" } else { "success" };
                    results.push(
                        json!({"toolResult": {"toolUseId": t.tool_call_id, "content": content, "status": status}}),
                    );
                    if let Some((_, trailing)) = split {
                        for b in trailing {
                            match b {
                                ContentBlock::Image(img) => error_images.push(image_block(&img.mime_type, &img.data)?),
                                ContentBlock::Text(t) => error_images.push(json!({"text": t.text})),
                                _ => {}
                            }
                        }
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
    if let Some(retention) = cache
        && let Some(last) = out.last_mut()
        && last["role"] == "user"
        && let Some(content) = last.get_mut("content").and_then(Value::as_array_mut)
    {
        content.push(cache_point(retention));
    }
    Ok(out)
}

fn tool_config(model: &Model, tools: &[ToolSpec], choice: Option<&Value>) -> Option<Value> {
    if tools.is_empty() || choice.and_then(Value::as_str) == Some("none") {
        return None;
    }
    let strict_mode = compat_bool(model, "supportsStrictMode").unwrap_or(false);
    let specs: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let strict = strict_parameters(tool, strict_mode, None);
            let mut spec = Map::new();
            spec.insert("name".into(), json!(tool.name));
            spec.insert(
                "inputSchema".into(),
                json!({"json": strict.clone().unwrap_or_else(|| tool.parameters.clone())}),
            );
            spec.insert("description".into(), json!(tool.description));
            if strict.is_some() {
                spec.insert("strict".into(), json!(true));
            }
            json!({"toolSpec": spec})
        })
        .collect();
    // The caller's `toolChoice` (pi-ai's `auto`, `any`, `{type: "tool", name}`; anything else none).
    let choice = match choice {
        Some(Value::String(c)) if c == "auto" || c == "any" => Some(json!({c.as_str(): {}})),
        Some(c) if c.get("type").and_then(Value::as_str) == Some("tool") => {
            Some(json!({"tool": {"name": c.get("name").cloned().unwrap_or(Value::Null)}}))
        }
        _ => None,
    };
    let mut config = json!({"tools": specs});
    if let Some(choice) = choice {
        config["toolChoice"] = choice;
    }
    Some(config)
}

/// pi's effort for a level on adaptive-thinking Claude models.
fn effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && native_xhigh(model) {
        return "xhigh".into();
    }
    crate::provider::anthropic_request::effort_for(model, level)
}

/// A GovCloud target (region or model id): Claude's `thinking.display` and block binding are left out.
fn gov_cloud(model: &Model, region: &str) -> bool {
    let id = model.id.to_lowercase();
    region.to_lowercase().starts_with("us-gov-") || id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
}

/// The output cap and `additionalModelRequestFields` for the request's thinking level.
fn thinking(request: &ProviderRequest, llm: &[LlmMessage], region: &str) -> (Option<u64>, Option<Value>) {
    let model = &request.model;
    // A provider-specific `stream()` call: the caller's cap, else Claude's own, else none.
    let base = match request.api_options.max_tokens_as_given {
        true => request.max_tokens.filter(|m| *m > 0).or_else(|| is_claude(model).then_some(model.max_tokens)),
        false => Some(convert::output_budget(request, llm)),
    };
    let level = request.thinking_level;
    let Some(base) = base.filter(|_| level != ThinkingLevel::Off && model.reasoning) else {
        return (base, None);
    };
    if is_claude(model) {
        let gov = gov_cloud(model, region);
        let display = (!gov).then_some("summarized");
        if adaptive_thinking(model) {
            let binding = !gov && native_xhigh(model);
            let mut thinking = json!({"type": "adaptive"});
            if let Some(d) = display {
                thinking["display"] = json!(d);
            }
            if binding {
                thinking["block_binding"] = json!({"prefix_mismatch_behavior": "drop_block"});
            }
            let mut fields = json!({"thinking": thinking, "output_config": {"effort": effort(model, level)}});
            if binding {
                fields["anthropic_beta"] = json!([THINKING_BINDING_BETA]);
            }
            return (Some(base), Some(fields));
        }
        let (adjusted, budget) =
            adjust_for_thinking(base, model.max_tokens, level, &request.api_options.thinking_budgets);
        let input = convert::estimate_context_tokens(&request.system_prompt, &request.tools, llm);
        let max_tokens = convert::clamp_max_tokens(model.context_window, input, adjusted);
        let budget = budget.min(max_tokens.saturating_sub(1024));
        let mut thinking = json!({"type": "enabled", "budget_tokens": budget});
        if let Some(d) = display {
            thinking["display"] = json!(d);
        }
        return (Some(max_tokens), Some(json!({"thinking": thinking, "anthropic_beta": [INTERLEAVED_THINKING_BETA]})));
    }
    let fields = if any_contains(model, &["gpt-oss"]) {
        let effort = match level {
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => "high",
            _ => "low",
        };
        Some(json!({"reasoning_effort": effort}))
    } else if any_contains(model, &["gpt-"]) {
        let effort = level_string(model, level).map(str::to_string).unwrap_or_else(|| {
            match level {
                ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
                ThinkingLevel::Medium => "medium",
                ThinkingLevel::Xhigh => "xhigh",
                ThinkingLevel::Max => "max",
                _ => "high",
            }
            .to_string()
        });
        Some(json!({"reasoning": {"effort": effort}}))
    } else {
        None
    };
    (Some(base), fields)
}

/// The whole body (keys in pi's order). `region` is the signing region
/// (GovCloud changes Claude's thinking fields); `force_cache` is
/// `AWS_BEDROCK_FORCE_CACHE=1`.
pub fn build_body(request: &ProviderRequest, region: &str, force_cache: bool) -> Result<Value, ProviderError> {
    let model = &request.model;
    let unprepared = convert::to_llm(&request.messages);
    let (max_tokens, additional) = thinking(request, &unprepared, region);
    let normalize = |id: &str| normalize_tool_call_id(id);
    let llm = convert::transform(unprepared, model, Some(&normalize));
    let cache =
        prompt_caching(model, force_cache).then(|| CacheRetention::of(request)).filter(|c| *c != CacheRetention::None);
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(convert_messages(model, &llm, cache)?));
    if !request.system_prompt.is_empty() {
        let mut system = vec![json!({"text": request.system_prompt})];
        system.extend(cache.map(cache_point));
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(max_tokens) = max_tokens {
        inference.insert("maxTokens".into(), json!(max_tokens));
    }
    if let Some(t) = &request.api_options.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if let Some(tools) = tool_config(model, &request.tools, request.api_options.tool_choice.as_ref()) {
        body.insert("toolConfig".into(), tools);
    }
    if let Some(fields) = additional {
        body.insert("additionalModelRequestFields".into(), fields);
    }
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_support::simple_request;

    fn model(id: &str, name: &str) -> Model {
        let mut m = crate::provider::faux::faux_model();
        m.id = id.into();
        m.name = name.into();
        m.provider = "amazon-bedrock".into();
        m.api = "bedrock-converse-stream".into();
        m.reasoning = true;
        m.max_tokens = 64000;
        m.context_window = 200_000;
        m
    }

    #[test]
    fn model_families_follow_pi() {
        let sonnet = model("eu.anthropic.claude-sonnet-4-20250514-v1:0", "Claude Sonnet 4");
        assert!(is_claude(&sonnet) && !adaptive_thinking(&sonnet) && prompt_caching(&sonnet, false));
        let opus = model("global.anthropic.claude-opus-4-7", "Claude Opus 4.7");
        assert!(adaptive_thinking(&opus) && native_xhigh(&opus));
        let profile = model("arn:aws:bedrock:us-east-1:1:application-inference-profile/x", "My Opus 4.6");
        assert!(adaptive_thinking(&profile) && !native_xhigh(&profile));
        let nova = model("amazon.nova-pro-v1:0", "Nova Pro");
        assert!(!is_claude(&nova) && !prompt_caching(&nova, false) && prompt_caching(&nova, true));
        assert_eq!(normalize_tool_call_id("call:1/x"), "call_1_x");
    }

    #[test]
    fn bodies_carry_caching_and_thinking() {
        let mut request = simple_request(model("eu.anthropic.claude-sonnet-4-20250514-v1:0", "Claude Sonnet 4"), "hi");
        request.system_prompt = "sys".into();
        let body = build_body(&request, "us-east-1", false).unwrap();
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(&keys[..3], ["messages", "system", "inferenceConfig"]);
        assert_eq!(body["messages"][0]["content"][1], json!({"cachePoint": {"type": "default"}}));
        assert_eq!(body["system"], json!([{"text": "sys"}, {"cachePoint": {"type": "default"}}]));
        request.thinking_level = ThinkingLevel::Medium;
        let body = build_body(&request, "us-east-1", false).unwrap();
        let fields = &body["additionalModelRequestFields"];
        assert_eq!(fields["thinking"], json!({"type": "enabled", "budget_tokens": 8192, "display": "summarized"}));
        assert_eq!(fields["anthropic_beta"], json!([INTERLEAVED_THINKING_BETA]));
        let gov = build_body(&request, "us-gov-west-1", false).unwrap();
        assert!(gov["additionalModelRequestFields"]["thinking"].get("display").is_none());
        request.model = model("global.anthropic.claude-opus-4-7", "Claude Opus 4.7");
        request.thinking_level = ThinkingLevel::Xhigh;
        let fields = build_body(&request, "us-east-1", false).unwrap()["additionalModelRequestFields"].clone();
        assert_eq!(fields["output_config"], json!({"effort": "xhigh"}));
        assert_eq!(fields["anthropic_beta"], json!([THINKING_BINDING_BETA]));
        request.model = model("openai.gpt-oss-120b-1:0", "gpt-oss-120b");
        request.thinking_level = ThinkingLevel::Xhigh;
        let fields = build_body(&request, "us-east-1", false).unwrap()["additionalModelRequestFields"].clone();
        assert_eq!(fields, json!({"reasoning_effort": "high"}));
    }

    #[test]
    fn images_need_a_known_type() {
        assert!(image_block("image/png", "AA==").is_ok());
        assert_eq!(image_block("image/bmp", "AA==").unwrap_err().message, "Unknown image type: image/bmp");
    }
}
