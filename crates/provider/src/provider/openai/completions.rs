//! The `openai-completions` wire API (Chat Completions with SSE streaming):
//! sends the request built by `request`, turns the chunks into
//! provider events the way pi does, and classifies failures.
//!
//! Like pi, one text block and one thinking block are used for the whole
//! response, tool calls are keyed by their stream index (then id), every
//! tool-call chunk yields a delta (the first one is usually `""`), and all
//! `BlockEnd`s are emitted at the end of the stream in block order.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::compat::OpenAiCompat;
use super::reasoning::{append_reasoning_detail, is_reasoning_detail};
use super::request::{build_body, build_headers};
use crate::message::{StopReason, Usage};
use crate::provider::classify::{error_from, js_truthy, openai_http_error, openai_stream_error_message};
use crate::provider::driver::{Api, Call, Flow, Out, Reported, Wire, drive, same_transport_error};
use crate::provider::http::HttpClient;
use crate::provider::lenient;
use crate::provider::sse::SseEvent;
use crate::provider::{
    BlockKind, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream,
};

mod chunk;
mod frame;
use chunk::{Chunk, ChunkUsage, ToolCall};
use frame::ChunkFrame;

/// Chat Completions provider.
pub struct OpenAiCompletions {
    http: HttpClient,
}

impl OpenAiCompletions {
    pub fn new(http: HttpClient) -> Self {
        OpenAiCompletions { http }
    }
}

/// pi's text when a stream ends cleanly without any `finish_reason`.
pub const NO_FINISH_REASON_MESSAGE: &str = "Stream ended without finish_reason";
pub use crate::provider::classify::MALFORMED_EVENT_MESSAGE;

/// Usage from a Chat Completions `usage` object (pi's `parseChunkUsage`):
/// cached prompt tokens are cache reads and are not counted as input.
pub fn parse_usage(u: &Value) -> Usage {
    usage_of(&lenient::event_ref(u).unwrap_or_default())
}

fn usage_of(u: &ChunkUsage) -> Usage {
    let prompt = u.counts.prompt_tokens.unwrap_or(0);
    let cache_read =
        u.prompt_tokens_details.cached_tokens.or(u.prompt_cache_hit_tokens).or(u.cached_tokens).unwrap_or(0);
    let cache_write = u.prompt_tokens_details.cache_write_tokens.unwrap_or(0);
    let input = prompt.saturating_sub(cache_read + cache_write);
    let output = u.counts.completion_tokens.unwrap_or(0);
    // Part of `completion_tokens`; pi reports 0 when the provider does not say.
    let reasoning = u.completion_tokens_details.reasoning_tokens.or(u.reasoning_tokens);
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning.unwrap_or(0)),
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    }
}

/// pi's `mapStopReason`: the stop reason, or the error text of an error stop.
pub fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "stop" | "end" => Ok(StopReason::Stop),
        "length" => Ok(StopReason::Length),
        "function_call" | "tool_calls" => Ok(StopReason::ToolUse),
        other => Err(format!("Provider finish_reason: {other}")),
    }
}

/// Chunk-by-chunk state of one response.
struct Assembler {
    provider: String,
    supports_finish_reason: bool,
    /// Blocks started so far (block indices are 0..blocks, in creation order).
    blocks: usize,
    text: Option<usize>,
    thinking: Option<usize>,
    tools_by_stream_index: HashMap<u64, usize>,
    tools_by_id: HashMap<String, usize>,
    has_tool_calls: bool,
    response_id: bool,
    /// (stop reason or error text, raw finish reason).
    finish: Option<(Result<StopReason, String>, String)>,
    /// OpenRouter `reasoning_details` seen so far (merged); they become the
    /// thinking signature when the block ends.
    reasoning_details: Option<Vec<Value>>,
    /// The frame of the last plain chunk that only carried text.
    frame: ChunkFrame,
}

impl Assembler {
    fn new(request: &ProviderRequest, compat: &OpenAiCompat) -> Self {
        Assembler::for_provider(request.model.provider.clone(), compat.supports_finish_reason)
    }

    /// An assembler before any chunk of `provider`'s stream.
    fn for_provider(provider: String, supports_finish_reason: bool) -> Self {
        Assembler {
            provider,
            supports_finish_reason,
            blocks: 0,
            text: None,
            thinking: None,
            tools_by_stream_index: HashMap::new(),
            tools_by_id: HashMap::new(),
            has_tool_calls: false,
            response_id: false,
            finish: None,
            reasoning_details: None,
            frame: ChunkFrame::default(),
        }
    }

    /// The finish reason just read, said at once as pi-ai sets it, an error
    /// one with its message (the stream's end says it again, or fails the call).
    fn say_finish(&self, out: &mut Out) {
        if let Some((mapped, raw)) = &self.finish {
            out.emit(ProviderEvent::stop_read(mapped.clone().map_err(Some), Some(raw.clone())));
        }
    }

