//! The `ConverseStream` answer: event-stream messages (see
//! [`super::eventstream`]) turned into provider events the way pi 1.6.0
//! reads them, and Bedrock's errors worded as pi words them
//! (`Throttling error: …`, `Validation error: …`, the data-retention hint).

use std::collections::HashMap;

use base64::Engine;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::super::classify::{error_from, retry_after};
use super::super::driver::{Flow, Out, Wire};
use super::super::sse::SseEvent;
use super::super::{BlockKind, ProviderError, ProviderEvent};
use super::events::{AwsError, BlockDelta, BlockStart, BlockStop, MessageStart, MessageStop, Metadata};
use super::eventstream::EXCEPTION;
use crate::message::{StopReason, Usage};
use crate::provider::lenient;

const REDACTED_PLACEHOLDER: &str = "[Reasoning redacted]";
const DATA_RETENTION_DOCS: &str = "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html";

/// pi's readable prefix of a Bedrock exception name (kept for the retry and
/// overflow tests that match on the text), else the name itself.
fn prefix(name: &str) -> &str {
    match name {
        "InternalServerException" => "Internal server error",
        "ModelStreamErrorException" => "Model stream error",
        "ValidationException" => "Validation error",
        "ThrottlingException" => "Throttling error",
        "ServiceUnavailableException" => "Service unavailable",
        other => other,
    }
}

fn with_hint(core: String) -> String {
    if core.to_lowercase().contains("data retention mode") {
        format!("{core} See {DATA_RETENTION_DOCS} for supported data retention modes.")
    } else {
        core
    }
}

/// The message of an AWS JSON error payload (`message` or `Message`).
fn payload_message(payload: &str) -> Option<String> {
    let error = AwsError::parse(payload)?;
    error.message.or(error.message_capital)
}

/// A non-2xx answer: `{prefix}: {message}` for a modelled AWS error (named
/// by `x-amzn-errortype` or the body's `__type`), else `{status}: {body}`.
pub fn http_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let header_type = headers.get("x-amzn-errortype").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body_type = AwsError::parse(body).and_then(|e| e.kind.or(e.code));
    let name = header_type
        .or(body_type)
        .map(|t| t.split(':').next().unwrap_or_default().rsplit('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty());
    let message = match (name, payload_message(body)) {
        (Some(name), Some(message)) => format!("{}: {}", prefix(&name), with_hint(message)),
        (Some(name), None) if !body.trim().is_empty() => {
            format!("{}: {}", prefix(&name), with_hint(format!("{status}: {body}")))
        }
        _ => with_hint(format!("{status}: {body}")),
    };
    error_from(Some(status), message, retry_after(headers))
}

/// An exception sent inside the stream.
fn stream_error(name: &str, payload: &str) -> ProviderError {
    let message = payload_message(payload).unwrap_or_else(|| payload.to_string());
    error_from(None, format!("{}: {}", prefix(name), with_hint(message)), None)
}

/// A transport failure before the answer: the SDK's text.
pub fn transport_error(err: ProviderError) -> ProviderError {
    err
}

/// pi's `mapStopReason`.
fn stop_reason(raw: &str) -> Result<StopReason, String> {
    match raw {
        "end_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" | "model_context_window_exceeded" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        other => Err(format!("Provider stopped with: {other}")),
    }
}

/// The kind of a block that is open, by Bedrock's `contentBlockIndex`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Tool,
}

#[derive(Default)]
struct OpenBlock {
    kind: Option<Open>,
    signature: String,
    redacted: Option<Vec<u8>>,
}

/// Decoder of one `ConverseStream` answer.
#[derive(Default)]
pub struct Decoder {
    open: HashMap<usize, OpenBlock>,
    /// Bedrock's stop reason (from `messageStop`), reported after `metadata`.
    stop: Option<String>,
    started: bool,
}

impl Decoder {
    fn start(&mut self, index: usize, kind: Open, block: BlockKind, out: &mut Out) {
        self.open.insert(index, OpenBlock { kind: Some(kind), ..OpenBlock::default() });
        out.emit(ProviderEvent::BlockStart { index, kind: block });
    }

    fn kind(&self, index: usize) -> Option<Open> {
        self.open.get(&index).and_then(|b| b.kind)
    }

    fn close(&mut self, index: usize, out: &mut Out) {
        let Some(block) = self.open.remove(&index) else { return };
        if let Some(bytes) = block.redacted {
            let signature = base64::engine::general_purpose::STANDARD.encode(bytes);
            out.emit(ProviderEvent::Signature { index, signature });
        }
        out.emit(ProviderEvent::BlockEnd { index });
    }

