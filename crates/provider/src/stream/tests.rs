//! Unit tests of the stream consumer: batches, stop reasons read mid-stream, aborts.

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
async fn stream_into(sink: &dyn EventSink, provider: Arc<dyn Provider>, cancel: CancellationToken) -> StreamOutcome {
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
        let [AgentEvent::MessageStart { message: start }, AgentEvent::MessageEnd { message: end }] = events.as_slice()
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
