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
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify::{error_from, retry_after};
use super::driver::{Api, Call, Flow, Out, Reported, Wire, drive};
use super::google_request::{build_body, build_headers, endpoint};
use super::http::HttpClient;
use super::lenient;
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
mod chunk;
use chunk::{Chunk, ErrorChunk, Part};

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

    fn on_part(&mut self, part: Part, out: &mut Out) {
        let signature = part.thought_signature.filter(|s| !s.is_empty());
        if let Some(text) = part.text {
            let kind = if part.thought == Some(true) { Current::Thinking } else { Current::Text };
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
            if let Some(sig) = &signature {
                out.emit(ProviderEvent::Signature { index, signature: sig.clone() });
            }
            out.emit(ProviderEvent::BlockDelta { index, delta: text });
        }
        if let Some(call) = part.function_call {
            self.end_current(out);
            let name = call.name;
            let id = match call.id.filter(|s| !s.is_empty()) {
                Some(id) if !self.tool_ids.contains(&id) => id,
                _ => {
                    let n = TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
                    format!("{name}_{}_{n}", chrono::Utc::now().timestamp_millis())
                }
            };
            self.tool_ids.push(id.clone());
            let index = self.start(BlockKind::ToolCall { id, name }, out);
            let args = call.args.filter(|a| !a.is_null()).map(|a| js_json(&a)).unwrap_or_else(|| "{}".to_string());
            out.emit(ProviderEvent::BlockDelta { index, delta: args });
            if let Some(sig) = signature {
                out.emit(ProviderEvent::Signature { index, signature: sig });
            }
            out.emit(ProviderEvent::BlockEnd { index });
        }
    }

    fn on_chunk(&mut self, chunk: Chunk, out: &mut Out) -> Result<(), ProviderError> {
        if !self.response_id
            && let Some(id) = chunk.response_id.filter(|s| !s.is_empty())
        {
            self.response_id = true;
            out.emit(ProviderEvent::ResponseId(id));
        }
        if let Some(candidate) = chunk.candidates.into_iter().next() {
            for part in candidate.content.parts {
                self.on_part(part, out);
            }
            if let Some(reason) = candidate.finish_reason {
                let mut mapped = map_finish_reason(&reason).map_err(|e| error_from(None, e, None))?;
                if mapped == StopReason::Stop && !self.tool_ids.is_empty() {
                    mapped = StopReason::ToolUse;
                }
                // Said at once, as pi-ai sets it when it reads it, an error
                // one without a message (it fails the call at the stream's end).
                out.emit(ProviderEvent::Stop { reason: mapped, raw: Some(reason.clone()) });
                self.finish = Some((mapped, reason));
            }
        }
        if let Some(u) = chunk.usage_metadata {
            let cached = u.cached_content_token_count.unwrap_or(0);
            let thoughts = u.thoughts_token_count.unwrap_or(0);
            let mut usage = Usage {
                input: u.prompt_token_count.unwrap_or(0).saturating_sub(cached),
                output: u.candidates_token_count.unwrap_or(0) + thoughts,
                cache_read: cached,
                cache_write: 0,
                total_tokens: u.total_token_count.unwrap_or(0),
                ..Usage::default()
            };
            usage.reasoning = Some(thoughts);
            out.emit(ProviderEvent::Usage(Box::new(usage)));
        }
        Ok(())
    }
}

/// The SDK's check of each chunk: an `error` object with an HTTP code fails the stream.
fn stream_error(v: &Value) -> Option<ProviderError> {
    if !v.is_object() {
        return None;
    }
    let error = ErrorChunk::deserialize(v).ok()?.error?;
    let code = error.code.filter(|c| (400..600).contains(c))?;
    let status = match error.status {
        Some(Value::String(s)) => s,
        None => "undefined".to_string(),
        Some(other) => js_json(&other),
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
        self.on_chunk(lenient::event(chunk).unwrap_or_default(), out)?;
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
        let api = Api { http_error: Box::new(http_error), transport_error, reported: Reported::Nothing };
        drive(self.http.clone(), cancel, call, Decoder::new(), api)
    }
}

#[cfg(test)]
mod tests;