    fn delta(&mut self, event: BlockDelta, out: &mut Out) {
        let index = event.content_block_index.unwrap_or(0) as usize;
        let Some(delta) = event.delta else { return };
        if let Some(text) = delta.text {
            if self.kind(index).is_none() {
                self.start(index, Open::Text, BlockKind::Text, out);
            }
            if self.kind(index) == Some(Open::Text) {
                out.emit(ProviderEvent::BlockDelta { index, delta: text });
            }
        } else if let Some(tool) = delta.tool_use {
            if self.kind(index) == Some(Open::Tool) {
                out.emit(ProviderEvent::BlockDelta { index, delta: tool.input });
            }
        } else if let Some(reasoning) = delta.reasoning_content {
            if self.kind(index).is_none() {
                self.start(index, Open::Thinking, BlockKind::Thinking, out);
                // pi-ai's thinking block has its (empty) signature from its start.
                out.emit(ProviderEvent::Signature { index, signature: String::new() });
            }
            if self.kind(index) != Some(Open::Thinking) {
                return;
            }
            if let Some(text) = reasoning.text.filter(|t| !t.is_empty()) {
                out.emit(ProviderEvent::BlockDelta { index, delta: text });
            }
            let Some(block) = self.open.get_mut(&index) else { return };
            if let Some(signature) = reasoning.signature.filter(|s| !s.is_empty())
                && block.redacted.is_none()
            {
                block.signature.push_str(&signature);
                out.emit(ProviderEvent::Signature { index, signature: block.signature.clone() });
            }
            let redacted = reasoning
                .redacted_content
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .filter(|b| !b.is_empty());
            if let Some(bytes) = redacted {
                if block.redacted.is_none() {
                    block.redacted = Some(Vec::new());
                    out.emit(ProviderEvent::BlockDelta { index, delta: REDACTED_PLACEHOLDER.to_string() });
                    out.emit(ProviderEvent::Redacted { index });
                }
                if let Some(all) = block.redacted.as_mut() {
                    all.extend(bytes);
                }
            }
        }
    }

    fn usage(event: Metadata, out: &mut Out) {
        let Some(u) = event.usage else { return };
        let mut usage = Usage {
            input: u.input_tokens.unwrap_or(0),
            output: u.output_tokens.unwrap_or(0),
            cache_read: u.cache_read_input_tokens.unwrap_or(0),
            cache_write: u.cache_write_input_tokens.unwrap_or(0),
            ..Usage::default()
        };
        usage.total_tokens = match u.total_tokens.unwrap_or(0) {
            0 => usage.input + usage.output,
            total => total,
        };
        if let Some(details) = u.cache_details {
            let one_hour: u64 =
                details.iter().filter(|d| d.ttl.as_deref() == Some("1h")).map(|d| d.input_tokens.unwrap_or(0)).sum();
            usage.extra.insert("cacheWrite1h".into(), one_hour.into());
        }
        out.emit(ProviderEvent::Usage(Box::new(usage)));
    }
}

/// The event's payload read as `T` (`T::default()` when it is not a JSON object).
fn read<T: serde::de::DeserializeOwned + Default>(data: &str) -> T {
    serde_json::from_str::<Value>(data).ok().and_then(lenient::event).unwrap_or_default()
}

