//! Wire APIs known only at run time: a provider whose stream is written
//! elsewhere (an extension's `streamSimple`, pi's `registerProvider`) and
//! reaches pi-rpc as pi-ai's `AssistantMessageEvent`s. [`RuntimeProvider`]
//! is registered for the provider's models (of the API the extension chose,
//! or all of them); each request asks
//! its [`PiEventSource`] for the events, and [`PiEventMapper`] turns them into
//! the core's [`ProviderEvent`]s, so usage, stop reason, tool calls and errors
//! come through the core like any provider's.
//!
//! The events are pi's, without their `partial` message; what pi keeps only
//! in `partial` travels beside the event: `id`/`toolName` on `toolcall_start`,
//! `signature`/`redacted` on `text_end`/`thinking_end`. A stream that skips
//! a block's start, deltas or end is completed from what follows (the end's
//! content, `done`'s message); an event of no known type, or a stream that
//! ends without `done`/`error`, is an error: never an empty message.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify;
use super::lenient;
use super::{BlockKind, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::{StopReason, Usage};

/// pi-ai events of one model call, as the source produced them (`Err`: the
/// source itself failed, e.g. the extension died).
pub type PiEventStream = BoxStream<'static, Result<Value, ProviderError>>;

/// Where a runtime API's events come from.
pub trait PiEventSource: Send + Sync {
    /// Start one model call with the stream function registered for `api`.
    fn open(&self, api: &str, request: ProviderRequest, cancel: CancellationToken) -> PiEventStream;
}

/// A wire API registered at run time under `api`.
pub struct RuntimeProvider {
    api: String,
    source: Arc<dyn PiEventSource>,
}

impl RuntimeProvider {
    pub fn new(api: impl Into<String>, source: Arc<dyn PiEventSource>) -> RuntimeProvider {
        RuntimeProvider { api: api.into(), source }
    }
}

impl Provider for RuntimeProvider {
    fn api(&self) -> &str {
        &self.api
    }

    /// The call goes out under the model's API (a provider's own stream
    /// serves models of several).
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let api = if request.model.api.is_empty() { self.api.clone() } else { request.model.api.clone() };
        let label = format!("{} ({api})", request.model.provider);
        let events = self.source.open(&api, request, cancel);
        map_pi_events(events, label)
    }
}

/// The core's events for a stream of pi-ai events. `label` names the
/// provider in errors.
pub fn map_pi_events(events: PiEventStream, label: String) -> ProviderStream {
    let state = (events, PiEventMapper::new(label), VecDeque::<Result<ProviderEvent, ProviderError>>::new());
    futures::stream::unfold(state, |(mut events, mut mapper, mut ready)| async move {
        loop {
            if let Some(next) = ready.pop_front() {
                return Some((next, (events, mapper, ready)));
            }
            if mapper.finished {
                return None;
            }
            let out = match events.next().await {
                Some(Ok(event)) => mapper.map(&event),
                Some(Err(error)) => mapper.fail(error),
                None => mapper.end(),
            };
            ready.extend(out);
        }
    })
    .boxed()
}

/// One block of the message being streamed, by pi's `contentIndex`.
#[derive(Debug, Default)]
struct BlockState {
    /// `text`, `thinking` or `toolCall`.
    kind: String,
    /// The core was told it started.
    started: bool,
    ended: bool,
    /// What the deltas carried (text, thinking, or argument JSON).
    streamed: String,
    /// Deltas of a tool call whose id and name are not known yet.
    held: Vec<String>,
}

/// pi-ai's `AssistantMessageEvent`s to the core's events, one at a time.
pub struct PiEventMapper {
    label: String,
    blocks: BTreeMap<usize, BlockState>,
    opened: bool,
    finished: bool,
}

type Out = Vec<Result<ProviderEvent, ProviderError>>;

/// pi-ai's event types that need a `contentIndex`.
const KNOWN: &[&str] = &[
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
];