    fn start_block(&mut self, kind: BlockKind, out: &mut Out) -> usize {
        let index = self.blocks;
        self.blocks += 1;
        out.emit(ProviderEvent::BlockStart { index, kind });
        index
    }

    /// The one text block of the response, started on first use.
    fn text_block(&mut self, out: &mut Out) -> usize {
        match self.text {
            Some(i) => i,
            None => {
                let i = self.start_block(BlockKind::Text, out);
                self.text = Some(i);
                i
            }
        }
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Out) {
        self.on_read_chunk(lenient::event_ref(chunk).unwrap_or_default(), out);
    }

    fn on_read_chunk(&mut self, chunk: Chunk, out: &mut Out) {
        if !self.response_id
            && let Some(id) = chunk.id.filter(|s| !s.is_empty())
        {
            self.response_id = true;
            out.emit(ProviderEvent::ResponseId(id));
        }
        let usage = chunk.usage;
        if let Some(u) = &usage {
            out.emit(ProviderEvent::Usage(Box::new(usage_of(u))));
        }
        let Some(choice) = chunk.choices.into_iter().next() else { return };
        if usage.is_none()
            && let Some(u) = &choice.usage
        {
            out.emit(ProviderEvent::Usage(Box::new(usage_of(u))));
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some((map_finish_reason(&reason), reason));
            self.say_finish(out);
        }
        let Some(delta) = choice.delta else { return };
        if let Some((field, text)) = delta.reasoning() {
            let index = match self.thinking {
                Some(i) => i,
                None => {
                    let i = self.start_block(BlockKind::Thinking, out);
                    self.thinking = Some(i);
                    let signature = if self.provider == "opencode-go" && field == "reasoning" {
                        "reasoning_content"
                    } else {
                        field
                    };
                    out.emit(ProviderEvent::Signature { index: i, signature: signature.to_string() });
                    i
                }
            };
            out.emit(ProviderEvent::BlockDelta { index, delta: text.to_string() });
        }
        for detail in delta.reasoning_details.as_ref().and_then(Value::as_array).into_iter().flatten() {
            if !is_reasoning_detail(detail) {
                continue;
            }
            if self.thinking.is_none() {
                let i = self.start_block(BlockKind::Thinking, out);
                self.thinking = Some(i);
                out.emit(ProviderEvent::Signature { index: i, signature: String::new() });
            }
            append_reasoning_detail(self.reasoning_details.get_or_insert_with(Vec::new), detail);
        }
        if let Some(text) = delta.content.filter(|s| !s.is_empty()) {
            let index = self.text_block(out);
            out.emit(ProviderEvent::BlockDelta { index, delta: text });
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.on_tool_call(call, out);
        }
    }

    fn on_tool_call(&mut self, call: ToolCall, out: &mut Out) {
        let stream_index = call.index;
        let id = call.id.filter(|s| !s.is_empty());
        let existing = stream_index
            .and_then(|i| self.tools_by_stream_index.get(&i).copied())
            .or_else(|| id.as_ref().and_then(|id| self.tools_by_id.get(id).copied()));
        let index = match existing {
            Some(i) => i,
            None => {
                let kind = BlockKind::ToolCall { id: id.clone().unwrap_or_default(), name: call.function.name };
                let i = self.start_block(kind, out);
                self.has_tool_calls = true;
                i
            }
        };
        if let Some(si) = stream_index {
            self.tools_by_stream_index.entry(si).or_insert(index);
        }
        if let Some(id) = id {
            self.tools_by_id.insert(id, index);
        }
        out.emit(ProviderEvent::BlockDelta { index, delta: call.function.arguments });
    }
}

/// The shape of nearly every chunk of a streamed text reply, read without
/// building a `Value`: a chunk with anything else (usage, reasoning, tool
/// calls, an error, an unknown field, a duplicate key, a second choice) does
/// not fit and is read the general way, so the outcome is the same.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainChunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, rename = "object")]
    _object: IgnoredAny,
    #[serde(default, rename = "created")]
    _created: IgnoredAny,
    #[serde(default, rename = "model")]
    _model: IgnoredAny,
    #[serde(default, rename = "system_fingerprint")]
    _system_fingerprint: IgnoredAny,
    #[serde(default)]
    usage: Option<IgnoredAny>,
    #[serde(borrow)]
    choices: [Object<PlainChoice<'a>>; 1],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainChoice<'a> {
    #[serde(default, rename = "index")]
    _index: IgnoredAny,
    /// Read as it stands first, to know where it lies in the chunk.
    #[serde(borrow)]
    delta: &'a RawValue,
    #[serde(default, rename = "logprobs")]
    _logprobs: IgnoredAny,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(default, rename = "role")]
    _role: IgnoredAny,
    #[serde(default, rename = "refusal")]
    _refusal: IgnoredAny,
}

