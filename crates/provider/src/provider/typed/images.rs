//! Image generation over OpenRouter's Chat Completions (`openrouter-images`),
//! as pi-ai 1.6.0 sends it through the OpenAI SDK: `POST
//! {baseUrl}/chat/completions`, not streamed, one user message of text and
//! `image_url` parts, `modalities: ["image", "text"]` (or `["image"]` for
//! models without text output). The answer's text and its `data:` image URLs
//! become the output blocks. pi makes one attempt (no retries).

use serde_json::{Map, Value, json};

use super::{ABORTED, CallError, TypedCall, priced_usage};
use crate::provider::classify::openai_sdk_error;

pub const API: &str = "openrouter-images";

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The request body pi builds.
pub fn params(call: &TypedCall, context: &Value) -> Value {
    let content: Vec<Value> = context
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| match str_of(item, "type") {
            "text" => json!({"type": "text", "text": str_of(item, "text")}),
            _ => json!({"type": "image_url", "image_url": {
                "url": format!("data:{};base64,{}", str_of(item, "mimeType"), str_of(item, "data"))
            }}),
        })
        .collect();
    let text_out = call.model.get("output").and_then(Value::as_array).is_some_and(|o| o.iter().any(|m| m == "text"));
    let modalities = if text_out { json!(["image", "text"]) } else { json!(["image"]) };
    json!({
        "model": call.id(),
        "messages": [{"role": "user", "content": content}],
        "stream": false,
        "modalities": modalities,
    })
}

/// OpenRouter's usage, priced from the catalog (pi's `parseUsage` of this API).
fn usage(model: &Value, raw: &Value) -> Value {
    let n = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0).map_or(0, |n| n as u64);
    let prompt = n(raw.get("prompt_tokens"));
    let cached = n(raw.pointer("/prompt_tokens_details/cached_tokens"));
    let cache_write = n(raw.pointer("/prompt_tokens_details/cache_write_tokens"));
    let cache_read = if cache_write > 0 { cached.saturating_sub(cache_write) } else { cached };
    let input = prompt.saturating_sub(cache_read + cache_write);
    priced_usage(model, input, n(raw.get("completion_tokens")), cache_read, cache_write)
}

/// The output blocks of a Chat Completions answer: its text, then each `data:` image.
fn output_blocks(answer: &Value) -> Vec<Value> {
    let mut blocks = Vec::new();
    let Some(message) = answer.pointer("/choices/0/message") else { return blocks };
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for image in message.get("images").and_then(Value::as_array).into_iter().flatten() {
        let url = match image.get("image_url") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => str_of(other, "url"),
            None => "",
        };
        let Some(rest) = url.strip_prefix("data:") else { continue };
        let Some((mime, data)) = rest.split_once(";base64,") else { continue };
        if mime.is_empty() || data.is_empty() || mime.contains(';') {
            continue;
        }
        blocks.push(json!({"type": "image", "mimeType": mime, "data": data}));
    }
    blocks
}

/// Generate images with an OpenRouter image model.
pub async fn generate(call: &TypedCall, context: &Value) -> Value {
    let mut out = call.result_head("output", json!([]));
    if let Err(error) = run(call, context, &mut out).await {
        call.fail(&mut out, error.text(None));
    }
    Value::Object(out)
}

async fn run(call: &TypedCall, context: &Value, out: &mut Map<String, Value>) -> Result<(), CallError> {
    let Some(key) = &call.api_key else {
        return Err(CallError::plain(format!("No API key for provider: {}", call.str("provider"))));
    };
    let headers = call.request_headers(&[("authorization", format!("Bearer {key}"))]);
    let url = super::join_url(call.base_url(), "chat/completions");
    let response = call.http.post_json(&url, &headers, &params(call, context), &call.cancel).await.map_err(|e| {
        if call.cancel.is_cancelled() { CallError::plain(ABORTED) } else { CallError::plain(e.message) }
    })?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|e| CallError::plain(e.to_string()))?;
    if !(200..300).contains(&status) {
        let (message, body) = openai_sdk_error(status, &text);
        return Err(CallError { status: Some(status), body, message, ..CallError::plain("") });
    }
    let answer: Value = serde_json::from_str(&text).map_err(|e| CallError::plain(e.to_string()))?;
    if let Some(id) = answer.get("id").filter(|v| !v.is_null()) {
        out.insert("responseId".into(), id.clone());
    }
    if let Some(raw) = answer.get("usage").filter(|u| u.is_object()) {
        out.insert("usage".into(), usage(&call.model, raw));
    }
    out.insert("output".into(), Value::Array(output_blocks(&answer)));
    Ok(())
}