impl PiEventMapper {
    pub fn new(label: String) -> PiEventMapper {
        PiEventMapper { label, blocks: BTreeMap::new(), opened: false, finished: false }
    }

    /// The core's events for one pi event.
    pub fn map(&mut self, event: &Value) -> Out {
        if self.finished {
            return Vec::new();
        }
        let mut out = Vec::new();
        if !self.opened {
            self.opened = true;
            out.push(Ok(ProviderEvent::Opened));
        }
        let fields: PiEvent = lenient::event_ref(event).unwrap_or_default();
        let kind = fields.kind.as_str();
        match (kind, fields.content_index.map(|i| i as usize)) {
            ("start", _) => {}
            ("text_start", Some(i)) => self.start(i, "text", None, &mut out),
            ("thinking_start", Some(i)) => self.start(i, "thinking", None, &mut out),
            ("toolcall_start", Some(i)) => {
                let call = Some((fields.id, fields.tool_name)).filter(|(id, name)| !id.is_empty() && !name.is_empty());
                self.start(i, "toolCall", call, &mut out);
            }
            ("text_delta", Some(i)) => self.delta(i, "text", fields.delta, &mut out),
            ("thinking_delta", Some(i)) => self.delta(i, "thinking", fields.delta, &mut out),
            ("toolcall_delta", Some(i)) => self.delta(i, "toolCall", fields.delta, &mut out),
            ("text_end" | "thinking_end", Some(i)) => {
                // The end's content, signature and redaction make the final block.
                let text_end = kind == "text_end";
                let block = FinalBlock {
                    kind: if text_end { "text" } else { "thinking" }.to_string(),
                    text: fields.content.clone().filter(|_| text_end),
                    thinking: fields.content.filter(|_| !text_end),
                    signature: fields.signature,
                    redacted: fields.redacted,
                    ..FinalBlock::default()
                };
                self.finish_block(i, &block, &mut out);
            }
            ("toolcall_end", Some(i)) => {
                let call = match fields.tool_call {
                    Some(mut call) => {
                        call.kind = "toolCall".to_string();
                        call
                    }
                    None => FinalBlock::default(),
                };
                self.finish_block(i, &call, &mut out);
            }
            ("done", _) => {
                let message = fields.message;
                self.complete_from(&message, &mut out);
                if let Some(id) = message.response_id {
                    out.push(Ok(ProviderEvent::ResponseId(id)));
                }
                if let Some(usage) = message.usage.filter(reports_any) {
                    out.push(Ok(ProviderEvent::Usage(Box::new(usage))));
                }
                let raw = fields.reason.as_ref().or(message.stop_reason.as_ref()).and_then(Value::as_str);
                let reason = match raw {
                    Some("length") => StopReason::Length,
                    Some("toolUse") => StopReason::ToolUse,
                    Some("stop") | None => StopReason::Stop,
                    Some(other) => {
                        let error = format!("{}: `done` with the stop reason \"{other}\"", self.label);
                        return self.error_out(out, ProviderError::new(ProviderErrorKind::InvalidRequest, error));
                    }
                };
                out.push(Ok(ProviderEvent::Stop { reason, raw: None }));
                self.finished = true;
            }
            ("error", _) => {
                let message = fields.error;
                if let Some(usage) = message.usage.filter(reports_any) {
                    out.push(Ok(ProviderEvent::Usage(Box::new(usage))));
                }
                let aborted = fields.reason.as_ref().and_then(Value::as_str) == Some("aborted")
                    || message.stop_reason.as_ref().and_then(Value::as_str) == Some("aborted");
                let text = message
                    .error_message
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| format!("{}: the request failed without an error message", self.label));
                let error = if aborted {
                    ProviderError::new(ProviderErrorKind::Aborted, text)
                } else {
                    classify::error_from(None, text, None)
                };
                return self.error_out(out, error);
            }
            (other, _) => {
                let error = if KNOWN.contains(&other) {
                    format!("{}: a stream event without its contentIndex: {}", self.label, excerpt(event))
                } else {
                    format!("{}: a stream event of no known type: {}", self.label, excerpt(event))
                };
                return self.error_out(out, ProviderError::new(ProviderErrorKind::InvalidRequest, error));
            }
        }
        out
    }

    /// The source failed.
    pub fn fail(&mut self, error: ProviderError) -> Out {
        if self.finished {
            return Vec::new();
        }
        self.error_out(Vec::new(), error)
    }

    /// The source ended.
    pub fn end(&mut self) -> Out {
        if self.finished {
            return Vec::new();
        }
        let error = format!("{}: the stream ended without a `done` or `error` event", self.label);
        self.error_out(Vec::new(), ProviderError::new(ProviderErrorKind::InvalidRequest, error))
    }

    fn error_out(&mut self, mut out: Out, error: ProviderError) -> Out {
        self.finished = true;
        out.push(Err(error));
        out
    }

    fn start(&mut self, index: usize, kind: &str, call: Option<(String, String)>, out: &mut Out) {
        let block = self.blocks.entry(index).or_default();
        if block.started || !block.kind.is_empty() {
            return;
        }
        block.kind = kind.to_string();
        let kind = match (kind, call) {
            ("text", _) => BlockKind::Text,
            ("thinking", _) => BlockKind::Thinking,
            (_, Some((id, name))) => BlockKind::ToolCall { id, name },
            // Its id and name come with its end: the deltas wait until then.
            (_, None) => return,
        };
        block.started = true;
        out.push(Ok(ProviderEvent::BlockStart { index, kind }));
    }

    fn delta(&mut self, index: usize, kind: &str, delta: String, out: &mut Out) {
        self.start(index, kind, None, out);
        let Some(block) = self.blocks.get_mut(&index).filter(|b| !b.ended) else { return };
        if delta.is_empty() {
            return;
        }
        block.streamed.push_str(&delta);
        if block.started {
            out.push(Ok(ProviderEvent::BlockDelta { index, delta }));
        } else {
            block.held.push(delta);
        }
    }

    /// A block is complete as `final_block` (pi's content block): what its
    /// events left out is sent, and it is closed.
    fn finish_block(&mut self, index: usize, final_block: &FinalBlock, out: &mut Out) {
        let kind = final_block.kind.as_str();
        let call = (kind == "toolCall").then(|| (final_block.id.clone(), final_block.name.clone()));
        self.start(index, kind, call.clone(), out);
        let Some(block) = self.blocks.get_mut(&index) else { return };
        if block.ended {
            return;
        }
        if !block.started {
            // A tool call whose id and name only its end gave.
            let (id, name) = call.unwrap_or_default();
            block.started = true;
            out.push(Ok(ProviderEvent::BlockStart { index, kind: BlockKind::ToolCall { id, name } }));
            for delta in std::mem::take(&mut block.held) {
                out.push(Ok(ProviderEvent::BlockDelta { index, delta }));
            }
        }
        let full = match block.kind.as_str() {
            "text" => final_block.text.clone(),
            "thinking" => final_block.thinking.clone(),
            _ => None,
        };
        match full {
            // Text the deltas did not carry (a stream that only ends its blocks).
            Some(full) => {
                if let Some(rest) = full.strip_prefix(block.streamed.as_str()).filter(|r| !r.is_empty()) {
                    out.push(Ok(ProviderEvent::BlockDelta { index, delta: rest.to_string() }));
                    block.streamed = full.clone();
                }
            }
            None if block.kind == "toolCall" && block.streamed.trim().is_empty() => {
                let arguments = final_block.arguments.clone().unwrap_or(Value::Object(Default::default()));
                let delta = arguments.to_string();
                block.streamed = delta.clone();
                out.push(Ok(ProviderEvent::BlockDelta { index, delta }));
            }
            None => {}
        }
        if let Some(signature) = final_block.signature().filter(|s| !s.is_empty()) {
            out.push(Ok(ProviderEvent::Signature { index, signature: signature.to_string() }));
        }
        if final_block.redacted == Some(true) {
            out.push(Ok(ProviderEvent::Redacted { index }));
        }
        block.ended = true;
        out.push(Ok(ProviderEvent::BlockEnd { index }));
    }

    /// At `done`: blocks of the final message the events never completed.
    fn complete_from(&mut self, message: &Message, out: &mut Out) {
        for (index, block) in message.content.iter().enumerate() {
            if ["text", "thinking", "toolCall"].contains(&block.kind.as_str()) {
                self.finish_block(index, block, out);
            }
        }
        let open: Vec<usize> = self.blocks.iter().filter(|(_, b)| b.started && !b.ended).map(|(i, _)| *i).collect();
        for index in open {
            if let Some(block) = self.blocks.get_mut(&index) {
                block.ended = true;
            }
            out.push(Ok(ProviderEvent::BlockEnd { index }));
        }
    }
}

