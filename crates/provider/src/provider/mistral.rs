//! The `mistral-conversations` wire API (Mistral's chat completions stream,
//! as pi 1.6 speaks it without the Mistral SDK): sends the request built by
//! `mistral_request`, decodes the chunks like pi, and words failures like pi
//! (`Mistral API error (<status>): <body>`).
//!
//! Text and thinking chunks share one current block (a switch ends it);
//! tool calls are keyed by their stream index and all end after the body.

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify::{MAX_ERROR_BODY_CHARS, error_from, retry_after, truncate_error_text};
use super::driver::{Api, Call, Flow, Out, Reported, Wire, drive};
use super::http::HttpClient;
use super::lenient;
use super::mistral_request::{build_body, build_headers, derive_tool_call_id, endpoint};
use super::shared::js_json;
use super::sse::SseEvent;
use super::{BlockKind, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::{StopReason, Usage};

mod chunk;
use chunk::{Choice, Chunk, ChunkUsage, Content};

/// Mistral provider.
pub struct MistralConversations {
    http: HttpClient,
}

impl MistralConversations {
    pub fn new(http: HttpClient) -> Self {
        MistralConversations { http }
    }
}

/// pi's text when the stream ends without a finish reason.
pub const NO_FINISH_REASON_MESSAGE: &str = "Mistral stream ended without a finish reason";
/// pi's text for a chunk that is not an object with `choices`.
pub const INVALID_EVENT_MESSAGE: &str = "Invalid Mistral streaming event";

/// pi's text for a non-2xx answer.
pub fn http_error_message(status: u16, body: &str) -> String {
    let body = body.trim();
    if !body.is_empty() {
        return format!("Mistral API error ({status}): {}", truncate_error_text(body, MAX_ERROR_BODY_CHARS));
    }
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason());
    let reason = reason.map_or_else(|| format!("Request failed with status {status}"), str::to_string);
    format!("Mistral API error ({status}): {reason}")
}

fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    error_from(Some(status), http_error_message(status, body), retry_after(headers))
}

/// A failed fetch reads just `fetch failed` in pi's Mistral errors.
fn transport_error(mut err: ProviderError) -> ProviderError {
    if err.message.starts_with("Connection error.") {
        err.message = "fetch failed".to_string();
    }
    err
}

