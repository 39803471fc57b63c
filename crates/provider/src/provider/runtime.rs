//! Wire APIs known only at run time: a provider whose stream is written
//! elsewhere (an extension's `streamSimple`, pi's `registerProvider`) and
//! reaches pi-rpc as pi-ai's `AssistantMessageEvent`s. [`RuntimeProvider`]
//! is registered under the API name the extension chose; each request asks
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
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::classify;
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

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let label = format!("{} ({})", request.model.provider, self.api);
        let events = self.source.open(&self.api, request, cancel);
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
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let index = event.get("contentIndex").and_then(Value::as_u64).map(|i| i as usize);
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        match (kind, index) {
            ("start", _) => {}
            ("text_start", Some(i)) => self.start(i, "text", None, &mut out),
            ("thinking_start", Some(i)) => self.start(i, "thinking", None, &mut out),
            ("toolcall_start", Some(i)) => {
                let call = Some((text("id"), text("toolName"))).filter(|(id, name)| !id.is_empty() && !name.is_empty());
                self.start(i, "toolCall", call, &mut out);
            }
            ("text_delta", Some(i)) => self.delta(i, "text", text("delta"), &mut out),
            ("thinking_delta", Some(i)) => self.delta(i, "thinking", text("delta"), &mut out),
            ("toolcall_delta", Some(i)) => self.delta(i, "toolCall", text("delta"), &mut out),
            ("text_end" | "thinking_end", Some(i)) => {
                let block = Value::Object(
                    [
                        (
                            "type".to_string(),
                            Value::String(if kind == "text_end" { "text" } else { "thinking" }.into()),
                        ),
                        (
                            if kind == "text_end" { "text" } else { "thinking" }.to_string(),
                            event.get("content").cloned().unwrap_or(Value::Null),
                        ),
                        ("signature".to_string(), event.get("signature").cloned().unwrap_or(Value::Null)),
                        ("redacted".to_string(), event.get("redacted").cloned().unwrap_or(Value::Null)),
                    ]
                    .into_iter()
                    .collect(),
                );
                self.finish_block(i, &block, &mut out);
            }
            ("toolcall_end", Some(i)) => {
                let mut call = event.get("toolCall").cloned().unwrap_or(Value::Null);
                if let Value::Object(obj) = &mut call {
                    obj.insert("type".into(), Value::String("toolCall".into()));
                }
                self.finish_block(i, &call, &mut out);
            }
            ("done", _) => {
                let message = event.get("message").cloned().unwrap_or(Value::Null);
                self.complete_from(&message, &mut out);
                if let Some(id) = message.get("responseId").and_then(Value::as_str) {
                    out.push(Ok(ProviderEvent::ResponseId(id.to_string())));
                }
                if let Some(usage) = usage_of(&message) {
                    out.push(Ok(ProviderEvent::Usage(usage)));
                }
                let raw = event.get("reason").or_else(|| message.get("stopReason")).and_then(Value::as_str);
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
                let message = event.get("error").cloned().unwrap_or(Value::Null);
                if let Some(usage) = usage_of(&message) {
                    out.push(Ok(ProviderEvent::Usage(usage)));
                }
                let aborted = event.get("reason").and_then(Value::as_str) == Some("aborted")
                    || message.get("stopReason").and_then(Value::as_str) == Some("aborted");
                let text = message
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
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
    fn finish_block(&mut self, index: usize, final_block: &Value, out: &mut Out) {
        let kind = final_block.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let call = (kind == "toolCall").then(|| {
            let field = |k: &str| final_block.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            (field("id"), field("name"))
        });
        self.start(index, &kind, call.clone(), out);
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
            "text" => final_block.get("text").and_then(Value::as_str).map(str::to_string),
            "thinking" => final_block.get("thinking").and_then(Value::as_str).map(str::to_string),
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
                let arguments = final_block.get("arguments").cloned().unwrap_or(Value::Object(Default::default()));
                let delta = arguments.to_string();
                block.streamed = delta.clone();
                out.push(Ok(ProviderEvent::BlockDelta { index, delta }));
            }
            None => {}
        }
        let signature = ["signature", "thinkingSignature", "textSignature", "thoughtSignature"]
            .iter()
            .find_map(|k| final_block.get(*k).and_then(Value::as_str));
        if let Some(signature) = signature.filter(|s| !s.is_empty()) {
            out.push(Ok(ProviderEvent::Signature { index, signature: signature.to_string() }));
        }
        if final_block.get("redacted").and_then(Value::as_bool) == Some(true) {
            out.push(Ok(ProviderEvent::Redacted { index }));
        }
        block.ended = true;
        out.push(Ok(ProviderEvent::BlockEnd { index }));
    }

    /// At `done`: blocks of the final message the events never completed.
    fn complete_from(&mut self, message: &Value, out: &mut Out) {
        let content = message.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
        for (index, block) in content.iter().enumerate() {
            if block.get("type").and_then(Value::as_str).is_some_and(|t| ["text", "thinking", "toolCall"].contains(&t))
            {
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

/// The usage of a pi assistant message, when it reports any.
fn usage_of(message: &Value) -> Option<Usage> {
    let usage: Usage = serde_json::from_value(message.get("usage")?.clone()).ok()?;
    let any = usage.input + usage.output + usage.cache_read + usage.cache_write + usage.total_tokens > 0;
    any.then_some(usage)
}

fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
