//! Request side of `google-generative-ai`: the Gemini `streamGenerateContent`
//! body as pi 1.6 sends it through the Google GenAI SDK (`contents`,
//! `systemInstruction`, `tools` with `parametersJsonSchema`,
//! `generationConfig` with the thinking config per level), and the headers.

use serde_json::{Map, Value, json};

use super::convert::{self, LlmMessage};
use super::openai::request::clamp_level;
use super::shared::{configured_headers, level_entry, set_header};
use super::strict_schema::strict_parameters;
use super::{ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
use crate::message::{ContentBlock, UserContent};
use crate::model::{Model, ThinkingBudgets, ThinkingLevel};

/// The Gemini major version of a model id (`gemini-3-pro` → 3).
fn gemini_major(id: &str) -> Option<u32> {
    let lower = id.to_ascii_lowercase();
    let rest = lower.strip_prefix("gemini-live-").or_else(|| lower.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Models that need explicit ids on function calls and responses.
pub fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-") || id.starts_with("gpt-oss-") || gemini_major(id).is_some_and(|v| v >= 3)
}

/// Gemini 3+ (and non-Gemini models) take images inside function responses.
fn multimodal_function_response(id: &str) -> bool {
    gemini_major(id).is_none_or(|v| v >= 3)
}

/// Whether the model takes a discrete `thinkingLevel` instead of a token budget
/// (Gemini 3 Pro/Flash and later, the `-latest` Flash aliases, Gemma 4).
pub fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let gemini3 = id.match_indices("gemini-3").any(|(i, _)| {
        let rest = &id[i + "gemini-3".len()..];
        let rest = match rest.strip_prefix('.') {
            Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => {
                r.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => rest,
        };
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let later = id.match_indices("gemini-").any(|(i, _)| {
        let rest = &id[i + "gemini-".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        match digits.len() {
            1 => digits.as_bytes()[0] >= b'4',
            0 => false,
            _ => !digits.starts_with('0'),
        }
    });
    let gemma4 = id.contains("gemma4") || id.contains("gemma-4");
    gemini3 || later || id == "gemini-flash-latest" || id == "gemini-flash-lite-latest" || gemma4
}

/// pi's `resolveGoogleThinkingLevel`: the model's mapping (lowercased) or the
/// level itself, which must be one of Google's four levels.
pub fn resolve_level(model: &Model, level: ThinkingLevel) -> Result<&'static str, ProviderError> {
    let mapped = level_entry(model, level);
    let resolved = match mapped.and_then(Value::as_str) {
        Some(s) => s.to_ascii_lowercase(),
        None => level.as_str().to_string(),
    };
    match resolved.as_str() {
        "minimal" => Ok("MINIMAL"),
        "low" => Ok("LOW"),
        "medium" => Ok("MEDIUM"),
        "high" => Ok("HIGH"),
        _ => {
            let shown = match mapped {
                None => "undefined".to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "Unsupported Google thinking level mapping for {}/{}: {} -> {shown}",
                    model.provider, model.id, level
                ),
            ))
        }
    }
}

/// The Gemini 2.5 thinking budget of a Google level: the caller's
/// `thinkingBudgets`, else pi's (`-1`: the model decides).
fn budget(model: &Model, level: &str, custom: &ThinkingBudgets) -> i64 {
    let given = match level {
        "MINIMAL" => custom.minimal,
        "LOW" => custom.low,
        "MEDIUM" => custom.medium,
        _ => custom.high,
    };
    if let Some(budget) = given {
        return i64::try_from(budget).unwrap_or(i64::MAX);
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        "MINIMAL" => table[0],
        "LOW" => table[1],
        "MEDIUM" => table[2],
        _ => table[3],
    }
}

/// `generationConfig.thinkingConfig` for the request's level (`None` for non-reasoning models).
pub fn thinking_config(
    model: &Model,
    level: ThinkingLevel,
    budgets: &ThinkingBudgets,
) -> Result<Option<Value>, ProviderError> {
    if !model.reasoning {
        return Ok(None);
    }
    let clamped = if level == ThinkingLevel::Off { ThinkingLevel::Off } else { clamp_level(model, level) };
    if clamped == ThinkingLevel::Off {
        if !uses_thinking_level(model) {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        let fallback = clamp_level(model, ThinkingLevel::Off);
        if fallback == ThinkingLevel::Off {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        return Ok(Some(json!({"thinkingLevel": resolve_level(model, fallback)?})));
    }
    let google = resolve_level(model, clamped)?;
    Ok(Some(if uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": google})
    } else {
        json!({"includeThoughts": true, "thinkingBudget": budget(model, google, budgets)})
    }))
}

/// Thought signatures must be base64 (the API's bytes type).
fn valid_signature(sig: &str) -> bool {
    let body = sig.trim_end_matches('=');
    !sig.is_empty()
        && sig.len().is_multiple_of(4)
        && sig.len() - body.len() <= 2
        && !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn inline_data(mime: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime, "data": data}})
}

/// pi's Gemini `convertMessages` (after `transformMessages`).
pub fn convert_contents(model: &Model, llm: &[LlmMessage]) -> Vec<Value> {
    let mut contents: Vec<Value> = Vec::new();
    let with_id = requires_tool_call_id(&model.id);
    for message in llm {
        match message {
            LlmMessage::User { content: UserContent::Text(t), .. } => {
                contents.push(json!({"parts": [{"text": t}], "role": "user"}));
            }
            LlmMessage::User { content: UserContent::Blocks(blocks), .. } => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(json!({"text": t.text})),
                        ContentBlock::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
            LlmMessage::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let signature =
                    |s: &Option<String>| s.as_deref().filter(|s| same && valid_signature(s)).map(str::to_string);
                let mut parts = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text(t) => {
                            let sig = signature(&t.text_signature);
                            if t.text.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            let mut p = Map::new();
                            p.insert("text".into(), json!(t.text));
                            if let Some(s) = sig {
                                p.insert("thoughtSignature".into(), json!(s));
                            }
                            parts.push(Value::Object(p));
                        }
                        ContentBlock::Thinking(t) if same => {
                            let sig = signature(&t.thinking_signature);
                            if t.thinking.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            let mut p = Map::new();
                            p.insert("text".into(), json!(t.thinking));
                            p.insert("thought".into(), json!(true));
                            if let Some(s) = sig {
                                p.insert("thoughtSignature".into(), json!(s));
                            }
                            parts.push(Value::Object(p));
                        }
                        ContentBlock::Thinking(t) => {
                            if !t.thinking.trim().is_empty() {
                                parts.push(json!({"text": t.thinking}));
                            }
                        }
                        ContentBlock::ToolCall(c) => {
                            let mut call = Map::new();
                            let args = if c.arguments.is_null() { json!({}) } else { c.arguments.clone() };
                            call.insert("args".into(), args);
                            if with_id {
                                call.insert("id".into(), json!(c.id));
                            }
                            call.insert("name".into(), json!(c.name));
                            let mut p = Map::new();
                            p.insert("functionCall".into(), Value::Object(call));
                            if let Some(s) = signature(&c.thought_signature) {
                                p.insert("thoughtSignature".into(), json!(s));
                            }
                            parts.push(Value::Object(p));
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "model"}));
                }
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
                let text = texts.join("\n");
                let images: Vec<Value> = if model.supports_images() {
                    t.content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(i) => Some(inline_data(&i.mime_type, &i.data)),
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let value = if !text.trim().is_empty() {
                    text
                } else if !images.is_empty() {
                    "(see attached image)".to_string()
                } else {
                    String::new()
                };
                let multimodal = multimodal_function_response(&model.id);
                let mut response = Map::new();
                response.insert("name".into(), json!(t.tool_name));
                let key = if t.is_error { "error" } else { "output" };
                response.insert("response".into(), json!({ key: value }));
                if !images.is_empty() && multimodal {
                    response.insert("parts".into(), Value::Array(images.clone()));
                }
                if with_id {
                    response.insert("id".into(), json!(t.tool_call_id));
                }
                let part = json!({"functionResponse": response});
                let merge = contents.last().is_some_and(|c| {
                    c["role"] == "user"
                        && c["parts"].as_array().is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
                });
                match contents.last_mut().and_then(|c| c["parts"].as_array_mut()).filter(|_| merge) {
                    Some(parts) => parts.push(part),
                    None => contents.push(json!({"parts": [part], "role": "user"})),
                }
                if !images.is_empty() && !multimodal {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
        }
    }
    contents
}