/// Whether a usage reports any tokens (pi's message carries zeros when the source had none).
fn reports_any(usage: &Usage) -> bool {
    usage.input + usage.output + usage.cache_read + usage.cache_write + usage.total_tokens > 0
}

fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A pi-ai event, by its `type` (an unknown one is an error, worded with the
/// raw event, so the type is read as text rather than as a tag).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PiEvent {
    #[serde(rename = "type", deserialize_with = "lenient::text")]
    kind: String,
    #[serde(deserialize_with = "lenient::u64")]
    content_index: Option<u64>,
    #[serde(deserialize_with = "lenient::text")]
    id: String,
    #[serde(deserialize_with = "lenient::text")]
    tool_name: String,
    #[serde(deserialize_with = "lenient::text")]
    delta: String,
    /// The text of `text_end` / `thinking_end`, with its signature and redaction.
    #[serde(deserialize_with = "lenient::string")]
    content: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    signature: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    redacted: Option<bool>,
    #[serde(deserialize_with = "lenient::some_object")]
    tool_call: Option<FinalBlock>,
    /// `done`'s final message.
    #[serde(deserialize_with = "lenient::object")]
    message: Message,
    /// `error`'s final message.
    #[serde(deserialize_with = "lenient::object")]
    error: Message,
    /// As sent: a `reason` that is there but no text hides the message's `stopReason`.
    #[serde(deserialize_with = "lenient::any")]
    reason: Option<Value>,
}