/// pi's `mapChatStopReason`.
pub fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "stop" => Ok(StopReason::Stop),
        "length" | "model_length" => Ok(StopReason::Length),
        "tool_calls" => Ok(StopReason::ToolUse),
        // Mistral reports transient server failures this way; the wording makes it retryable.
        "error" => Err("Provider stopped with: error (server error)".to_string()),
        other => Err(format!("Provider stopped with: {other}")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Current {
    Text,
    Thinking,
}

struct Decoder {
    blocks: usize,
    current: Option<(usize, Current)>,
    /// Tool-call blocks by stream key (index, else id), in start order.
    tools: HashMap<String, usize>,
    tool_order: Vec<usize>,
    response_id: bool,
    finish: Option<(Result<StopReason, String>, String)>,
}

impl Decoder {
    fn new() -> Self {
        Decoder {
            blocks: 0,
            current: None,
            tools: HashMap::new(),
            tool_order: Vec::new(),
            response_id: false,
            finish: None,
        }
    }

    fn start(&mut self, kind: BlockKind, out: &mut Out) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        out.emit(ProviderEvent::BlockStart { index, kind });
        index
    }

    fn end_current(&mut self, out: &mut Out) {
        if let Some((index, _)) = self.current.take() {
            out.emit(ProviderEvent::BlockEnd { index });
        }
    }

    fn append(&mut self, kind: Current, text: String, out: &mut Out) {
        if text.is_empty() {
            return;
        }
        let index = match self.current {
            Some((i, k)) if k == kind => i,
            _ => {
                self.end_current(out);
                let block = if kind == Current::Text { BlockKind::Text } else { BlockKind::Thinking };
                let i = self.start(block, out);
                self.current = Some((i, kind));
                i
            }
        };
        out.emit(ProviderEvent::BlockDelta { index, delta: text });
    }

    fn on_usage(&self, u: &ChunkUsage, out: &mut Out) {
        let prompt = u.counts.prompt_tokens.unwrap_or(0);
        let cached = u.cached().unwrap_or(0).min(prompt);
        let input = prompt - cached;
        let output = u.counts.completion_tokens.unwrap_or(0);
        let total = u.total_tokens.filter(|t| *t > 0).unwrap_or(input + output + cached);
        out.emit(ProviderEvent::Usage(Box::new(Usage {
            input,
            output,
            cache_read: cached,
            cache_write: 0,
            total_tokens: total,
            ..Usage::default()
        })));
    }

    fn on_chunk(&mut self, chunk: Chunk, choices: Vec<Choice>, out: &mut Out) {
        if !self.response_id
            && let Some(id) = chunk.id.filter(|s| !s.is_empty())
        {
            self.response_id = true;
            out.emit(ProviderEvent::ResponseId(id));
        }
        if let Some(u) = &chunk.usage {
            self.on_usage(u, out);
        }
        let Some(choice) = choices.into_iter().next() else { return };
        if let Some(reason) = choice.finish_reason {
            let mapped = map_finish_reason(&reason);
            // Said at once, as pi-ai sets it when it reads it, an error one
            // with its message (it fails the call at the stream's end).
            out.emit(ProviderEvent::stop_read(mapped.clone().map_err(Some), Some(reason.clone())));
            self.finish = Some((mapped, reason));
        }
        for content in choice.delta.content {
            match content {
                Content::Text(text) => self.append(Current::Text, text, out),
                Content::Thinking(text) => self.append(Current::Thinking, text, out),
            }
        }
        for call in choice.delta.tool_calls {
            self.end_current(out);
            let stream_index = call.index;
            let id = match call.id.filter(|s| !s.is_empty() && s != "null") {
                Some(id) => id,
                None => derive_tool_call_id(&format!("toolcall:{}", stream_index.unwrap_or(0)), 0),
            };
            let key = stream_index.map_or_else(|| id.clone(), |i| i.to_string());
            let index = match self.tools.get(&key) {
                Some(i) => *i,
                None => {
                    let i = self.start(BlockKind::ToolCall { id, name: call.function.name }, out);
                    self.tools.insert(key, i);
                    self.tool_order.push(i);
                    i
                }
            };
            let args = match call.function.arguments {
                Some(Value::String(s)) => s,
                Some(v) if !v.is_null() => js_json(&v),
                _ => "{}".to_string(),
            };
            out.emit(ProviderEvent::BlockDelta { index, delta: args });
        }
    }
}

impl Wire for Decoder {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            let text =
                if e.is_eof() { "Unexpected end of JSON input".to_string() } else { format!("Invalid JSON: {e}") };
            error_from(None, text, None)
        })?;
        let mut chunk: Chunk = lenient::event(chunk).unwrap_or_default();
        let Some(choices) = chunk.choices.take() else {
            return Err(error_from(None, INVALID_EVENT_MESSAGE.to_string(), None));
        };
        self.on_chunk(chunk, choices, out);
        Ok(Flow::Continue)
    }

    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        self.end_current(out);
        for index in std::mem::take(&mut self.tool_order) {
            out.emit(ProviderEvent::BlockEnd { index });
        }
        match self.finish.take() {
            None => Err(error_from(None, NO_FINISH_REASON_MESSAGE.to_string(), None)),
            Some((Err(text), _)) => Err(error_from(None, text, None)),
            Some((Ok(reason), raw)) => {
                out.emit(ProviderEvent::Stop { reason, raw: Some(raw) });
                Ok(())
            }
        }
    }
}

impl Provider for MistralConversations {
    fn api(&self) -> &'static str {
        "mistral-conversations"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let call =
            build_headers(&request).map(|headers| Call::new(endpoint(&request.model), headers, build_body(&request)));
        let api = Api { http_error: Box::new(http_error), transport_error, reported: Reported::Every };
        drive(self.http.clone(), cancel, call, Decoder::new(), api)
    }
}

#[cfg(test)]
mod tests;
