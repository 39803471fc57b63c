//! Turning a provider's event stream into one assistant message, and, for a
//! run, its `message_start` / `message_update` / `message_end` events: the
//! one stream consumer that runs and summaries share.

use std::collections::VecDeque;
use std::sync::Arc;

use std::task::Poll;

use futures::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, AssistantStreamEvent, EventSink};
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use crate::model::Model;
use crate::provider::cancel_watch::CancelWatch;
use crate::provider::read_gate::{self, ReadGate};
use crate::provider::{
    BlockKind, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream,
};

/// What one model call produced.
pub struct StreamOutcome {
    pub message: AssistantMessage,
    /// Set when the call failed (the message then has stopReason error/aborted).
    pub error: Option<ProviderError>,
}

struct Block {
    content_index: usize,
    open: bool,
    /// Raw JSON text of tool-call arguments.
    args: String,
}

/// The blocks of the message by the provider's index, in the order they
/// started (a block started again under its index keeps its place). A few:
/// found by a scan from the latest, which takes the deltas (no hashing per
/// delta).
#[derive(Default)]
struct Blocks(Vec<(usize, Block)>);

impl Blocks {
    fn start(&mut self, index: usize, block: Block) {
        match self.get_mut(index) {
            Some(slot) => *slot = block,
            None => self.0.push((index, block)),
        }
    }

    fn get(&self, index: usize) -> Option<&Block> {
        self.0.iter().rev().find(|(i, _)| *i == index).map(|(_, block)| block)
    }

    fn get_mut(&mut self, index: usize) -> Option<&mut Block> {
        self.0.iter_mut().rev().find(|(i, _)| *i == index).map(|(_, block)| block)
    }

    fn in_order(&mut self) -> impl Iterator<Item = &mut Block> {
        self.0.iter_mut().map(|(_, block)| block)
    }
}

