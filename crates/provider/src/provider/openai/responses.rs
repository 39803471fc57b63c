//! The `openai-responses` wire API (Responses API with SSE streaming): sends
//! the request built by `responses_request`, decodes the event stream
//! the way pi 1.6 does, and words and classifies failures like pi.
//!
//! One block per output item, keyed by `output_index`; a block ends at its
//! `response.output_item.done`, which also carries what is replayed later:
//! the whole reasoning item (encrypted content included) becomes the thinking
//! signature, `{"v":1,"id",…}` the text signature, `call_id|item_id` the
//! tool-call id. Where pi replaces a block's text with the final item's,
//! the missing tail is sent as one more delta; reasoning summary parts are
//! joined with a blank line sent before the next part (pi's final text, with
//! no trailing separator).

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod events;

use events::{Change, CodexEvent, Event, Item, ItemEvent, Part, Response, WithResponse};

use super::responses_request::{build_body, build_headers, endpoint};
use crate::message::{StopReason, Usage};
use crate::provider::classify::{
    MALFORMED_EVENT_MESSAGE, error_from, js_truthy, openai_sdk_error, openai_stream_error_message, retry_after,
};
use crate::provider::driver::{Api, Call, Flow, Out, Reported, Wire, drive, same_transport_error};
use crate::provider::http::HttpClient;
use crate::provider::lenient;
use crate::provider::shared::js_json;
use crate::provider::sse::SseEvent;
use crate::provider::{BlockKind, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};

/// Responses API provider.
pub struct OpenAiResponses {
    http: HttpClient,
}

impl OpenAiResponses {
    pub fn new(http: HttpClient) -> Self {
        OpenAiResponses { http }
    }
}

/// pi's text when the stream ends without `response.completed` (or another terminal event).
pub const NO_TERMINAL_EVENT_MESSAGE: &str = "OpenAI Responses stream ended before a terminal response event";
const USAGE_URL: &str = "https://chatgpt.com/settings/usage";
const WORKSPACE_LIMIT_HINT: &str = "You've reached your ChatGPT workspace's usage limit. Ask your workspace admin to increase it at admin.openai.com → Workspace → Usage limits.";

/// pi's prefix of HTTP error texts: `OpenAI API error` for `openai`, else `<provider> API error`.
fn error_prefix(provider: &str) -> String {
    let name = if provider == "openai" { "OpenAI" } else { provider };
    format!("{name} API error")
}

/// Hints pi appends to ChatGPT sign-in usage-limit errors.
fn with_hint(message: String) -> String {
    if message.contains("subscription_sharing_usage_limit_exceeded") {
        format!("{message}\nCheck your ChatGPT usage: {USAGE_URL}")
    } else if message.contains("subscription_sharing_workplace_individual_usage_limit_exceeded") {
        format!("{message}\n{WORKSPACE_LIMIT_HINT}")
    } else {
        message
    }
}

/// pi's text for a non-2xx Responses answer: `<prefix> (<status>): <error JSON>`,
/// or the SDK message when it already holds the body or there is none.
pub fn http_error_message(provider: &str, status: u16, body: &str) -> String {
    http_error_message_with_prefix(&error_prefix(provider), status, body)
}

/// [`http_error_message`] with the API's own prefix (`Azure OpenAI API error`).
pub fn http_error_message_with_prefix(prefix: &str, status: u16, body: &str) -> String {
    let (message, body_json) = openai_sdk_error(status, body);
    let detail = match body_json {
        Some(b) if !message.contains(&b) => b,
        _ => message,
    };
    with_hint(format!("{prefix} ({status}): {detail}"))
}

fn http_error_for(provider: String) -> impl Fn(u16, &HeaderMap, &str) -> ProviderError {
    let prefix = error_prefix(&provider);
    http_error_with_prefix(prefix)
}

