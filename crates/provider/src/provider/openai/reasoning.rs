//! Extras of `openai-completions` that pi 1.6 applies per provider: OpenRouter
//! `reasoning_details` (merged while streaming, replayed from the thinking
//! signature), chat-template thinking values (`chatTemplateKwargs` /
//! `chatTemplateArgs`), the thinking token budget field, and Anthropic-style
//! `cache_control` markers for Claude models behind OpenRouter.

use serde_json::{Map, Value, json};

use crate::model::{Model, ThinkingBudgets, ThinkingLevel};
use crate::provider::shared::{budget_within, thinking_budget};

fn common_fields_valid(d: &Map<String, Value>) -> bool {
    d.get("id").is_none_or(|v| v.is_null() || v.is_string())
        && d.get("format").is_none_or(Value::is_string)
        && d.get("index").is_none_or(Value::is_number)
}

/// pi's `isOpenAIReasoningDetail`: a summary, encrypted or text detail.
pub fn is_reasoning_detail(v: &Value) -> bool {
    let Some(d) = v.as_object().filter(|d| common_fields_valid(d)) else { return false };
    match d.get("type").and_then(Value::as_str) {
        Some("reasoning.summary") => d.get("summary").is_some_and(Value::is_string),
        Some("reasoning.encrypted") => d.get("data").is_some_and(Value::is_string),
        Some("reasoning.text") => {
            d.get("text").is_some_and(Value::is_string)
                && d.get("signature").is_none_or(|s| s.is_null() || s.is_string())
        }
        _ => false,
    }
}

fn concat(target: &mut Map<String, Value>, key: &str, more: Option<&Value>) {
    let add = more.and_then(Value::as_str).unwrap_or("");
    let joined = format!("{}{add}", target.get(key).and_then(Value::as_str).unwrap_or(""));
    target.insert(key.into(), json!(joined));
}

fn fill_missing(target: &mut Map<String, Value>, source: &Map<String, Value>) {
    for key in ["id", "index"] {
        if target.get(key).is_none_or(Value::is_null)
            && let Some(v) = source.get(key)
        {
            target.insert(key.into(), v.clone());
        }
    }
    let empty_format = target.get("format").is_none_or(|f| f.as_str().is_none_or(str::is_empty) || f.is_null());
    if empty_format && let Some(v) = source.get("format") {
        target.insert("format".into(), v.clone());
    }
}

/// Add a streamed detail: consecutive text (or summary) deltas merge into one entry.
pub fn append_reasoning_detail(details: &mut Vec<Value>, detail: &Value) {
    let Some(incoming) = detail.as_object() else { return };
    let kind = incoming.get("type").and_then(Value::as_str);
    if let Some(last) = details.last_mut().and_then(Value::as_object_mut) {
        let last_kind = last.get("type").and_then(Value::as_str).map(str::to_string);
        match (kind, last_kind.as_deref()) {
            (Some("reasoning.text"), Some("reasoning.text")) => {
                concat(last, "text", incoming.get("text"));
                let no_signature = last.get("signature").is_none_or(|s| s.as_str().is_none_or(str::is_empty));
                if no_signature && let Some(s) = incoming.get("signature") {
                    last.insert("signature".into(), s.clone());
                }
                fill_missing(last, incoming);
                return;
            }
            (Some("reasoning.summary"), Some("reasoning.summary")) => {
                concat(last, "summary", incoming.get("summary"));
                fill_missing(last, incoming);
                return;
            }
            _ => {}
        }
    }
    details.push(detail.clone());
}

/// Reasoning details stored in a thinking signature (a non-empty array of details).
pub fn parse_reasoning_details(signature: Option<&str>) -> Option<Vec<Value>> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    let list = parsed.as_array()?;
    (!list.is_empty() && list.iter().all(is_reasoning_detail)).then(|| list.clone())
}

/// An encrypted detail stored in a tool call's signature by older pi versions.
pub fn parse_legacy_encrypted(signature: Option<&str>) -> Option<Value> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    let ok = is_reasoning_detail(&parsed)
        && parsed["type"] == "reasoning.encrypted"
        && parsed.get("id").and_then(Value::as_str).is_some_and(|s| !s.is_empty())
        && parsed.get("data").and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    ok.then_some(parsed)
}

/// The thinking budget sent in the budget field: the level's budget (the
/// caller's `thinkingBudgets`, else pi's), leaving room for an answer under
/// the output cap; `None` when thinking is off or nothing would be left.
pub fn clamped_thinking_budget(
    model: &Model,
    effort: Option<ThinkingLevel>,
    custom: &ThinkingBudgets,
    ceiling: u64,
) -> Option<u64> {
    let level = effort.filter(|_| model.reasoning)?;
    Some(budget_within(thinking_budget(level, custom), ceiling)).filter(|b| *b > 0)
}

