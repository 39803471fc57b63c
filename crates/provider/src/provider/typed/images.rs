//! Image generation over OpenRouter's Chat Completions (`openrouter-images`),
//! as pi-ai 1.6.0 sends it through the OpenAI SDK: `POST
//! {baseUrl}/chat/completions`, not streamed, one user message of text and
//! `image_url` parts, `modalities: ["image", "text"]` (or `["image"]` for
//! models without text output). The answer's text and its `data:` image URLs
//! become the output blocks. pi makes one attempt (no retries).

use serde_json::{Map, Value, json};

use super::wire::{Choice, Cost, ImagesContext, ImagesOutput, ImagesUsage};
use super::{ABORTED, CallError, TypedCall, priced_usage};
use crate::provider::classify::openai_sdk_error;
use crate::provider::lenient;

pub const API: &str = "openrouter-images";

/// The request body pi builds.
pub fn params(call: &TypedCall, context: &Value) -> Value {
    let context: ImagesContext = lenient::event_ref(context).unwrap_or_default();
    let content: Vec<Value> = context
        .input
        .iter()
        .map(|item| match item.kind.as_str() {
            "text" => json!({"type": "text", "text": item.text}),
            _ => json!({"type": "image_url", "image_url": {
                "url": format!("data:{};base64,{}", item.mime_type, item.data)
            }}),
        })
        .collect();
    let entry = call.entry();
    let modalities = if entry.output.iter().any(|m| m == "text") { json!(["image", "text"]) } else { json!(["image"]) };
    json!({
        "model": entry.id,
        "messages": [{"role": "user", "content": content}],
        "stream": false,
        "modalities": modalities,
    })
}

/// OpenRouter's usage, priced from the catalog (pi's `parseUsage` of this API).
fn usage(cost: &Cost, raw: &ImagesUsage) -> Value {
    let n = |v: Option<f64>| v.filter(|n| n.is_finite() && *n > 0.0).map_or(0, |n| n as u64);
    let prompt = n(raw.prompt_tokens);
    let cached = n(raw.prompt_tokens_details.cached_tokens);
    let cache_write = n(raw.prompt_tokens_details.cache_write_tokens);
    let cache_read = if cache_write > 0 { cached.saturating_sub(cache_write) } else { cached };
    let input = prompt.saturating_sub(cache_read + cache_write);
    priced_usage(cost, input, n(raw.completion_tokens), cache_read, cache_write)
}

/// The output blocks of a Chat Completions answer: its text, then each `data:` image.
fn output_blocks(choice: Option<&Choice>) -> Vec<Value> {
    let mut blocks = Vec::new();
    let Some(message) = choice.map(|c| &c.message) else { return blocks };
    if let Some(text) = message.content.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for image in &message.images {
        let Some(rest) = image.image_url.strip_prefix("data:") else { continue };
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
    let entry = call.entry();
    let Some(key) = &call.api_key else {
        return Err(CallError::plain(format!("No API key for provider: {}", entry.provider)));
    };
    let headers = call.request_headers(&[("authorization", format!("Bearer {key}"))]);
    let url = super::join_url(&entry.base_url, "chat/completions");
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
    let answer: ImagesOutput = lenient::event(answer).unwrap_or_default();
    if let Some(id) = answer.id.filter(|v| !v.is_null()) {
        out.insert("responseId".into(), id);
    }
    if let Some(raw) = &answer.usage {
        out.insert("usage".into(), usage(&call.entry().cost, raw));
    }
    out.insert("output".into(), Value::Array(output_blocks(answer.choices.as_ref())));
    Ok(())
}