/// The classified error of a non-2xx answer, worded with `prefix`.
pub(crate) fn http_error_with_prefix(prefix: String) -> impl Fn(u16, &HeaderMap, &str) -> ProviderError {
    move |status, headers, body| {
        error_from(Some(status), http_error_message_with_prefix(&prefix, status, body), retry_after(headers))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SlotKind {
    Thinking,
    Text,
    Tool,
}

/// An output item being streamed.
struct Slot {
    kind: SlotKind,
    index: usize,
    /// Text (or argument JSON) sent so far.
    sent: String,
}

/// A reasoning item as it was done: its block and the whole item, which is
/// the block's signature (its encrypted content added from the final response).
struct Reasoning {
    index: usize,
    item: Value,
    /// The item holds a non-null `encrypted_content`.
    encrypted: bool,
}

/// Event-by-event state of one response (shared by the Responses-based
/// APIs: `openai-responses`, `azure-openai-responses`, `openai-codex-responses`).
pub(crate) struct Decoder {
    /// The Codex backend's event mapping (pi's `mapCodexEvents`).
    codex: bool,
    slots: HashMap<u64, Slot>,
    blocks: usize,
    /// Tool calls (by block index, with their id and name) whose item is not done yet.
    unfinished: Vec<(usize, String, String)>,
    has_tool_calls: bool,
    /// Reasoning items by id: their block and the stored item.
    reasoning_items: HashMap<String, Reasoning>,
    terminal: bool,
    stop: Option<(crate::provider::MappedStop, Option<String>)>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Decoder {
            codex: false,
            slots: HashMap::new(),
            blocks: 0,
            unfinished: Vec::new(),
            has_tool_calls: false,
            reasoning_items: HashMap::new(),
            terminal: false,
            stop: None,
        }
    }

    /// The decoder of the Codex backend's stream.
    pub(crate) fn codex() -> Self {
        Decoder { codex: true, ..Decoder::new() }
    }

    fn create_slot(&mut self, output_index: u64, item: &Item, out: &mut Out) -> bool {
        let (kind, block) = match item {
            Item::Reasoning { .. } => (SlotKind::Thinking, BlockKind::Thinking),
            Item::Message { .. } => (SlotKind::Text, BlockKind::Text),
            Item::FunctionCall { call_id, id, name, .. } => {
                (SlotKind::Tool, BlockKind::ToolCall { id: format!("{call_id}|{id}"), name: name.clone() })
            }
            Item::Other => return false,
        };
        let index = self.blocks;
        self.blocks += 1;
        if let BlockKind::ToolCall { id, name } = &block {
            self.has_tool_calls = true;
            self.unfinished.push((index, id.clone(), name.clone()));
        }
        out.emit(ProviderEvent::BlockStart { index, kind: block });
        let mut slot = Slot { kind, index, sent: String::new() };
        if let Item::FunctionCall { arguments, .. } = item
            && !arguments.is_empty()
        {
            slot.sent.push_str(arguments);
            out.emit(ProviderEvent::BlockDelta { index, delta: arguments.clone() });
        }
        self.slots.insert(output_index, slot);
        true
    }

    fn slot(&mut self, output_index: Option<u64>, kind: SlotKind) -> Option<&mut Slot> {
        self.slots.get_mut(&output_index?).filter(|s| s.kind == kind)
    }

    fn delta(&mut self, change: Change, kind: SlotKind, out: &mut Out) {
        let Some(slot) = self.slot(change.output_index, kind) else { return };
        let text = change.delta;
        if text.is_empty() {
            return;
        }
        slot.sent.push_str(&text);
        out.emit(ProviderEvent::BlockDelta { index: slot.index, delta: text });
    }

    /// The end of a summary part: pi-ai's `"\n\n"` delta at once (the item's
    /// end then gives the block its summary's text).
    fn summary_part_done(&mut self, output_index: Option<u64>, out: &mut Out) {
        let Some(slot) = self.slot(output_index, SlotKind::Thinking) else { return };
        slot.sent.push_str("\n\n");
        out.emit(ProviderEvent::BlockDelta { index: slot.index, delta: "\n\n".into() });
    }

    /// The item's final text in place of what streamed, as pi-ai sets it
    /// (no delta; an empty final text keeps what streamed).
    fn replace_text(slot: &mut Slot, fin: &str, out: &mut Out) {
        if !fin.is_empty() && fin != slot.sent {
            slot.sent = fin.to_string();
            out.emit(ProviderEvent::BlockText { index: slot.index, text: fin.to_string() });
        }
    }

    /// Send what the final text adds to what was streamed (pi replaces the text).
    fn complete_text(slot: &mut Slot, fin: &str, out: &mut Out) {
        if let Some(rest) = fin.strip_prefix(slot.sent.as_str()).filter(|r| !r.is_empty()) {
            out.emit(ProviderEvent::BlockDelta { index: slot.index, delta: rest.to_string() });
            slot.sent.push_str(rest);
        }
    }

    fn on_item_done(&mut self, event: ItemEvent, out: &mut Out) {
        let Some(output_index) = event.output_index else { return };
        let (raw, item) = event.item();
        if !self.slots.contains_key(&output_index) && !self.create_slot(output_index, &item, out) {
            return;
        }
        let Some(mut slot) = self.slots.remove(&output_index) else { return };
        let index = slot.index;
        match (item, slot.kind) {
            (Item::Reasoning { id, encrypted_content, summary, content }, SlotKind::Thinking) => {
                let join = |parts: &[Part]| parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
                let (summary, content) = (join(&summary), join(&content));
                let fin = if !summary.is_empty() { summary } else { content };
                Self::replace_text(&mut slot, &fin, out);
                out.emit(ProviderEvent::Signature { index, signature: js_json(&raw) });
                if let Some(id) = id {
                    let encrypted = encrypted_content.is_some_and(|e| !e.is_null());
                    self.reasoning_items.insert(id, Reasoning { index, item: raw, encrypted });
                }
            }
            (Item::Message { id, phase, content }, SlotKind::Text) => {
                let fin: String = content
                    .iter()
                    .map(|c| if c.kind == "output_text" { c.text.as_str() } else { c.refusal.as_str() })
                    .collect();
                Self::replace_text(&mut slot, &fin, out);
                let mut signature = serde_json::Map::new();
                signature.insert("v".into(), json!(1));
                signature.insert("id".into(), json!(id));
                if let Some(phase) = phase {
                    signature.insert("phase".into(), json!(phase));
                }
                out.emit(ProviderEvent::Signature { index, signature: Value::Object(signature).to_string() });
            }
            (Item::FunctionCall { arguments, .. }, SlotKind::Tool) => {
                if !arguments.is_empty() {
                    Self::complete_text(&mut slot, &arguments, out);
                }
                self.unfinished.retain(|(i, _, _)| *i != index);
            }
            _ => {
                self.slots.insert(output_index, slot);
                return;
            }
        }
        out.emit(ProviderEvent::BlockEnd { index });
    }

    fn finalize(&mut self, response: Response, out: &mut Out) {
        self.terminal = true;
        for item in response.output {
            let Some(encrypted) = item.encrypted_content.filter(|e| !e.is_null()) else { continue };
            if item.kind != "reasoning" {
                continue;
            }
            let Some(stored) = self.reasoning_items.get_mut(&item.id) else { continue };
            if stored.encrypted {
                continue;
            }
            if let Some(o) = stored.item.as_object_mut() {
                o.insert("encrypted_content".into(), encrypted);
                stored.encrypted = true;
            }
            out.emit(ProviderEvent::Signature { index: stored.index, signature: js_json(&stored.item) });
        }
        if let Some(id) = response.id {
            out.emit(ProviderEvent::ResponseId(id));
        }
        if let Some(u) = response.usage {
            let (cached, written) = (
                u.input_tokens_details.cached_tokens.unwrap_or(0),
                u.input_tokens_details.cache_write_tokens.unwrap_or(0),
            );
            let mut usage = Usage {
                input: u.counts.input_tokens.unwrap_or(0).saturating_sub(cached + written),
                output: u.counts.output_tokens.unwrap_or(0),
                cache_read: cached,
                cache_write: written,
                total_tokens: u.total_tokens.unwrap_or(0),
                ..Usage::default()
            };
            usage.reasoning = Some(u.output_tokens_details.reasoning_tokens.unwrap_or(0));
            out.emit(ProviderEvent::Usage(Box::new(usage)));
        }
        let status = response.status.as_deref();
        let reason = response.incomplete_details.reason.as_deref();
        let raw = status.map(|s| match reason {
            Some(r) => format!("{s}.{r}"),
            None => s.to_string(),
        });
        // An error stop with the message pi-ai sets with it (none for a
        // failed or cancelled response until the call fails).
        let mapped = match (status, reason) {
            (None | Some("completed" | "in_progress" | "queued"), _) => Ok(StopReason::Stop),
            (Some("incomplete"), Some("max_output_tokens")) => Ok(StopReason::Length),
            (Some("incomplete"), Some(r)) => Err(Some(format!("Response incomplete: {r}"))),
            (Some("incomplete"), None) => Err(Some("Response incomplete without a provider reason".to_string())),
            (Some("failed" | "cancelled"), _) => Err(None),
            (Some(other), _) => Err(Some(format!("Unhandled stop reason: {other}"))),
        };
        let mapped = match mapped {
            Ok(StopReason::Stop) if self.has_tool_calls => Ok(StopReason::ToolUse),
            other => other,
        };
        // Said at once, as pi-ai sets it when it reads it (the stream's end
        // says it again, or fails the call).
        out.emit(ProviderEvent::stop_read(mapped.clone(), raw.clone()));
        self.stop = Some((mapped, raw));
    }
}

fn failed_message(response: &Response) -> String {
    match &response.error {
        Some(e) => {
            let code = e.code.as_deref().filter(|s| !s.is_empty()).unwrap_or("unknown");
            let message = e.message.as_deref().filter(|s| !s.is_empty()).unwrap_or("no message");
            format!("{code}: {message}")
        }
        None => match &response.incomplete_details.reason {
            Some(r) => format!("incomplete: {r}"),
            None => "Unknown error (no error details in response)".to_string(),
        },
    }
}

fn js_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_json(other),
    }
}

