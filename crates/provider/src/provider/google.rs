//! The `google-generative-ai` wire API (Gemini `streamGenerateContent` with
//! `alt=sse`): sends the request built by `google_request`, decodes the
//! chunks the way pi 1.6 does, and words failures like the Google GenAI SDK.
//!
//! Consecutive text parts form one text block and consecutive `thought`
//! parts one thinking block; a switch between them, or a function call, ends
//! the current block. Each `functionCall` part is one whole tool call (start,
//! its JSON arguments, end). Thought signatures ride on any part and are kept
//! per block (the last non-empty one wins).

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify::{error_from, retry_after};
use super::driver::{Api, Call, Flow, Out, Wire, drive};
use super::google_request::{build_body, build_headers, endpoint};
use super::http::HttpClient;
use super::shared::js_json;
use super::sse::SseEvent;
use super::{BlockKind, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::{StopReason, Usage};

/// Gemini provider.
pub struct GoogleGenerativeAi {
    http: HttpClient,
}

impl GoogleGenerativeAi {
    pub fn new(http: HttpClient) -> Self {
        GoogleGenerativeAi { http }
    }
}

/// pi's text when the stream ends without a finish reason.
pub const NO_FINISH_REASON_MESSAGE: &str = "Google stream ended without a finish reason";
/// pi's text for a Vertex stream without a finish reason.
pub const VERTEX_NO_FINISH_REASON_MESSAGE: &str = "Google Vertex stream ended without a finish reason";
/// The SDK's text for data left at the end of the body without its blank line.
pub const INCOMPLETE_SEGMENT_MESSAGE: &str = "Incomplete JSON segment at the end";

/// Counter for the ids of function calls that came without one (or a repeated one).
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The Google GenAI SDK's text for a non-2xx answer: the JSON body as JSON,
/// or `{"error":{"message":<text>,"code":<status>,"status":<reason>}}`.
pub fn http_error_message(status: u16, content_type: Option<&str>, body: &str) -> String {
    if content_type.is_some_and(|c| c.contains("application/json"))
        && let Ok(v) = serde_json::from_str::<Value>(body)
    {
        return js_json(&v);
    }
    let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    js_json(&serde_json::json!({"error": {"message": body, "code": status, "status": reason}}))
}

pub(crate) fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let content_type = headers.get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    error_from(Some(status), http_error_message(status, content_type, body), retry_after(headers))
}

/// A fetch failure reads `fetch failed: <cause>` in pi's Gemini errors.
pub(crate) fn transport_error(mut err: ProviderError) -> ProviderError {
    if let Some(cause) = err.message.strip_prefix("Connection error.: ") {
        err.message = format!("fetch failed: {cause}");
    }
    err
}

