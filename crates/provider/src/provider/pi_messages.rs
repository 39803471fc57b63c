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
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::classify::{error_from, retry_after};
use super::driver::{Api, Call, Flow, Out, Reported, Wire, drive};
use super::http::HttpClient;
use super::lenient;
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

/// One of pi's assistant-message events, by its `type`; other types are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    TextStart(Fields),
    ThinkingStart(Fields),
    ToolcallStart(Fields),
    TextDelta(Fields),
    ThinkingDelta(Fields),
    ToolcallDelta(Fields),
    TextEnd(Fields),
    ThinkingEnd(Fields),
    ToolcallEnd(Fields),
    Done(Fields),
    Error(Fields),
    /// `start`, and any type pi may add.
    #[serde(other)]
    Other,
}

/// The fields pi's events carry (each event uses some of them).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Fields {
    /// As sent: an invalid one is shown in the error.
    #[serde(deserialize_with = "lenient::any")]
    content_index: Option<Value>,
    #[serde(deserialize_with = "lenient::text")]
    id: String,
    #[serde(deserialize_with = "lenient::text")]
    tool_name: String,
    #[serde(deserialize_with = "lenient::text")]
    delta: String,
    #[serde(deserialize_with = "lenient::string")]
    content_signature: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    redacted: Option<bool>,
    #[serde(deserialize_with = "lenient::object")]
    tool_call: ToolCall,
    #[serde(deserialize_with = "lenient::object")]
    usage: WireUsage,
    #[serde(deserialize_with = "lenient::string")]
    response_id: Option<String>,
    /// Passed on as they are.
    #[serde(deserialize_with = "lenient::any")]
    response_model: Option<Value>,
    #[serde(deserialize_with = "lenient::any")]
    provider_thinking_level: Option<Value>,
    #[serde(deserialize_with = "lenient::text")]
    reason: String,
    #[serde(deserialize_with = "lenient::string")]
    error_message: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolCall {
    /// The tool's arguments (free-form JSON).
    #[serde(deserialize_with = "lenient::any")]
    arguments: Option<Value>,
}

/// Token counts of a pi usage object.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireUsage {
    #[serde(deserialize_with = "lenient::u64")]
    input: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    output: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    cache_read: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    cache_write: Option<u64>,
    #[serde(deserialize_with = "lenient::u64")]
    total_tokens: Option<u64>,
}

fn usage_of(u: &WireUsage) -> Usage {
    Usage {
        input: u.input.unwrap_or(0),
        output: u.output.unwrap_or(0),
        cache_read: u.cache_read.unwrap_or(0),
        cache_write: u.cache_write.unwrap_or(0),
        total_tokens: u.total_tokens.unwrap_or(0),
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
    fn index(&mut self, kind: &str, fields: &Fields) -> Result<usize, ProviderError> {
        let raw = fields.content_index.as_ref();
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

    fn terminal(&mut self, fields: &mut Fields, out: &mut Out) {
        out.emit(ProviderEvent::Usage(Box::new(usage_of(&fields.usage))));
        if let Some(id) = fields.response_id.take() {
            out.emit(ProviderEvent::ResponseId(id));
        }
        let passed = [
            ("responseModel", fields.response_model.take()),
            ("providerThinkingLevel", fields.provider_thinking_level.take()),
        ];
        for (key, value) in passed {
            if let Some(value) = value {
                out.emit(ProviderEvent::MessageField { key: key.to_string(), value: Box::new(value) });
            }
        }
        self.ended = true;
    }

    fn on_value(&mut self, event: Value, out: &mut Out) -> Result<Flow, ProviderError> {
        match lenient::event(event).unwrap_or(Event::Other) {
            Event::TextStart(f) => self.start("text_start", &f, BlockKind::Text, out)?,
            Event::ThinkingStart(f) => self.start("thinking_start", &f, BlockKind::Thinking, out)?,
            Event::ToolcallStart(f) => {
                let index = self.index("toolcall_start", &f)?;
                self.tools.insert(index);
                out.emit(ProviderEvent::BlockStart {
                    index,
                    kind: BlockKind::ToolCall { id: f.id, name: f.tool_name },
                });
            }
            Event::TextDelta(f) => self.delta("text_delta", f, out)?,
            Event::ThinkingDelta(f) => self.delta("thinking_delta", f, out)?,
            Event::ToolcallDelta(f) => {
                let index = self.index("toolcall_delta", &f)?;
                self.tool_deltas.insert(index);
                out.emit(ProviderEvent::BlockDelta { index, delta: f.delta });
            }
            Event::TextEnd(f) => self.end("text_end", f, out)?,
            Event::ThinkingEnd(f) => self.end("thinking_end", f, out)?,
            Event::ToolcallEnd(f) => {
                let index = self.index("toolcall_end", &f)?;
                // Arguments sent only whole, with the end, stand as one delta.
                if self.tools.contains(&index) && !self.tool_deltas.contains(&index) {
                    let arguments = f.tool_call.arguments.unwrap_or_else(|| json!({}));
                    out.emit(ProviderEvent::BlockDelta { index, delta: arguments.to_string() });
                }
                out.emit(ProviderEvent::BlockEnd { index });
            }
            Event::Done(mut f) => {
                self.terminal(&mut f, out);
                out.emit(ProviderEvent::Stop { reason: stop_reason(&f.reason), raw: Some(f.reason) });
                return Ok(Flow::Done);
            }
            Event::Error(mut f) => {
                self.terminal(&mut f, out);
                let message = f.error_message.unwrap_or_else(|| "An unknown error occurred".to_string());
                if f.reason == "aborted" {
                    return Err(ProviderError::new(ProviderErrorKind::Aborted, message));
                }
                return Err(error_from(None, message, None));
            }
            Event::Other => {}
        }
        Ok(Flow::Continue)
    }

    fn start(&mut self, kind: &str, fields: &Fields, block: BlockKind, out: &mut Out) -> Result<(), ProviderError> {
        let index = self.index(kind, fields)?;
        out.emit(ProviderEvent::BlockStart { index, kind: block });
        Ok(())
    }

    fn delta(&mut self, kind: &str, fields: Fields, out: &mut Out) -> Result<(), ProviderError> {
        let index = self.index(kind, &fields)?;
        out.emit(ProviderEvent::BlockDelta { index, delta: fields.delta });
        Ok(())
    }

    fn end(&mut self, kind: &str, fields: Fields, out: &mut Out) -> Result<(), ProviderError> {
        let index = self.index(kind, &fields)?;
        if let Some(signature) = fields.content_signature {
            out.emit(ProviderEvent::Signature { index, signature });
        }
        if fields.redacted == Some(true) {
            out.emit(ProviderEvent::Redacted { index });
        }
        out.emit(ProviderEvent::BlockEnd { index });
        Ok(())
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
        self.on_value(event, out)
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
        let api = Api { http_error: Box::new(http_error), transport_error, reported: Reported::Every };
        drive(self.http.clone(), cancel, call, Decoder::new(&request.model.provider), api)
    }
}

#[cfg(test)]
#[path = "pi_messages/tests.rs"]
mod tests;
