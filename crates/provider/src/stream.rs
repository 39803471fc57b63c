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
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::provider::{ProviderStream, test_support};

    /// Every delta is moved as a provider event, then as an agent event:
    /// the rare big payloads (usage, extra message fields) are boxed so that
    /// a move is a few register copies (256 bytes before).
    #[test]
    fn a_provider_event_stays_small() {
        assert!(std::mem::size_of::<ProviderEvent>() <= 64, "{}", std::mem::size_of::<ProviderEvent>());
    }

    #[test]
    fn only_complete_tool_arguments_parse() {
        assert_eq!(complete_tool_arguments("").unwrap(), serde_json::json!({}));
        assert_eq!(complete_tool_arguments(r#"{"a":1}"#).unwrap(), serde_json::json!({"a": 1}));
        // pi's repair of raw control characters inside strings still applies.
        assert_eq!(complete_tool_arguments("{\"a\":\"x\ny\"}").unwrap(), serde_json::json!({"a": "x\ny"}));
        for cut in [r#"{"command": "echo TRUNC"#, r#"{"a":[1,2"#, r#"{"a":1,}"#, "nonsense", r#"{"a":1}{"#] {
            assert!(complete_tool_arguments(cut).is_err(), "{cut}");
        }
    }

    /// Yields a scripted call, every event at hand, or each only after a wait.
    struct Scripted {
        events: Vec<Result<ProviderEvent, ProviderError>>,
        waits: bool,
    }

    impl Provider for Scripted {
        fn api(&self) -> &'static str {
            "scripted"
        }

        fn stream(&self, _: ProviderRequest, _: CancellationToken) -> ProviderStream {
            let waits = self.waits;
            futures::stream::iter(self.events.clone())
                .then(move |event| async move {
                    if waits {
                        // Longer than the one turn of the runtime the stream gives a
                        // pending provider before its batch goes out.
                        tokio::task::yield_now().await;
                        tokio::task::yield_now().await;
                    }
                    event
                })
                .boxed()
        }
    }

    /// Each call the sink got, as the list of events it carried.
    #[derive(Default)]
    struct Calls(Mutex<Vec<Vec<AgentEvent>>>);

    #[async_trait::async_trait]
    impl EventSink for Calls {
        async fn emit(&self, event: AgentEvent) {
            self.0.lock().unwrap().push(vec![event]);
        }

        async fn emit_all(&self, events: Vec<AgentEvent>) {
            self.0.lock().unwrap().push(events);
        }
    }

    async fn emitted(events: &[Result<ProviderEvent, ProviderError>], waits: bool) -> Vec<Vec<AgentEvent>> {
        let provider = Arc::new(Scripted { events: events.to_vec(), waits });
        emitted_by(provider, CancellationToken::new()).await
    }

    async fn emitted_by(provider: Arc<dyn Provider>, cancel: CancellationToken) -> Vec<Vec<AgentEvent>> {
        let calls = Calls::default();
        stream_into(&calls, provider, cancel).await;
        let mut calls = calls.0.into_inner().unwrap();
        for event in calls.iter_mut().flatten() {
            if let AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } = event
                && let AgentMessage::Assistant(a) = &mut **message
            {
                a.timestamp = 0;
                a.duration_ms = None;
            }
        }
        calls
    }

    #[tokio::test]
    async fn events_at_hand_go_out_together_in_the_same_order() {
        use ProviderEvent::*;
        let text = |index, delta: &str| Ok(BlockDelta { index, delta: delta.into() });
        let call = BlockKind::ToolCall { id: "c1".into(), name: "bash".into() };
        let mut events = vec![
            Ok(ResponseId("r".into())),
            Ok(BlockStart { index: 0, kind: BlockKind::Thinking }),
            text(0, "hm"),
            Ok(BlockEnd { index: 0 }),
            Ok(BlockStart { index: 1, kind: BlockKind::Text }),
        ];
        events.extend((0..600).map(|i| text(1, &format!("t{i} "))));
        events.extend([
            Ok(BlockStart { index: 2, kind: call }),
            text(2, r#"{"command":"ls"}"#),
            Ok(Usage(Box::new(crate::message::Usage { input: 3, output: 600, ..Default::default() }))),
            Ok(Stop { reason: StopReason::ToolUse, raw: None }),
        ]);
        let failing = vec![
            Ok(BlockStart { index: 0, kind: BlockKind::Text }),
            text(0, "a"),
            text(0, "b"),
            Err(ProviderError::new(ProviderErrorKind::Transient, "cut")),
        ];
        for script in [events, failing] {
            let one_by_one = emitted(&script, true).await;
            let at_hand = emitted(&script, false).await;
            let flat = |calls: Vec<Vec<AgentEvent>>| calls.into_iter().flatten().collect::<Vec<_>>();
            assert!(at_hand.len() < one_by_one.len() / 2 || one_by_one.len() < 10);
            assert!(at_hand.iter().all(|call| call.len() <= MAX_BATCH));
            // `message_start` goes out first, with the events at hand when the answer began.
            assert!(matches!(at_hand[0].first(), Some(AgentEvent::MessageStart { .. })));
            assert_eq!(flat(at_hand), flat(one_by_one));
        }
    }

    /// One call of `provider` streamed into `sink`.
    async fn stream_into(
        sink: &dyn EventSink,
        provider: Arc<dyn Provider>,
        cancel: CancellationToken,
    ) -> StreamOutcome {
        let model: Model = serde_json::from_value(serde_json::json!({
            "id": "m", "name": "m", "api": "scripted", "provider": "p", "baseUrl": "", "reasoning": false,
            "input": ["text"], "contextWindow": 1000, "maxTokens": 100,
            "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.0, "cacheWrite": 0.0}
        }))
        .unwrap();
        let request = test_support::simple_request(model.clone(), "hi");
        stream_assistant(Some(sink), provider, request, cancel, &model, None).await
    }

    /// A sink that shows the message: per call, how many events it carried
    /// and the stop reason the message had then, once the provider said it.
    #[derive(Default)]
    struct Shown(Mutex<Vec<(usize, Option<StopReason>)>>);

    #[async_trait::async_trait]
    impl EventSink for Shown {
        async fn emit(&self, _: AgentEvent) {}

        fn try_emit_streamed(
            &self,
            events: Vec<AgentEvent>,
            message: &AssistantMessage,
            stopped: bool,
        ) -> Result<(), Vec<AgentEvent>> {
            self.0.lock().unwrap().push((events.len(), stopped.then_some(message.stop_reason)));
            Ok(())
        }
    }

    /// pi-ai sets a stop reason (and usage) when it reads it: a read that
    /// makes no event but says one goes out at once, with no events.
    #[tokio::test]
    async fn a_stop_reason_read_before_the_end_goes_out_at_once() {
        use ProviderEvent::*;
        let events = vec![
            Ok(BlockStart { index: 0, kind: BlockKind::Text }),
            Ok(BlockDelta { index: 0, delta: "hi".into() }),
            Ok(Stop { reason: StopReason::Length, raw: Some("length".into()) }),
            Ok(Usage(Box::new(crate::message::Usage { input: 3, output: 1, ..Default::default() }))),
            Ok(BlockEnd { index: 0 }),
        ];
        let shown = Shown::default();
        stream_into(&shown, Arc::new(Scripted { events, waits: true }), CancellationToken::new()).await;
        let length = Some(StopReason::Length);
        // message_start + text_start, text_delta, the stop reason, the usage, text_end + message_end.
        assert_eq!(shown.0.into_inner().unwrap(), [(2, None), (1, None), (0, length), (0, length), (2, length)]);
    }

    /// An error stop reason read before the end goes out at once too, with
    /// pi-ai's error message; the call's failure keeps its raw reason.
    #[tokio::test]
    async fn an_error_stop_reason_read_before_the_end_goes_out_at_once_with_its_message() {
        use ProviderEvent::*;
        let raw = Some("content_filter".to_string());
        let events = vec![
            Ok(BlockStart { index: 0, kind: BlockKind::Text }),
            Ok(ErrorStop { raw: raw.clone(), message: Some("filtered".into()) }),
            Ok(BlockEnd { index: 0 }),
            Err(ProviderError::new(ProviderErrorKind::InvalidRequest, "filtered at the end")),
        ];
        let shown = Shown::default();
        let outcome = stream_into(&shown, Arc::new(Scripted { events, waits: true }), CancellationToken::new()).await;
        let error = Some(StopReason::Error);
        // message_start + text_start, the error stop, text_end, message_end.
        assert_eq!(shown.0.into_inner().unwrap(), [(2, None), (0, error), (1, error), (1, error)]);
        let message = outcome.message;
        assert_eq!((message.stop_reason, message.raw_stop_reason), (StopReason::Error, raw));
        assert_eq!(message.error_message.as_deref(), Some("filtered at the end"));
    }

    /// Counts the calls it got and, with each, how often a task of its own
    /// had run by then.
    struct Ticked {
        ticks: Arc<std::sync::atomic::AtomicUsize>,
        seen: Mutex<Vec<usize>>,
    }

    #[async_trait::async_trait]
    impl EventSink for Ticked {
        async fn emit(&self, _: AgentEvent) {
            self.seen.lock().unwrap().push(self.ticks.load(std::sync::atomic::Ordering::SeqCst));
        }

        async fn emit_all(&self, _: Vec<AgentEvent>) {
            self.seen.lock().unwrap().push(self.ticks.load(std::sync::atomic::Ordering::SeqCst));
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_long_run_of_events_at_hand_lets_the_other_tasks_run_between_batches() {
        use ProviderEvent::*;
        use std::sync::atomic::Ordering;
        let mut events = vec![Ok(BlockStart { index: 0, kind: BlockKind::Text })];
        events.extend((0..4 * MAX_BATCH).map(|i| Ok(BlockDelta { index: 0, delta: format!("t{i} ") })));
        events.push(Ok(Stop { reason: StopReason::Stop, raw: None }));
        let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    ticks.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                }
            })
        };
        let model = test_support::simple_request(
            serde_json::from_value(serde_json::json!({
                "id": "m", "name": "m", "api": "scripted", "provider": "p", "baseUrl": "", "reasoning": false,
                "input": ["text"], "contextWindow": 1000, "maxTokens": 100,
                "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.0, "cacheWrite": 0.0}
            }))
            .unwrap(),
            "hi",
        );
        let sink = Ticked { ticks: ticks.clone(), seen: Mutex::new(Vec::new()) };
        // Every event is at hand at once: the stream itself never waits.
        let provider = Arc::new(Scripted { events, waits: false });
        let m = model.model.clone();
        stream_assistant(Some(&sink), provider, model, CancellationToken::new(), &m, None).await;
        ticker.abort();
        let seen = sink.seen.into_inner().unwrap();
        // Full batches went out, and the other task ran between each two of them.
        assert!(seen.len() >= 4, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[1] > w[0]), "the other task did not run between batches: {seen:?}");
    }

    /// Hands its events over one at a time through a one-slot channel from
    /// its own task, as an HTTP connection hands a body's chunks: the next
    /// is at hand once that task has run again. It pauses once, longer than
    /// one turn of the runtime, after `pause_after` events.
    struct Trickles {
        events: Vec<Result<ProviderEvent, ProviderError>>,
        pause_after: usize,
    }

    impl Provider for Trickles {
        fn api(&self) -> &'static str {
            "trickles"
        }

        fn stream(&self, _: ProviderRequest, _: CancellationToken) -> ProviderStream {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let (events, pause_after) = (self.events.clone(), self.pause_after);
            tokio::spawn(async move {
                for (i, event) in events.into_iter().enumerate() {
                    if i == pause_after {
                        for _ in 0..4 {
                            tokio::task::yield_now().await;
                        }
                    }
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
            });
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|event| (event, rx)) }).boxed()
        }
    }

    #[tokio::test]
    async fn a_burst_after_a_pause_still_goes_out_in_batches() {
        use ProviderEvent::*;
        let mut events = vec![Ok(BlockStart { index: 0, kind: BlockKind::Text })];
        events.extend((0..400).map(|i| Ok(BlockDelta { index: 0, delta: format!("t{i} ") })));
        events.push(Ok(Stop { reason: StopReason::Stop, raw: None }));
        for pause_after in [0, 3, 200] {
            let provider = Arc::new(Trickles { events: events.clone(), pause_after });
            let calls = emitted_by(provider, CancellationToken::new()).await;
            let deltas = calls.iter().flatten().filter(|e| matches!(e, AgentEvent::MessageUpdate { .. })).count();
            // Every delta, and far fewer hand-offs than deltas on both sides of the pause.
            assert_eq!(deltas, 402, "pause after {pause_after}");
            assert!(calls.len() < 40, "pause after {pause_after}: {} hand-offs", calls.len());
        }
    }

    /// Its first events, then nothing until the call is cancelled.
    struct Stalls(Vec<ProviderEvent>);

    impl Provider for Stalls {
        fn api(&self) -> &'static str {
            "stalls"
        }

        fn stream(&self, _: ProviderRequest, _: CancellationToken) -> ProviderStream {
            futures::stream::iter(self.0.clone().into_iter().map(Ok)).chain(futures::stream::pending()).boxed()
        }
    }

    #[tokio::test]
    async fn message_start_waits_for_the_answer_and_an_abort_before_it_reads_as_pi_s() {
        for (first, opened) in [(vec![], false), (vec![ProviderEvent::Opened], true)] {
            let cancel = CancellationToken::new();
            let later = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                later.cancel();
            });
            let calls = emitted_by(Arc::new(Stalls(first)), cancel).await;
            let events: Vec<AgentEvent> = calls.into_iter().flatten().collect();
            let [AgentEvent::MessageStart { message: start }, AgentEvent::MessageEnd { message: end }] =
                events.as_slice()
            else {
                panic!("one message_start and its message_end: {events:?}")
            };
            let (AgentMessage::Assistant(start), AgentMessage::Assistant(end)) = (&**start, &**end) else {
                panic!("assistant messages: {events:?}")
            };
            let said = if opened { "Request was aborted" } else { ABORTED_BEFORE_ANSWER };
            assert_eq!(end.error_message.as_deref(), Some(said));
            assert_eq!(end.stop_reason, StopReason::Aborted);
            // Not opened: the message starts at the end, already aborted; opened: it started empty.
            assert_eq!(start.stop_reason, if opened { StopReason::Stop } else { StopReason::Aborted });
        }
    }
}