/// Resolve `chatTemplateKwargs` / `chatTemplateArgs` values: literals stay,
/// `{"$var": "thinking.enabled"}` / `{"$var": "thinking.budget"}` become the
/// current values, other objects become the level's mapped value (or the
/// level), and `omitWhenOff` objects are left out when thinking is off.
pub fn chat_template_values(
    model: &Model,
    effort: Option<ThinkingLevel>,
    values: &Map<String, Value>,
    budget: Option<u64>,
) -> Option<Value> {
    let mut out = Map::new();
    for (key, value) in values {
        let resolved = match value {
            Value::Object(spec) => {
                if effort.is_none() && spec.get("omitWhenOff").is_some_and(|v| v.as_bool() == Some(true)) {
                    None
                } else {
                    match spec.get("$var").and_then(Value::as_str) {
                        Some("thinking.enabled") => Some(json!(effort.is_some())),
                        Some("thinking.budget") => budget.map(|b| json!(b)),
                        _ => {
                            let level = effort.unwrap_or(ThinkingLevel::Off);
                            let mapped = model.thinking_level_map.as_ref().and_then(|m| m.get(level.as_str()));
                            match mapped {
                                None => effort.map(|l| json!(l.as_str())),
                                Some(Value::String(s)) => Some(json!(s)),
                                Some(_) => None,
                            }
                        }
                    }
                }
            }
            literal => Some(literal.clone()),
        };
        if let Some(v) = resolved {
            out.insert(key.clone(), v);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Put `cache_control` on the last text part of a message (strings become one text part).
fn mark_text(message: &mut Value, cache_control: &Value) -> bool {
    match message.get_mut("content") {
        Some(Value::String(s)) if !s.is_empty() => {
            let text = std::mem::take(s);
            message["content"] = json!([{"type": "text", "text": text, "cache_control": cache_control}]);
            true
        }
        Some(Value::Array(parts)) => {
            match parts.iter_mut().rev().find(|p| p.get("type").and_then(Value::as_str) == Some("text")) {
                Some(Value::Object(part)) => {
                    part.insert("cache_control".into(), cache_control.clone());
                    true
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Anthropic-style cache markers: the system prompt, the last tool, and the
/// last user/assistant/tool message that has text.
pub fn apply_cache_control(messages: &mut [Value], tools: Option<&mut Vec<Value>>, cache_control: &Value) {
    if let Some(system) =
        messages.iter_mut().find(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")))
    {
        mark_text(system, cache_control);
    }
    if let Some(Value::Object(last)) = tools.and_then(|t| t.last_mut()) {
        last.insert("cache_control".into(), cache_control.clone());
    }
    for message in messages.iter_mut().rev() {
        let role = message.get("role").and_then(Value::as_str);
        if matches!(role, Some("user" | "assistant" | "tool")) && mark_text(message, cache_control) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_details_merge_like_pi() {
        let mut details = Vec::new();
        append_reasoning_detail(&mut details, &json!({"type": "reasoning.text", "text": "a", "index": 0}));
        append_reasoning_detail(
            &mut details,
            &json!({"type": "reasoning.text", "text": "b", "signature": "s", "id": "r1"}),
        );
        append_reasoning_detail(&mut details, &json!({"type": "reasoning.encrypted", "data": "xyz", "id": "r2"}));
        assert_eq!(
            Value::Array(details.clone()),
            json!([{"type": "reasoning.text", "text": "ab", "index": 0, "signature": "s", "id": "r1"},
                {"type": "reasoning.encrypted", "data": "xyz", "id": "r2"}])
        );
        let sig = Value::Array(details).to_string();
        assert!(parse_reasoning_details(Some(&sig)).is_some());
        assert!(parse_reasoning_details(Some("reasoning_content")).is_none());
        assert!(parse_legacy_encrypted(Some(r#"{"type":"reasoning.encrypted","id":"e","data":"d"}"#)).is_some());
        assert!(!is_reasoning_detail(&json!({"type": "reasoning.summary", "summary": 3})));
    }

    #[test]
    fn chat_template_values_resolve() {
        let mut m = crate::provider::convert::tests::model(false);
        m.reasoning = true;
        m.thinking_level_map = json!({"high": "deep", "off": null}).as_object().cloned();
        let values = json!({"enable_thinking": {"$var": "thinking.enabled"}, "budget": {"$var": "thinking.budget"},
            "effort": {"level": true}, "fixed": 1, "only_on": {"$var": "thinking.enabled", "omitWhenOff": true}});
        let values = values.as_object().unwrap();
        assert_eq!(
            chat_template_values(&m, Some(ThinkingLevel::High), values, Some(5000)),
            Some(json!({"enable_thinking": true, "budget": 5000, "effort": "deep", "fixed": 1, "only_on": true}))
        );
        assert_eq!(chat_template_values(&m, None, values, None), Some(json!({"enable_thinking": false, "fixed": 1})));
    }

    #[test]
    fn cache_markers_go_where_pi_puts_them() {
        let mut messages = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "image_url"}]}),
            json!({"role": "assistant", "content": null, "tool_calls": []}),
        ];
        let mut tools = vec![json!({"type": "function"}), json!({"type": "function"})];
        let cc = json!({"type": "ephemeral"});
        apply_cache_control(&mut messages, Some(&mut tools), &cc);
        assert_eq!(messages[0]["content"], json!([{"type": "text", "text": "sys", "cache_control": cc}]));
        assert_eq!(messages[1]["content"][0]["cache_control"], cc);
        assert_eq!(tools[1]["cache_control"], cc);
        assert!(tools[0].get("cache_control").is_none());
    }
}