/// Stream one assistant message from `provider`, emitting its events to
/// `emitter` (`None`: silently, for summaries).
pub async fn stream_assistant(
    emitter: Option<&dyn EventSink>,
    provider: Arc<dyn Provider>,
    request: ProviderRequest,
    cancel: CancellationToken,
    model: &Model,
    secret: Option<&str>,
) -> StreamOutcome {
    let started = std::time::Instant::now();
    let thinking_level = request.thinking_level.as_str().to_string();
    let mut message = AssistantMessage::empty(model, StopReason::Stop);
    let mut out = Batch { emitter, events: Vec::new(), usage: Arc::new(Usage::default()), fields_changed: false };
    // `message_start` goes out when the answer begins, as pi's does (not
    // when the request leaves); a call that fails or is aborted before that
    // opens its message at the end, already holding the error.
    let mut opened = false;
    // pi-ai hands the agent its `start` before it reads the body: with
    // extensions watching each stream event, `message_start` reaches them
    // before the first one.
    let start_before_reading = crate::provider::observe::current().is_some_and(|o| o.wants_stream_events());
    // Then the body is read on once the events taken reached their handlers (see `read_gate`).
    let gate = (start_before_reading && emitter.is_some()).then(|| Arc::new(ReadGate::default()));
    // What was read while the last events' handlers ran, not taken yet.
    let mut ahead = VecDeque::new();

    let mut blocks = Blocks::default();
    let mut error: Option<ProviderError> = None;
    let mut stopped = false;
    let mut stream = provider.stream(request, cancel.clone());
    if let Some(gate) = &gate {
        stream = read_gate::gated(stream, gate.clone());
    }
    // One watch for the whole call: a flag checked per event, not the token's lock.
    let mut watch = CancelWatch::new(&cancel);
    // Whether the stream had nothing at hand after the last event, and the
    // other ready tasks were let run once before the batch goes out.
    let mut yielded = false;

    loop {
        if watch.is_cancelled() {
            error = Some(ProviderError::aborted());
            break;
        }
        // An event already at hand is taken without arming the cancellation
        // wait; the events made so far go out before waiting for the next.
        if out.events.len() >= MAX_BATCH {
            out.flush_gated(&message, stopped, gate.as_deref(), &mut stream, &mut ahead).await;
            // A long run at hand (a body read in this task never waits while
            // the socket has data): the tasks that carry this batch to the
            // output run before the next one is made, so the output flows
            // while the answer is read, not in one burst at its end.
            yield_once().await;
            yielded = true;
        }
        let polled = match ahead.pop_front() {
            Some(next) => Poll::Ready(next),
            None => futures::poll!(stream.next()),
        };
        let next = match polled {
            Poll::Ready(next) => {
                yielded = false;
                next
            }
            Poll::Pending if !yielded && out.has_news() => {
                // The ready tasks run first (the HTTP connection decoding the
                // body's next chunk): what they hand over joins this batch.
                yielded = true;
                yield_once().await;
                continue;
            }
            Poll::Pending => {
                out.flush_gated(&message, stopped, gate.as_deref(), &mut stream, &mut ahead).await;
                if !ahead.is_empty() {
                    continue;
                }
                // Waiting: cancellation first, as a biased `select!`.
                let waited = std::future::poll_fn(|cx| {
                    if watch.poll_cancelled(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                    stream.poll_next_unpin(cx).map(Some)
                })
                .await;
                match waited {
                    Some(next) => {
                        // What follows it may be at hand again (a burst after a
                        // pause): the next batch gets its turn of the runtime too.
                        yielded = false;
                        next
                    }
                    None => {
                        error = Some(ProviderError::aborted());
                        break;
                    }
                }
            }
        };
        let event = match next {
            None => break,
            Some(Err(mut e)) => {
                // Providers sometimes echo the key back in an error: never pass it on.
                if let Some(key) = secret.filter(|k| k.len() >= 8) {
                    e.message = e.message.replace(key, "***");
                }
                // A huge error text would be copied into every event and entry.
                e.message = crate::provider::classify::cap_error_message(e.message, None);
                error = Some(e);
                break;
            }
            Some(Ok(ev)) => ev,
        };
        if let Some(gate) = &gate {
            gate.close();
        }
        if !opened {
            opened = true;
            out.push(AgentEvent::MessageStart { message: Box::new(AgentMessage::Assistant(message.clone())) });
        }
        match event {
            ProviderEvent::Opened if start_before_reading => {
                out.flush_gated(&message, stopped, gate.as_deref(), &mut stream, &mut ahead).await
            }
            ProviderEvent::Opened => {}
            ProviderEvent::ResponseId(id) => {
                message.response_id = Some(id);
                out.fields_changed = true;
            }
            ProviderEvent::BlockStart { index, kind } => {
                let content_index = message.content.len();
                let (block, stream_event) = match kind {
                    BlockKind::Text => (
                        ContentBlock::Text(TextContent { text: Default::default(), text_signature: None }),
                        AssistantStreamEvent::TextStart { content_index },
                    ),
                    BlockKind::Thinking => (
                        ContentBlock::Thinking(ThinkingContent {
                            thinking: String::new(),
                            thinking_signature: None,
                            redacted: false,
                        }),
                        AssistantStreamEvent::ThinkingStart { content_index },
                    ),
                    BlockKind::ToolCall { id, name } => (
                        ContentBlock::ToolCall(ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: Value::Object(Map::new()),
                            thought_signature: None,
                            arguments_error: None,
                        }),
                        AssistantStreamEvent::ToolCallStart { content_index, id, tool_name: name },
                    ),
                };
                message.content.push(block);
                blocks.start(index, Block { content_index, open: true, args: String::new() });
                out.update(stream_event);
            }
            ProviderEvent::BlockDelta { index, delta } => {
                let Some(block) = blocks.get_mut(index) else { continue };
                let content_index = block.content_index;
                let stream_event = match message.content.get_mut(content_index) {
                    Some(ContentBlock::Text(t)) => {
                        t.text.push_str(&delta);
                        AssistantStreamEvent::TextDelta { content_index, delta }
                    }
                    Some(ContentBlock::Thinking(t)) => {
                        t.thinking.push_str(&delta);
                        AssistantStreamEvent::ThinkingDelta { content_index, delta }
                    }
                    Some(ContentBlock::ToolCall(_)) => {
                        block.args.push_str(&delta);
                        AssistantStreamEvent::ToolCallDelta { content_index, delta }
                    }
                    _ => continue,
                };
                out.update(stream_event);
            }
            ProviderEvent::Signature { index, signature } => {
                out.fields_changed = true;
                if let Some(block) = blocks.get(index) {
                    match message.content.get_mut(block.content_index) {
                        Some(ContentBlock::Thinking(t)) => t.thinking_signature = Some(signature),
                        Some(ContentBlock::Text(t)) => t.text_signature = Some(signature),
                        Some(ContentBlock::ToolCall(c)) => c.thought_signature = Some(signature),
                        _ => {}
                    }
                }
            }
            ProviderEvent::BlockText { index, text } => {
                if let Some(block) = blocks.get(index) {
                    match message.content.get_mut(block.content_index) {
                        Some(ContentBlock::Text(t)) => t.text = text.into(),
                        Some(ContentBlock::Thinking(t)) => t.thinking = text,
                        _ => {}
                    }
                }
            }
            ProviderEvent::Redacted { index } => {
                out.fields_changed = true;
                if let Some(block) = blocks.get(index)
                    && let Some(ContentBlock::Thinking(t)) = message.content.get_mut(block.content_index)
                {
                    t.redacted = true;
                }
            }
            ProviderEvent::BlockEnd { index } => {
                if let Some(block) = blocks.get_mut(index)
                    && block.open
                {
                    block.open = false;
                    let stream_event = close_block(&mut message, block);
                    out.update(stream_event);
                }
            }
            ProviderEvent::Usage(usage) => {
                let mut usage = usage;
                if usage.total_tokens == 0 {
                    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
                }
                usage.cost = model.cost_of(&usage);
                message.usage = *usage;
                out.usage = Arc::new(message.usage.clone());
                out.fields_changed = true;
            }
            ProviderEvent::MessageField { key, value } => {
                message.extra.insert(key, *value);
            }
            ProviderEvent::Stop { reason, raw } => {
                message.stop_reason = reason;
                message.raw_stop_reason = raw;
                stopped = true;
                out.fields_changed = true;
            }
            ProviderEvent::ErrorStop { raw, message: error_message } => {
                message.stop_reason = StopReason::Error;
                message.raw_stop_reason = raw;
                if error_message.is_some() {
                    message.error_message = error_message;
                }
                stopped = true;
                out.fields_changed = true;
            }
        }
    }

    match &error {
        Some(e) if e.kind == ProviderErrorKind::Aborted => {
            // Close what was open so clients see the partial text end cleanly.
            for block in blocks.in_order() {
                if block.open {
                    block.open = false;
                    let stream_event = close_block(&mut message, block);
                    out.update(stream_event);
                }
            }
            message.stop_reason = StopReason::Aborted;
            // pi's wording differs by whether the answer had begun.
            message.error_message = Some(if opened { e.message.clone() } else { ABORTED_BEFORE_ANSWER.to_string() });
        }
        Some(e) => {
            for block in blocks.in_order().filter(|b| b.open) {
                finish_tool_args(&mut message, block);
            }
            message.stop_reason = StopReason::Error;
            message.error_message = Some(e.message.clone());
        }
        None => {
            for block in blocks.in_order() {
                if block.open {
                    block.open = false;
                    let stream_event = close_block(&mut message, block);
                    out.update(stream_event);
                }
            }
            if !stopped && message.tool_calls().next().is_some() {
                message.stop_reason = StopReason::ToolUse;
            }
        }
    }
    // pi 1.6 times every reply and records the level it was asked for.
    message.duration_ms = Some(started.elapsed().as_millis() as u64);
    message.thinking_level = Some(thinking_level);
    if !opened {
        out.push(AgentEvent::MessageStart { message: Box::new(AgentMessage::Assistant(message.clone())) });
    }
    out.push(AgentEvent::MessageEnd { message: Box::new(AgentMessage::Assistant(message.clone())) });
    out.flush(&message, stopped).await;
    StreamOutcome { message, error }
}