/// pi's `mapStopReason` for Gemini finish reasons.
pub fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "STOP" => Ok(StopReason::Stop),
        "MAX_TOKENS" | "CONTINUATION" => Ok(StopReason::Length),
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => Ok(StopReason::Error),
        other => Err(format!("Unhandled stop reason: {other}")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Current {
    Text,
    Thinking,
}

/// Chunk-by-chunk state of one response (shared with `google-vertex`).
pub(crate) struct Decoder {
    /// The text of a stream without a finish reason.
    no_finish_message: &'static str,
    blocks: usize,
    current: Option<(usize, Current)>,
    tool_ids: Vec<String>,
    response_id: bool,
    finish: Option<(StopReason, String)>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Decoder {
            no_finish_message: NO_FINISH_REASON_MESSAGE,
            blocks: 0,
            current: None,
            tool_ids: Vec::new(),
            response_id: false,
            finish: None,
        }
    }

    /// The decoder of Vertex AI streams (the same chunks, Vertex's wording).
    pub(crate) fn vertex() -> Self {
        Decoder { no_finish_message: VERTEX_NO_FINISH_REASON_MESSAGE, ..Decoder::new() }
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

    fn on_part(&mut self, part: &Value, out: &mut Out) {
        let signature = part.get("thoughtSignature").and_then(Value::as_str).filter(|s| !s.is_empty());
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            let kind = if part.get("thought") == Some(&Value::Bool(true)) { Current::Thinking } else { Current::Text };
            let index = match self.current {
                Some((index, k)) if k == kind => index,
                _ => {
                    self.end_current(out);
                    let block = if kind == Current::Thinking { BlockKind::Thinking } else { BlockKind::Text };
                    let index = self.start(block, out);
                    self.current = Some((index, kind));
                    index
                }
            };
            if let Some(sig) = signature {
                out.emit(ProviderEvent::Signature { index, signature: sig.to_string() });
            }
            out.emit(ProviderEvent::BlockDelta { index, delta: text.to_string() });
        }
        if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
            self.end_current(out);
            let name = call.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let id = match call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(id) if !self.tool_ids.iter().any(|t| t == id) => id.to_string(),
                _ => {
                    let n = TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
                    format!("{name}_{}_{n}", chrono::Utc::now().timestamp_millis())
                }
            };
            self.tool_ids.push(id.clone());
            let index = self.start(BlockKind::ToolCall { id, name }, out);
            let args = call.get("args").filter(|a| !a.is_null()).map(js_json).unwrap_or_else(|| "{}".to_string());
            out.emit(ProviderEvent::BlockDelta { index, delta: args });
            if let Some(sig) = signature {
                out.emit(ProviderEvent::Signature { index, signature: sig.to_string() });
            }
            out.emit(ProviderEvent::BlockEnd { index });
        }
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Out) -> Result<(), ProviderError> {
        if !self.response_id
            && let Some(id) = chunk.get("responseId").and_then(Value::as_str).filter(|s| !s.is_empty())
        {
            self.response_id = true;
            out.emit(ProviderEvent::ResponseId(id.to_string()));
        }
        let candidate = chunk.get("candidates").and_then(Value::as_array).and_then(|c| c.first());
        if let Some(parts) = candidate.and_then(|c| c.pointer("/content/parts")).and_then(Value::as_array) {
            for part in parts {
                self.on_part(part, out);
            }
        }
        if let Some(reason) = candidate.and_then(|c| c.get("finishReason")).and_then(Value::as_str) {
            let mut mapped = map_finish_reason(reason).map_err(|e| error_from(None, e, None))?;
            if mapped == StopReason::Stop && !self.tool_ids.is_empty() {
                mapped = StopReason::ToolUse;
            }
            self.finish = Some((mapped, reason.to_string()));
        }
        if let Some(u) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            let num = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            let cached = num("cachedContentTokenCount");
            let thoughts = num("thoughtsTokenCount");
            let mut usage = Usage {
                input: num("promptTokenCount").saturating_sub(cached),
                output: num("candidatesTokenCount") + thoughts,
                cache_read: cached,
                cache_write: 0,
                total_tokens: num("totalTokenCount"),
                ..Usage::default()
            };
            usage.reasoning = Some(thoughts);
            out.emit(ProviderEvent::Usage(usage));
        }
        Ok(())
    }
}

/// The SDK's check of each chunk: an `error` object with an HTTP code fails the stream.
fn stream_error(v: &Value) -> Option<ProviderError> {
    let error = v.get("error").filter(|e| e.is_object())?;
    let code = error.get("code").and_then(Value::as_u64).filter(|c| (400..600).contains(c))?;
    let status = match error.get("status") {
        Some(Value::String(s)) => s.clone(),
        None => "undefined".to_string(),
        Some(other) => js_json(other),
    };
    let text = format!("got status: {status}. {}", js_json(v));
    Some(error_from(Some(code as u16), text, None))
}

/// V8's wording for the common JSON failure, else serde's.
fn json_error_text(err: &serde_json::Error) -> String {
    if err.is_eof() {
        "Unexpected end of JSON input".to_string()
    } else {
        format!("Invalid JSON in stream chunk: {err}")
    }
}

impl Wire for Decoder {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        let parsed = serde_json::from_str::<Value>(&ev.data);
        if let Some(err) = parsed.as_ref().ok().and_then(stream_error) {
            return Err(err);
        }
        if ev.unterminated {
            return Err(error_from(None, INCOMPLETE_SEGMENT_MESSAGE.to_string(), None));
        }
        let chunk = parsed.map_err(|e| error_from(None, json_error_text(&e), None))?;
        self.on_chunk(&chunk, out)?;
        Ok(Flow::Continue)
    }

    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        self.end_current(out);
        match self.finish.take() {
            None => Err(error_from(None, self.no_finish_message.to_string(), None)),
            Some((StopReason::Error, raw)) => Err(error_from(None, format!("Provider stopped with: {raw}"), None)),
            Some((reason, raw)) => {
                out.emit(ProviderEvent::Stop { reason, raw: Some(raw) });
                Ok(())
            }
        }
    }
}

impl Provider for GoogleGenerativeAi {
    fn api(&self) -> &'static str {
        "google-generative-ai"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let call = build_headers(&request)
            .and_then(|headers| Ok(Call::new(endpoint(&request.model), headers, build_body(&request)?)));
        let api = Api { http_error: Box::new(http_error), transport_error };
        drive(self.http.clone(), cancel, call, Decoder::new(), api)
    }
}

#[cfg(test)]
mod tests;