impl Decoder {
    /// One event of the Responses API as the OpenAI SDK delivers it: an
    /// `error` SSE event or an `error` member fails the stream.
    fn on_data(&mut self, event: &str, data: Value, out: &mut Out) -> Result<Flow, ProviderError> {
        // An error payload is free-form: it is worded from whatever JSON it holds.
        if event == "error" {
            let err = data.get("error").filter(|e| !e.is_null()).unwrap_or(&data);
            return Err(error_from(None, with_hint(openai_stream_error_message(err)), None));
        }
        if let Some(err) = data.get("error").filter(|e| js_truthy(e)) {
            return Err(error_from(None, with_hint(openai_stream_error_message(err)), None));
        }
        self.on_typed(data, out)
    }

    /// One event of the Codex backend (pi's `mapCodexEvents`): its `error`
    /// and `response.failed` wording, `response.done` / `response.incomplete`
    /// read as `response.completed` (unknown statuses dropped), and the end
    /// of the stream after the terminal response.
    fn on_codex_event(&mut self, data: Value, out: &mut Out) -> Result<Flow, ProviderError> {
        // An event that is no object or has no string `type` is skipped.
        let Some(event) = lenient::event_ref::<CodexEvent>(&data) else { return Ok(Flow::Continue) };
        match event {
            CodexEvent::Error(error) => {
                let detail = error.detail().unwrap_or_else(|| js_json(&data));
                Err(error_from(None, format!("Codex error: {detail}"), None))
            }
            CodexEvent::Failed(WithResponse { response }) => {
                let message = response.error.and_then(|e| e.message).filter(|s| !s.is_empty());
                Err(error_from(None, message.unwrap_or_else(|| "Codex response failed".to_string()), None))
            }
            CodexEvent::Done(WithResponse { mut response }) => {
                let known = response.status.as_deref().is_some_and(|s| {
                    ["completed", "incomplete", "failed", "cancelled", "queued", "in_progress"].contains(&s)
                });
                if !known {
                    response.status = None;
                }
                self.finalize(response, out);
                Ok(Flow::Done)
            }
            CodexEvent::Other => self.on_typed(data, out),
        }
    }