/// `T` read only from a JSON object (serde would also read a struct from an
/// array, which the general path ignores).
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnlyMaps<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for OnlyMaps<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(OnlyMaps(std::marker::PhantomData)).map(Object)
    }
}

impl Assembler {
    /// [`Assembler::on_chunk`] for a [`PlainChunk`]; false when the chunk does not have that shape.
    fn on_plain_chunk(&mut self, data: &str, out: &mut Out) -> bool {
        // The same frame as a chunk read before, around a plain text: read
        // as that chunk was, but for the text.
        if let Some(text) = self.frame.text_of(data) {
            if !text.is_empty() {
                let index = self.text_block(out);
                out.emit(ProviderEvent::BlockDelta { index, delta: text.to_owned() });
            }
            return true;
        }
        let Ok(Object(chunk)) = serde_json::from_str::<Object<PlainChunk>>(data) else { return false };
        let [Object(choice)] = chunk.choices;
        if chunk.usage.is_some() || choice.usage.is_some() {
            return false;
        }
        let Ok(Object(delta)) = serde_json::from_str::<Object<PlainDelta>>(choice.delta.get()) else { return false };
        // Only a chunk whose one effect is its text is a frame for the next ones.
        if choice.finish_reason.as_deref().is_none_or(str::is_empty) {
            self.frame.remember(data, choice.delta.get());
        }
        if !self.response_id
            && let Some(id) = chunk.id.filter(|s| !s.is_empty())
        {
            self.response_id = true;
            out.emit(ProviderEvent::ResponseId(id.into_owned()));
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some((map_finish_reason(&reason), reason.into_owned()));
            self.say_finish(out);
        }
        if let Some(text) = delta.content.filter(|s| !s.is_empty()) {
            let index = self.text_block(out);
            out.emit(ProviderEvent::BlockDelta { index, delta: text.into_owned() });
        }
        true
    }
}

impl Wire for Assembler {
    fn on_event(&mut self, ev: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError> {
        if ev.unterminated {
            return Ok(Flow::Continue);
        }
        if ev.data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if !ev.event.starts_with("thread.") && ev.event != "error" && self.on_plain_chunk(&ev.data, out) {
            return Ok(Flow::Continue);
        }
        let data: Value =
            serde_json::from_str(&ev.data).map_err(|_| error_from(None, MALFORMED_EVENT_MESSAGE.to_string(), None))?;
        if ev.event.starts_with("thread.") {
            return Ok(Flow::Continue);
        }
        // An error payload is free-form: it is worded from whatever JSON it holds.
        if ev.event == "error" {
            let err = data.get("error").filter(|e| !e.is_null()).unwrap_or(&data);
            return Err(error_from(None, openai_stream_error_message(err), None));
        }
        if let Some(err) = data.get("error").filter(|e| js_truthy(e)) {
            return Err(error_from(None, openai_stream_error_message(err), None));
        }
        self.on_chunk(&data, out);
        Ok(Flow::Continue)
    }

    /// The body ended cleanly (EOF or `[DONE]`): close the blocks, then stop or fail.
    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError> {
        for index in 0..self.blocks {
            if Some(index) == self.thinking
                && let Some(details) = &self.reasoning_details
            {
                out.emit(ProviderEvent::Signature { index, signature: Value::Array(details.clone()).to_string() });
            }
            out.emit(ProviderEvent::BlockEnd { index });
        }
        let stop = match self.finish.take() {
            Some((Ok(reason), raw)) => ProviderEvent::Stop { reason, raw: Some(raw) },
            Some((Err(text), _)) => return Err(error_from(None, text, None)),
            None if !self.supports_finish_reason => {
                let reason = if self.has_tool_calls { StopReason::ToolUse } else { StopReason::Stop };
                ProviderEvent::Stop { reason, raw: None }
            }
            None => return Err(ProviderError::new(ProviderErrorKind::Transient, NO_FINISH_REASON_MESSAGE)),
        };
        out.emit(stop);
        Ok(())
    }
}

fn prepare(request: &ProviderRequest, compat: &OpenAiCompat) -> Result<Call, ProviderError> {
    let headers = build_headers(request, compat)?;
    let body = build_body(request, compat);
    let url = format!("{}/chat/completions", request.model.base_url.trim_end_matches('/'));
    Ok(Call::new(url, headers, body))
}

impl Provider for OpenAiCompletions {
    fn api(&self) -> &'static str {
        "openai-completions"
    }

    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> ProviderStream {
        let compat = OpenAiCompat::resolve(&request.model);
        let wire = Assembler::new(&request, &compat);
        let call = prepare(&request, &compat);
        let api = Api {
            http_error: Box::new(openai_http_error),
            transport_error: same_transport_error,
            reported: Reported::Successes,
        };
        drive(self.http.clone(), cancel, call, wire, api)
    }
}

#[cfg(test)]
mod tests;
