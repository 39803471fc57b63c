//! The `pi-messages` wire API: pi's own message protocol, spoken by the
//! Radius gateway (and by any backend a `models.json` provider points at
//! with `"api": "pi-messages"`).
//!
//! * Request: `POST {baseUrl}/messages` with the bearer key and
//!   `{model, context: {messages}, options}`. The context is the
//!   conversation as pi's LLM messages (system messages with their sections
//!   and tools first, bash runs, summaries and custom messages as user
//!   text); the options carry the output cap, the thinking level, the cache
//!   retention (`PI_CACHE_RETENTION=long`) and the session id.
//! * Answer: SSE `data:` lines, each one of pi's assistant-message events
//!   without its `partial` (`text_*`, `thinking_*`, `toolcall_*`), ended by a
//!   `done` (reason, usage, response id) or an `error` event; a stream that
//!   ends without one fails.
//! * Errors: `<status> <status text>: <error.message or body>[ (<code>)]`.
//!
//! The backend reports usage and cost; pi-rpc keeps the token counts and
//! prices them with the model's costs, like the other APIs.

use std::collections::HashSet;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::classify::{error_from, retry_after};
use super::driver::{Api, Call, Flow, Out, Wire, drive};
use super::http::HttpClient;
use super::shared::{request_headers, set_header};
use super::sse::SseEvent;
use super::{BlockKind, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::{AgentMessage, StopReason, Usage};
use crate::model::ThinkingLevel;
use crate::provider::convert::{self, LlmMessage};

/// The `pi-messages` provider.
pub struct PiMessages {
    http: HttpClient,
}

impl PiMessages {
    pub fn new(http: HttpClient) -> Self {
        PiMessages { http }
    }
}

/// pi's text when the body ends before a `done` or `error` event.
pub fn no_terminal_event(provider: &str) -> String {
    format!("{provider} stream ended without a terminal event")
}

/// `{baseUrl}/messages`.
pub fn endpoint(base_url: &str) -> String {
    format!("{}/messages", base_url.trim_end_matches('/'))
}

/// The conversation as pi sends it: system, user, assistant and tool-result
/// messages as they are, the other kinds turned into user messages.
pub fn context_messages(messages: &[AgentMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            AgentMessage::System(_) | AgentMessage::User(_) | AgentMessage::Assistant(_) => {
                out.extend(serde_json::to_value(message).ok());
            }
            AgentMessage::ToolResult(_) => out.extend(serde_json::to_value(message).ok()),
            other => {
                for llm in convert::to_llm(std::slice::from_ref(other)) {
                    if let LlmMessage::User { content, timestamp } = llm {
                        out.push(json!({"role": "user", "content": content, "timestamp": timestamp}));
                    }
                }
            }
        }
    }
    out
}

/// The request body, keys in pi's order; unset options are left out.
pub fn build_body(request: &ProviderRequest) -> Value {
    let mut options = Map::new();
    if let Some(max) = request.max_tokens {
        options.insert("maxTokens".into(), json!(max));
    }
    if request.thinking_level != ThinkingLevel::Off {
        options.insert("reasoning".into(), json!(request.thinking_level.as_str()));
    }
    if request.env.get("PI_CACHE_RETENTION").as_deref() == Some("long") {
        options.insert("cacheRetention".into(), json!("long"));
    }
    if let Some(id) = &request.session_id {
        options.insert("sessionId".into(), json!(id));
    }
    json!({
        "model": request.model.id,
        "context": {"messages": context_messages(&request.messages)},
        "options": options,
    })
}

/// Headers: the configured ones, then the bearer key and the SSE headers,
/// then the request's own (pi's `providerHeadersToRecord` order).
pub fn build_headers(request: &ProviderRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let Some(key) = request.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(ProviderError::new(
            ProviderErrorKind::Auth,
            format!("No API key provided for provider \"{}\"", request.model.provider),
        ));
    };
    let mut headers = vec![
        ("authorization".to_string(), format!("Bearer {key}")),
        ("accept".to_string(), "text/event-stream".to_string()),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    if let Some(h) = &request.model.headers {
        for (k, v) in h {
            if let Some(s) = v.as_str() {
                set_header(&mut headers, k, s);
            }
        }
    }
    for (k, v) in request_headers(request) {
        set_header(&mut headers, &k, v);
    }
    Ok(headers)
}

/// pi's text for a non-2xx answer.
pub fn http_error_message(status: u16, body: &str) -> String {
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let error =
        serde_json::from_str::<Value>(body).ok().and_then(|v| v.get("error").filter(|e| e.is_object()).cloned());
    let text = |k: &str| error.as_ref().and_then(|e| e.get(k)).and_then(Value::as_str).map(str::to_string);
    let code = text("code").map(|c| format!(" ({c})")).unwrap_or_default();
    format!("{status} {reason}: {}{code}", text("message").unwrap_or_else(|| body.to_string()))
}

fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    error_from(Some(status), http_error_message(status, body), retry_after(headers))
}

/// A failed fetch reads `fetch failed` in pi.
fn transport_error(mut err: ProviderError) -> ProviderError {
    if err.message.starts_with("Connection error.") {
        err.message = "fetch failed".to_string();
    }
    err
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "toolUse" => StopReason::ToolUse,
        "error" => StopReason::Error,
        "aborted" => StopReason::Aborted,
        _ => StopReason::Stop,
    }
}

/// Token counts of a pi usage object.
fn usage_of(value: &Value) -> Usage {
    let n = |k: &str| value.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite"),
        total_tokens: n("totalTokens"),
        ..Usage::default()
    }
}