    /// A Responses stream event by its `type` (pi's `processResponsesStream`).
    fn on_typed(&mut self, data: Value, out: &mut Out) -> Result<Flow, ProviderError> {
        match lenient::event(data).unwrap_or(Event::Other) {
            Event::Created { response } => {
                if let Some(id) = response.id {
                    out.emit(ProviderEvent::ResponseId(id));
                }
            }
            Event::ItemAdded(event) => {
                if let Some(i) = event.output_index {
                    let (_, item) = event.item();
                    self.create_slot(i, &item, out);
                }
            }
            Event::SummaryDelta(change) => self.delta(change, SlotKind::Thinking, out),
            Event::SummaryPartDone(change) => self.summary_part_done(change.output_index, out),
            Event::ReasoningDelta(change) => self.delta(change, SlotKind::Thinking, out),
            Event::TextDelta(change) => self.delta(change, SlotKind::Text, out),
            Event::ArgumentsDelta(change) => self.delta(change, SlotKind::Tool, out),
            Event::ArgumentsDone(change) => {
                if let Some(slot) = self.slot(change.output_index, SlotKind::Tool) {
                    Self::complete_text(slot, &change.arguments, out);
                }
            }
            Event::ItemDone(event) => self.on_item_done(event, out),
            Event::Completed(WithResponse { response }) => self.finalize(response, out),
            Event::Error { code, message } => {
                let text = format!("Error Code {}: {}", js_string(code.as_ref()), js_string(message.as_ref()));
                return Err(error_from(None, text, None));
            }
            Event::Failed(WithResponse { response }) => {
                self.terminal = true;
                let text = failed_message(&response);
                return Err(error_from(None, with_hint(text), None));
            }
            Event::Other => {}
        }
        Ok(Flow::Continue)
    }
}