/// pi's final assistant message (of `done` or `error`).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Message {
    /// A block that is no object reads as empty (and is skipped), keeping the others' indexes.
    #[serde(deserialize_with = "lenient::each")]
    content: Vec<FinalBlock>,
    #[serde(deserialize_with = "lenient::string")]
    response_id: Option<String>,
    /// pi's usage object, when it reads as one.
    #[serde(deserialize_with = "lenient::parsed")]
    usage: Option<Usage>,
    #[serde(deserialize_with = "lenient::any")]
    stop_reason: Option<Value>,
    #[serde(deserialize_with = "lenient::string")]
    error_message: Option<String>,
}

/// A content block of pi's (`text`, `thinking`, `toolCall`) as it ends.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct FinalBlock {
    #[serde(rename = "type", deserialize_with = "lenient::text")]
    kind: String,
    #[serde(deserialize_with = "lenient::text")]
    id: String,
    #[serde(deserialize_with = "lenient::text")]
    name: String,
    #[serde(deserialize_with = "lenient::string")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    thinking: Option<String>,
    /// The tool's arguments (free-form JSON).
    #[serde(deserialize_with = "lenient::any")]
    arguments: Option<Value>,
    #[serde(deserialize_with = "lenient::string")]
    signature: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    thinking_signature: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    text_signature: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    thought_signature: Option<String>,
    #[serde(deserialize_with = "lenient::bool")]
    redacted: Option<bool>,
}

impl FinalBlock {
    /// The first of pi's signature fields that holds a text.
    fn signature(&self) -> Option<&str> {
        [&self.signature, &self.thinking_signature, &self.text_signature, &self.thought_signature]
            .into_iter()
            .find_map(|s| s.as_deref())
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