/// Decodes pi's events into provider events.
struct Decoder {
    provider: String,
    /// Content indexes started so far (a start must take the next one).
    blocks: usize,
    /// Tool-call blocks that had argument deltas.
    tool_deltas: HashSet<usize>,
    tools: HashSet<usize>,
    ended: bool,
}

fn invalid_index(kind: &str, index: Option<&Value>) -> ProviderError {
    let shown = index.map_or("undefined".to_string(), Value::to_string);
    error_from(None, format!("Invalid contentIndex {shown} in pi-messages {kind} event"), None)
}

impl Decoder {
    fn new(provider: &str) -> Self {
        Decoder {
            provider: provider.to_string(),
            blocks: 0,
            tool_deltas: HashSet::new(),
            tools: HashSet::new(),
            ended: false,
        }
    }

    /// The event's content index, checked as pi checks it: a start takes the
    /// next index, other events name a started block.
    fn index(&mut self, kind: &str, event: &Value) -> Result<usize, ProviderError> {
        let raw = event.get("contentIndex");
        let index = raw.and_then(Value::as_u64).map(|i| i as usize).ok_or_else(|| invalid_index(kind, raw))?;
        let starts = kind.ends_with("_start");
        let ok = if starts { index == self.blocks } else { index < self.blocks };
        if !ok {
            return Err(invalid_index(kind, raw));
        }
        if starts {
            self.blocks += 1;
        }
        Ok(index)
    }

    fn terminal(&mut self, event: &Value, out: &mut Out) {
        out.emit(ProviderEvent::Usage(usage_of(event.get("usage").unwrap_or(&Value::Null))));
        if let Some(id) = event.get("responseId").and_then(Value::as_str) {
            out.emit(ProviderEvent::ResponseId(id.to_string()));
        }
        for key in ["responseModel", "providerThinkingLevel"] {
            if let Some(value) = event.get(key) {
                out.emit(ProviderEvent::MessageField { key: key.to_string(), value: value.clone() });
            }
        }
        self.ended = true;
    }

    fn on_value(&mut self, event: &Value, out: &mut Out) -> Result<Flow, ProviderError> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let text = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        match kind {
            "start" => {}
            "text_start" | "thinking_start" => {
                let index = self.index(kind, event)?;
                let block = if kind == "text_start" { BlockKind::Text } else { BlockKind::Thinking };
                out.emit(ProviderEvent::BlockStart { index, kind: block });
            }
            "toolcall_start" => {
                let index = self.index(kind, event)?;
                self.tools.insert(index);
                out.emit(ProviderEvent::BlockStart {
                    index,
                    kind: BlockKind::ToolCall { id: text("id"), name: text("toolName") },
                });
            }
            "text_delta" | "thinking_delta" | "toolcall_delta" => {
                let index = self.index(kind, event)?;
                if kind == "toolcall_delta" {
                    self.tool_deltas.insert(index);
                }
                out.emit(ProviderEvent::BlockDelta { index, delta: text("delta") });
            }
            "text_end" | "thinking_end" => {
                let index = self.index(kind, event)?;
                if let Some(signature) = event.get("contentSignature").and_then(Value::as_str) {
                    out.emit(ProviderEvent::Signature { index, signature: signature.to_string() });
                }
                if event.get("redacted").and_then(Value::as_bool) == Some(true) {
                    out.emit(ProviderEvent::Redacted { index });
                }
                out.emit(ProviderEvent::BlockEnd { index });
            }
            "toolcall_end" => {
                let index = self.index(kind, event)?;
                // Arguments sent only whole, with the end, stand as one delta.
                if self.tools.contains(&index) && !self.tool_deltas.contains(&index) {
                    let arguments = event.pointer("/toolCall/arguments").cloned().unwrap_or_else(|| json!({}));
                    out.emit(ProviderEvent::BlockDelta { index, delta: arguments.to_string() });
                }
                out.emit(ProviderEvent::BlockEnd { index });
            }
            "done" => {
                self.terminal(event, out);
                let raw = text("reason");
                out.emit(ProviderEvent::Stop { reason: stop_reason(&raw), raw: Some(raw) });
                return Ok(Flow::Done);
            }
            "error" => {
                self.terminal(event, out);
                let message = event
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .map_or_else(|| "An unknown error occurred".to_string(), str::to_string);
                if text("reason") == "aborted" {
                    return Err(ProviderError::new(ProviderErrorKind::Aborted, message));
                }
                return Err(error_from(None, message, None));
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }
}

impl Wire for Decoder {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        let data = ev.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Flow::Continue);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| {
            let text =
                if e.is_eof() { "Unexpected end of JSON input".to_string() } else { format!("Invalid JSON: {e}") };
            error_from(None, text, None)
        })?;
        self.on_value(&event, out)
    }

    fn finish(&mut self, _out: &mut Out) -> Result<(), ProviderError> {
        if self.ended { Ok(()) } else { Err(error_from(None, no_terminal_event(&self.provider), None)) }
    }
}

impl Provider for PiMessages {
    fn api(&self) -> &'static str {
        "pi-messages"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let call = build_headers(&request)
            .map(|headers| Call::new(endpoint(&request.model.base_url), headers, build_body(&request)));
        let api = Api { http_error: Box::new(http_error), transport_error };
        drive(self.http.clone(), cancel, call, Decoder::new(&request.model.provider), api)
    }
}

#[cfg(test)]
#[path = "pi_messages/tests.rs"]
mod tests;