impl Wire for Decoder {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        if ev.unterminated {
            return Ok(Flow::Continue);
        }
        if ev.data == "[DONE]" {
            return Ok(Flow::Done);
        }
        let data: Value =
            serde_json::from_str(&ev.data).map_err(|_| error_from(None, MALFORMED_EVENT_MESSAGE.to_string(), None))?;
        if self.codex {
            return self.on_codex_event(data, out);
        }
        self.on_data(&ev.event, data, out)
    }

    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        if !self.terminal {
            return Err(error_from(None, NO_TERMINAL_EVENT_MESSAGE.to_string(), None));
        }
        let (reason, raw) = match self.stop.take() {
            Some((Ok(reason), raw)) => (reason, raw),
            Some((Err(text), _)) => {
                let text = text.unwrap_or_else(|| "An unknown error occurred".to_string());
                return Err(error_from(None, text, None));
            }
            None => (StopReason::Stop, None),
        };
        if reason == StopReason::ToolUse
            && let Some((_, id, name)) = self.unfinished.first()
        {
            let text = format!("OpenAI Responses stream completed with an unfinished tool call: {name} ({id})");
            return Err(error_from(None, text, None));
        }
        out.emit(ProviderEvent::Stop { reason, raw });
        Ok(())
    }
}

impl Provider for OpenAiResponses {
    fn api(&self) -> &'static str {
        "openai-responses"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let call =
            build_headers(&request).map(|headers| Call::new(endpoint(&request.model), headers, build_body(&request)));
        let api = Api {
            http_error: Box::new(http_error_for(request.model.provider.clone())),
            transport_error: same_transport_error,
            reported: Reported::Successes,
        };
        drive(self.http.clone(), cancel, call, Decoder::new(), api)
    }
}

#[cfg(test)]
mod tests;