const SUBSCHEMA_KEYS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const NAME_MAP_KEYS: [&str; 6] =
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

/// Gemini ignores `const` in `parametersJsonSchema` but honours `enum`:
/// string and number `const`s become one-value `enum`s, in every subschema.
pub fn const_as_enum(schema: &Value, name_map: bool) -> Value {
    match schema {
        Value::Array(items) => Value::Array(items.iter().map(|i| const_as_enum(i, false)).collect()),
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, v) in o {
                let converted = if name_map || SUBSCHEMA_KEYS.contains(&k.as_str()) {
                    const_as_enum(v, false)
                } else if NAME_MAP_KEYS.contains(&k.as_str()) {
                    const_as_enum(v, true)
                } else {
                    v.clone()
                };
                out.insert(k.clone(), converted);
            }
            if !name_map
                && !out.contains_key("enum")
                && let Some(c) = out.get("const").filter(|c| c.is_string() || c.is_number()).cloned()
            {
                out.remove("const");
                out.insert("enum".into(), json!([c]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `tools: [{functionDeclarations: […]}]` and whether any tool went strict
/// (Gemini 3+ validates strict schemas).
pub fn convert_tools(model: &Model, tools: &[ToolSpec]) -> (Value, bool) {
    let supported = gemini_major(&model.id).is_some_and(|v| v >= 3);
    let mut any_strict = false;
    let declarations: Vec<Value> = tools
        .iter()
        .map(|t| {
            let strict = strict_parameters(t, supported, None);
            any_strict |= strict.is_some();
            let parameters = strict.unwrap_or_else(|| t.parameters.clone());
            json!({"name": t.name, "description": t.description,
                "parametersJsonSchema": const_as_enum(&parameters, false)})
        })
        .collect();
    (json!([{"functionDeclarations": declarations}]), any_strict)
}

/// The request body, keys in the order the SDK writes them.
pub fn build_body(request: &ProviderRequest) -> Result<Value, ProviderError> {
    let model = &request.model;
    let unprepared = convert::to_llm(&request.messages);
    let max_tokens = convert::output_cap(request, &unprepared);
    let with_id = requires_tool_call_id(&model.id);
    let normalize = |id: &str| {
        if with_id {
            id.chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
                .take(64)
                .collect()
        } else {
            id.to_string()
        }
    };
    let llm = convert::transform(unprepared, model, Some(&normalize));
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(convert_contents(model, &llm)));
    if !request.system_prompt.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": request.system_prompt}], "role": "user"}));
    }
    if !request.tools.is_empty() {
        let (tools, strict) = convert_tools(model, &request.tools);
        body.insert("tools".into(), tools);
        // The caller's `toolChoice` (`none` / `any` over strict sampling, anything else `AUTO`).
        let choice = request.api_options.tool_choice.as_ref().filter(|c| super::shared::truthy(c));
        let mode = match choice.and_then(Value::as_str) {
            Some("none") => Some("NONE"),
            Some("any") => Some("ANY"),
            _ if strict => Some("VALIDATED"),
            _ => choice.map(|_| "AUTO"),
        };
        if let Some(mode) = mode {
            body.insert("toolConfig".into(), json!({"functionCallingConfig": {"mode": mode}}));
        }
    }
    let mut generation = Map::new();
    if let Some(t) = &request.api_options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(max_tokens) = max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    let thinking = match request.api_options.thinking_budget {
        // A provider-specific `stream()` call's `thinking.budgetTokens`, as given.
        Some(budget) if model.reasoning && request.thinking_level != ThinkingLevel::Off => {
            Some(json!({"includeThoughts": true, "thinkingBudget": budget}))
        }
        // A call that says nothing of thinking sends no thinking setting.
        _ if request.api_options.thinking_unsaid && request.thinking_level == ThinkingLevel::Off => None,
        _ => thinking_config(model, request.thinking_level, &request.api_options.thinking_budgets)?,
    };
    if let Some(config) = thinking {
        generation.insert("thinkingConfig".into(), config);
    }
    body.insert("generationConfig".into(), Value::Object(generation));
    Ok(Value::Object(body))
}

/// Request headers: the API key, then model and request headers.
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(key) = request.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key for provider: {}", request.model.provider),
        ));
    };
    let mut headers = vec![("x-goog-api-key".to_string(), key.to_string()), ("accept".into(), "*/*".into())];
    for (k, v) in configured_headers(request) {
        set_header(&mut headers, &k, v);
    }
    Ok(headers)
}

/// The streaming endpoint of the model under its base URL.
pub fn endpoint(model: &Model) -> String {
    format!("{}/models/{}:streamGenerateContent?alt=sse", model.base_url.trim_end_matches('/'), model.id)
}
