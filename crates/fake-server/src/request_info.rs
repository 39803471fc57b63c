//! The request facts a streamed rendering depends on, read the same way for
//! every format but OpenAI Chat Completions (which also reads `stream_options`).

use serde_json::Value;

/// The model asked for (`fake-model` when the body names none) and the
/// prompt's size in tokens: the JSON text of the request's prompt fields
/// over 4, used when the reply scripts no usage.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub model: String,
    pub prompt_estimate: u64,
}

impl RequestInfo {
    /// Read a request body whose prompt is in the fields `prompt` (for
    /// example `["messages", "system"]`).
    pub fn of(body: &Value, prompt: &[&str]) -> Self {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_string();
        let size: u64 = prompt.iter().filter_map(|f| body.get(*f)).map(|v| v.to_string().len() as u64).sum();
        RequestInfo { model, prompt_estimate: size.div_ceil(4) }
    }
}