impl Wire for Decoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        if event.id.as_deref() == Some(EXCEPTION) {
            return Err(stream_error(&event.event, &event.data));
        }
        let data = event.data.as_str();
        match event.event.as_str() {
            "messageStart" => {
                if read::<MessageStart>(data).role.is_some_and(|r| r != "assistant") {
                    return Err(error_from(
                        None,
                        "Unexpected assistant message start but got user message start instead".into(),
                        None,
                    ));
                }
                self.started = true;
            }
            "contentBlockStart" => {
                let start: BlockStart = read(data);
                let index = start.content_block_index.unwrap_or(0) as usize;
                if let Some(tool) = start.start.tool_use {
                    let block = BlockKind::ToolCall { id: tool.tool_use_id, name: tool.name };
                    self.start(index, Open::Tool, block, out);
                }
            }
            "contentBlockDelta" => self.delta(read(data), out),
            "contentBlockStop" => {
                let index = read::<BlockStop>(data).content_block_index.unwrap_or(0) as usize;
                self.close(index, out);
            }
            "messageStop" => {
                let raw = read::<MessageStop>(data).stop_reason;
                // Said at once, as pi-ai sets it when it reads it, an error
                // one with its message (it fails the call at the stream's end).
                out.emit(ProviderEvent::stop_read(stop_reason(&raw).map_err(Some), Some(raw.clone())));
                self.stop = Some(raw);
            }
            "metadata" => Self::usage(read(data), out),
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        let mut open: Vec<usize> = self.open.keys().copied().collect();
        open.sort_unstable();
        for index in open {
            self.close(index, out);
        }
        let Some(raw) = self.stop.take() else {
            return Err(error_from(None, "Bedrock stream ended without a stop reason".into(), None));
        };
        match stop_reason(&raw) {
            Ok(reason) => {
                out.emit(ProviderEvent::Stop { reason, raw: Some(raw) });
                Ok(())
            }
            Err(message) => Err(error_from(None, message, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: Value) -> SseEvent {
        SseEvent { event: name.into(), data: data.to_string(), ..SseEvent::default() }
    }

    fn run(events: &[SseEvent]) -> (Vec<ProviderEvent>, Option<ProviderError>) {
        let mut decoder = Decoder::default();
        let mut out = Out::default();
        let mut error = None;
        for e in events {
            if let Err(err) = decoder.on_event(e, &mut out) {
                error = Some(err);
                break;
            }
        }
        if error.is_none() {
            error = decoder.finish(&mut out).err();
        }
        (out.take().into_iter().filter_map(Result::ok).collect(), error)
    }

    #[test]
    fn text_thinking_and_tool_calls() {
        let (events, error) = run(&[
            ev("messageStart", serde_json::json!({"role": "assistant"})),
            ev(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
            ),
            ev(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}}),
            ),
            ev("contentBlockStop", serde_json::json!({"contentBlockIndex": 0})),
            ev("contentBlockDelta", serde_json::json!({"contentBlockIndex": 1, "delta": {"text": "Hi"}})),
            ev("contentBlockStop", serde_json::json!({"contentBlockIndex": 1})),
            ev(
                "contentBlockStart",
                serde_json::json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "bash"}}}),
            ),
            ev(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"a\":1}"}}}),
            ),
            ev("contentBlockStop", serde_json::json!({"contentBlockIndex": 2})),
            ev("messageStop", serde_json::json!({"stopReason": "tool_use"})),
            ev("metadata", serde_json::json!({"usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}})),
        ]);
        assert!(error.is_none(), "{error:?}");
        assert!(events.contains(&ProviderEvent::BlockStart { index: 0, kind: BlockKind::Thinking }));
        assert!(events.contains(&ProviderEvent::Signature { index: 0, signature: "sig".into() }));
        assert!(events.contains(&ProviderEvent::BlockDelta { index: 1, delta: "Hi".into() }));
        assert!(events.contains(&ProviderEvent::BlockStart {
            index: 2,
            kind: BlockKind::ToolCall { id: "t1".into(), name: "bash".into() }
        }));
        assert!(matches!(events.last(), Some(ProviderEvent::Stop { reason: StopReason::ToolUse, .. })));
        assert!(events.iter().any(|e| matches!(e, ProviderEvent::Usage(u) if u.total_tokens == 12)));
    }

    #[test]
    fn redacted_reasoning_is_kept_as_base64() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let (events, _) = run(&[
            ev(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": b64(b"ab")}}}),
            ),
            ev(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": b64(b"cd")}}}),
            ),
            ev("messageStop", serde_json::json!({"stopReason": "end_turn"})),
        ]);
        assert!(events.contains(&ProviderEvent::Redacted { index: 0 }));
        assert!(events.contains(&ProviderEvent::Signature { index: 0, signature: b64(b"abcd") }));
    }

    #[test]
    fn errors_read_like_pi() {
        let exception = SseEvent {
            event: "ThrottlingException".into(),
            data: r#"{"message":"Too many tokens"}"#.into(),
            id: Some(EXCEPTION.into()),
            ..SseEvent::default()
        };
        let (_, error) = run(&[exception]);
        assert_eq!(error.unwrap().message, "Throttling error: Too many tokens");
        let (_, error) = run(&[ev("messageStart", serde_json::json!({"role": "assistant"}))]);
        assert_eq!(error.unwrap().message, "Bedrock stream ended without a stop reason");
        let (_, error) = run(&[ev("messageStop", serde_json::json!({"stopReason": "guardrail_intervened"}))]);
        assert_eq!(error.unwrap().message, "Provider stopped with: guardrail_intervened");
        let mut headers = HeaderMap::new();
        headers.insert("x-amzn-errortype", "ValidationException:http://internal.amazon.com/coral/".parse().unwrap());
        let err = http_error(400, &headers, r#"{"message":"Input is too long for requested model."}"#);
        assert_eq!(err.message, "Validation error: Input is too long for requested model.");
        let err = http_error(403, &HeaderMap::new(), "<html>denied</html>");
        assert_eq!(
            (err.message.as_str(), err.kind.clone()),
            ("403: <html>denied</html>", super::super::super::ProviderErrorKind::Auth)
        );
        let err = http_error(400, &headers, r#"{"message":"data retention mode 'default' is not available"}"#);
        assert!(err.message.ends_with("for supported data retention modes."));
    }
}