/// Let the other ready tasks of the runtime run once: this task is woken
/// at once, so it is polled again after the tasks already queued.
async fn yield_once() {
    let mut woken = false;
    std::future::poll_fn(|cx| {
        if woken {
            return Poll::Ready(());
        }
        woken = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

/// The error of a call aborted before its answer began (pi's words).
pub const ABORTED_BEFORE_ANSWER: &str = "Request aborted";

/// Most events held back while the provider's next event is already at hand.
const MAX_BATCH: usize = 256;

/// The events made from the provider events at hand, not yet emitted: they
/// go to the emitter together, in order, before the stream waits or ends.
struct Batch<'a> {
    emitter: Option<&'a dyn EventSink>,
    events: Vec<AgentEvent>,
    /// The message's usage as last reported, sent with each update.
    usage: Arc<Usage>,
    /// The message's own fields (response id, usage, stop reason,
    /// signatures) changed since the last flush: a sink that shows the
    /// message gets them even from a read that made no event.
    fields_changed: bool,
}

impl Batch<'_> {
    fn push(&mut self, event: AgentEvent) {
        if self.emitter.is_some() {
            self.events.push(event);
        }
    }

    fn update(&mut self, event: AssistantStreamEvent) {
        self.push(AgentEvent::MessageUpdate { event, usage: self.usage.clone() });
    }

    /// Whether a flush would hand anything on.
    fn has_news(&self) -> bool {
        self.emitter.is_some() && (!self.events.is_empty() || self.fields_changed)
    }

    /// [`Batch::flush`], or with a `gate` (an extension listens to each
    /// stream event): once the events reached their handlers the gate opens
    /// and the body is read on into `ahead` until the handlers are done, as
    /// pi-ai reads on while the agent awaits its handlers.
    async fn flush_gated(
        &mut self,
        message: &AssistantMessage,
        stopped: bool,
        gate: Option<&ReadGate>,
        stream: &mut ProviderStream,
        ahead: &mut VecDeque<Option<Result<ProviderEvent, ProviderError>>>,
    ) {
        let Some(gate) = gate else { return self.flush(message, stopped).await };
        let Some(emitter) = self.emitter.filter(|_| self.has_news()) else { return gate.open() };
        self.fields_changed = false;
        let events = std::mem::take(&mut self.events);
        let handed_over = || gate.open();
        let mut emitted = emitter.emit_streamed_reading_on(events, message, stopped, &handed_over);
        // Not past the stream's end or error.
        let mut ended = matches!(ahead.back(), Some(None | Some(Err(_))));
        std::future::poll_fn(|cx| {
            if emitted.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            while gate.is_open() && !ended {
                let Poll::Ready(next) = stream.poll_next_unpin(cx) else { break };
                ended = !matches!(next, Some(Ok(_)));
                ahead.push_back(next);
            }
            Poll::Pending
        })
        .await;
    }

    /// Hand the events on, with the message as it stands after them.
    async fn flush(&mut self, message: &AssistantMessage, stopped: bool) {
        if let Some(emitter) = self.emitter
            && self.has_news()
        {
            self.fields_changed = false;
            // The next batch is likely as long: room for it at once (no
            // regrowth, no move of the events already in).
            let capacity = self.events.len();
            let events = std::mem::replace(&mut self.events, Vec::with_capacity(capacity));
            // Without a wait (nor the boxed future of `emit_all`) when the sink has room.
            if let Err(events) = emitter.try_emit_streamed(events, message, stopped)
                && !events.is_empty()
            {
                emitter.emit_streamed(events, message, stopped).await;
            }
        }
    }
}

/// Parse a call's streamed arguments once its block is over. Text that is
/// not one JSON value (cut off by the token limit, or broken) is not guessed
/// at: the call gets `{}` and an `argumentsError`, and is never executed.
fn finish_tool_args(message: &mut AssistantMessage, block: &Block) {
    if let Some(ContentBlock::ToolCall(call)) = message.content.get_mut(block.content_index) {
        match complete_tool_arguments(&block.args) {
            Ok(arguments) => call.arguments = arguments,
            Err(error) => {
                call.arguments = Value::Object(Map::new());
                call.arguments_error = Some(format!("{error}\n\nReceived arguments:\n{}", block.args));
            }
        }
    }
}

/// Close a block and build its `*_end` event.
fn close_block(message: &mut AssistantMessage, block: &Block) -> AssistantStreamEvent {
    let content_index = block.content_index;
    finish_tool_args(message, block);
    match message.content.get(content_index) {
        Some(ContentBlock::Text(t)) => AssistantStreamEvent::TextEnd { content_index, content: t.text.to_string() },
        Some(ContentBlock::Thinking(t)) => {
            AssistantStreamEvent::ThinkingEnd { content_index, content: t.thinking.clone() }
        }
        Some(ContentBlock::ToolCall(c)) => {
            AssistantStreamEvent::ToolCallEnd { content_index, tool_call: Box::new(c.clone()) }
        }
        _ => AssistantStreamEvent::TextEnd { content_index, content: String::new() },
    }
}

/// Complete tool arguments: empty means `{}`; otherwise one JSON value, with
/// only pi's repair of raw control characters and bad escapes inside strings
/// (never closing what was left open).
pub fn complete_tool_arguments(raw: &str) -> Result<Value, serde_json::Error> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    crate::provider::shared::parse_json_with_repair(raw)
}

#[cfg(test)]
mod tests;
