//! The actor driven directly (no subprocess, no wire): queueing, retry,
//! compaction and session switches on the scripted faux provider, with
//! paused time so backoffs and slow streams cost nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{AgentConfig, AgentHandle, Output, Outputs, SessionStart, SystemPromptOptions, spawn, spawn_batched};
use crate::config::{ModelRegistry, Settings};
use crate::error::{CoreError, ErrorKind};
use crate::event::{AgentEvent, CompactionReason};
use crate::message::AgentMessage;
use crate::op::{Disposition, Op, Reply, StreamingBehavior, Switched};
use crate::provider::ProviderRegistry;
use crate::provider::faux::{FauxError, FauxProvider, FauxReply};
use crate::tools::ToolRegistry;

struct Actor {
    handle: AgentHandle,
    outputs: mpsc::Receiver<Output>,
    faux: FauxProvider,
    /// Everything seen so far, in order.
    seen: Vec<Output>,
    next_tag: u64,
    _dir: tempfile::TempDir,
}

fn start(edit: impl FnOnce(&mut Settings)) -> Actor {
    start_with(edit, None)
}

/// Started with [`spawn_batched`]: its outputs are unpacked in order, the
/// size of each hand-off (1 for an output alone) recorded in `sizes`.
fn start_batched(sizes: Arc<std::sync::Mutex<Vec<usize>>>) -> Actor {
    start_with(|_| {}, Some(sizes))
}

fn start_with(edit: impl FnOnce(&mut Settings), batched: Option<Arc<std::sync::Mutex<Vec<usize>>>>) -> Actor {
    let dir = tempfile::tempdir().unwrap();
    let faux = FauxProvider::default();
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(faux.clone()));
    let mut settings = Settings::default();
    edit(&mut settings);
    let config = AgentConfig {
        agent_dir: dir.path().join("agent"),
        cwd: dir.path().to_path_buf(),
        settings,
        models: ModelRegistry::default(),
        providers,
        tools: ToolRegistry::builtin(),
        active_tools: Vec::new(),
        session: SessionStart::InMemory,
        session_dir: dir.path().join("sessions"),
        session_dir_explicit: true,
        provider: None,
        model: None,
        thinking: None,
        api_key: None,
        system_prompt: SystemPromptOptions::default(),
        session_name: None,
        persist_settings: false,
        temp_dir: dir.path().to_path_buf(),
        resources: Default::default(),
        extensions: Default::default(),
        model_scope: Vec::new(),
        mcp: Default::default(),
        client: Default::default(),
        session_fence: None,
        catalog_refreshes: None,
    };
    let Some(sizes) = batched else {
        let (handle, outputs) = spawn(config).unwrap();
        return Actor { handle, outputs, faux, seen: Vec::new(), next_tag: 1, _dir: dir };
    };
    let (handle, mut batches) = spawn_batched(config).unwrap();
    let (unpacked, outputs) = mpsc::channel(1024);
    tokio::spawn(async move {
        while let Some(batch) = batches.recv().await {
            let outputs = match batch {
                Outputs::One(output) => vec![output],
                Outputs::Events(events) => events.into_iter().map(Output::Event).collect(),
            };
            sizes.lock().unwrap().push(outputs.len());
            for output in outputs {
                unpacked.send(output).await.unwrap();
            }
        }
    });
    Actor { handle, outputs, faux, seen: Vec::new(), next_tag: 1, _dir: dir }
}

fn prompt(text: &str) -> Op {
    Op::Prompt { message: text.into(), images: Vec::new(), streaming_behavior: None }
}

fn slow(text: &str, delay_ms: u64) -> FauxReply {
    FauxReply { text: Some(text.into()), delay_ms, ..FauxReply::default() }
}

fn failing(message: &str) -> FauxReply {
    let error = FauxError::Detailed { message: message.into(), kind: Some("transient".into()), retry_after_ms: None };
    FauxReply { error: Some(error), ..FauxReply::default() }
}

impl Actor {
    /// Submit with a tag (answered later: see [`Actor::reply`]).
    async fn submit(&mut self, op: Op) -> u64 {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.handle.submit(Some(tag), op).await.unwrap();
        tag
    }

    async fn next(&mut self) -> Output {
        let output = tokio::time::timeout(Duration::from_secs(600), self.outputs.recv()).await.unwrap().unwrap();
        self.seen.push(output.clone());
        output
    }

    /// Read until the reply to `tag`.
    async fn reply(&mut self, tag: u64) -> Result<Reply, CoreError> {
        loop {
            if let Output::Reply { tag: t, result } = self.next().await
                && t == tag
            {
                return result;
            }
        }
    }

    async fn call(&mut self, op: Op) -> Result<Reply, CoreError> {
        let tag = self.submit(op).await;
        self.reply(tag).await
    }

    /// Read until an event matches; returns it.
    async fn until(&mut self, pred: impl Fn(&AgentEvent) -> bool) -> AgentEvent {
        loop {
            if let Output::Event(event) = self.next().await
                && pred(&event)
            {
                return event;
            }
        }
    }

    fn events(&self) -> Vec<&AgentEvent> {
        self.seen
            .iter()
            .filter_map(|o| match o {
                Output::Event(e) => Some(e),
                Output::Reply { .. } => None,
            })
            .collect()
    }

    /// Position of the first output matching `pred` (panics when none does).
    fn position(&self, pred: impl Fn(&Output) -> bool) -> usize {
        self.seen.iter().position(pred).unwrap()
    }

    async fn messages(&mut self) -> Vec<AgentMessage> {
        match self.call(Op::GetMessages).await {
            Ok(Reply::Messages(messages)) => messages.to_vec(),
            other => panic!("{other:?}"),
        }
    }
}

fn user_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::User(u) => Some(u.content.text()),
            _ => None,
        })
        .collect()
}

fn settled(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::AgentSettled { .. })
}

#[tokio::test(start_paused = true)]
async fn a_batched_front_end_gets_a_run_s_events_together_and_in_the_same_order() {
    let sizes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut runs = Vec::new();
    for mut actor in [start(|_| {}), start_batched(sizes.clone())] {
        let words: Vec<String> = (0..300).map(|i| format!("w{i} ")).collect();
        actor.faux.push(FauxReply { text: Some(words.concat()), ..FauxReply::default() });
        actor.call(prompt("go")).await.unwrap();
        actor.until(settled).await;
        assert_eq!(actor.call(Op::GetState).await.map(|r| matches!(r, Reply::State(_))), Ok(true));
        // What each output is, and the text of the deltas (the messages' times differ).
        let seen: Vec<String> = actor
            .seen
            .iter()
            .map(|output| match output {
                Output::Event(AgentEvent::MessageUpdate { event, .. }) => format!("{event:?}"),
                Output::Event(event) => format!("{:?}", event.kind()),
                Output::Reply { tag, result } => format!("reply {tag} {}", result.is_ok()),
            })
            .collect();
        runs.push(seen);
    }
    assert!(runs[0].iter().filter(|s| s.contains("TextDelta")).count() > 10, "{:?}", runs[0]);
    assert_eq!(runs[0], runs[1]);
    // The deltas at hand came in hand-offs of several events.
    let sizes = sizes.lock().unwrap();
    assert!(sizes.iter().any(|&n| n > 10), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), runs[1].len());
}

#[tokio::test(start_paused = true)]
async fn steering_and_follow_ups_are_delivered_in_their_turn() {
    let mut actor = start(|_| {});
    actor.faux.push(slow("a long first answer in many words", 1000));
    assert_eq!(actor.call(prompt("go")).await, Ok(Reply::Prompt(Disposition::Started)));
    let follow = Op::FollowUp { message: "later".into(), images: Vec::new() };
    assert_eq!(actor.call(follow).await, Ok(Reply::Prompt(Disposition::Queued)));
    let steer =
        Op::Prompt { message: "now".into(), images: Vec::new(), streaming_behavior: Some(StreamingBehavior::Steer) };
    assert_eq!(actor.call(steer).await, Ok(Reply::Prompt(Disposition::Queued)));
    let busy = actor.call(prompt("unqueued")).await.unwrap_err();
    assert_eq!(busy.kind, ErrorKind::Busy);
    match actor.call(Op::GetState).await {
        Ok(Reply::State(s)) => assert!(s.is_streaming && s.pending_message_count == 2, "{s:?}"),
        other => panic!("{other:?}"),
    }
    actor.until(settled).await;
    let queue_updates = actor.events().iter().filter(|e| matches!(e, AgentEvent::QueueUpdate { .. })).count();
    assert!(queue_updates >= 4, "{queue_updates} queue updates");
    assert_eq!(user_texts(&actor.messages().await), ["go", "now", "later"]);
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_is_retried_after_the_backoff_and_leaves_the_conversation() {
    let mut actor = start(|_| {});
    actor.faux.push(failing("500 upstream exploded"));
    let started = tokio::time::Instant::now();
    actor.call(prompt("hello")).await.unwrap();
    actor.until(settled).await;
    assert!(started.elapsed() >= Duration::from_millis(2000), "{:?}", started.elapsed());
    let retry: Vec<&AgentEvent> = actor
        .events()
        .into_iter()
        .filter(|e| matches!(e, AgentEvent::AutoRetryStart { .. } | AgentEvent::AutoRetryEnd { .. }))
        .collect();
    assert!(
        matches!(
            retry[..],
            [
                AgentEvent::AutoRetryStart { attempt: 1, delay_ms: 2000, .. },
                AgentEvent::AutoRetryEnd { success: true, attempt: 1, .. }
            ]
        ),
        "{retry:?}"
    );
    let messages = actor.messages().await;
    // The system message, the prompt and the answer that came through.
    assert_eq!(messages.len(), 3, "the failed attempt is out of the conversation: {messages:?}");
    assert!(matches!(messages[0], AgentMessage::System(_)), "{messages:?}");
    assert!(messages[2].as_assistant().is_some_and(|a| a.error_message.is_none()));
}

#[tokio::test(start_paused = true)]
async fn abort_retry_ends_the_wait_and_is_answered_once_the_run_settles() {
    let mut actor = start(|_| {});
    actor.faux.push(failing("503 overloaded"));
    actor.faux.push(failing("503 overloaded"));
    actor.call(prompt("hello")).await.unwrap();
    actor.until(|e| matches!(e, AgentEvent::AutoRetryStart { .. })).await;
    let tag = actor.submit(Op::AbortRetry).await;
    assert_eq!(actor.reply(tag).await, Ok(Reply::Ack));
    let end = actor.position(|o| {
        matches!(o, Output::Event(AgentEvent::AutoRetryEnd { success: false, final_error: Some(e), .. }) if e == "Retry cancelled")
    });
    // pi 1.6.0 settles a run whose retries were cancelled as not aborted.
    let settled_at = actor.position(|o| matches!(o, Output::Event(AgentEvent::AgentSettled { aborted: false, .. })));
    let answered = actor.position(|o| matches!(o, Output::Reply { tag: t, .. } if *t == tag));
    assert!(end < settled_at && settled_at < answered, "{:?}", actor.seen);
    assert_eq!(actor.faux.remaining(), 1, "no second attempt was made");
}

#[tokio::test(start_paused = true)]
async fn compact_refuses_prompts_meanwhile_and_answers_with_the_summary() {
    let mut actor = start(|s| s.compaction.keep_recent_tokens = 5);
    for text in ["first question with some words", "second question with more words"] {
        actor.call(prompt(text)).await.unwrap();
        actor.until(settled).await;
    }
    actor.faux.push(slow("SUMMARY of the talk", 500));
    let compact = actor.submit(Op::Compact { custom_instructions: None }).await;
    let refused = actor.call(prompt("too soon")).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Busy);
    match actor.call(Op::GetState).await {
        Ok(Reply::State(s)) => assert!(s.is_compacting && !s.is_streaming, "{s:?}"),
        other => panic!("{other:?}"),
    }
    let result = match actor.reply(compact).await {
        Ok(Reply::Compaction(result)) => result,
        other => panic!("{other:?}"),
    };
    assert!(result.summary.starts_with("SUMMARY of the talk"), "{}", result.summary);
    let start_at = actor
        .position(|o| matches!(o, Output::Event(AgentEvent::CompactionStart { reason: CompactionReason::Manual })));
    let end_at = actor.position(|o| matches!(o, Output::Event(AgentEvent::CompactionEnd { result: Some(_), .. })));
    let reply_at = actor.position(|o| matches!(o, Output::Reply { tag, .. } if *tag == compact));
    assert!(start_at < end_at && end_at < reply_at);
    let messages = actor.messages().await;
    // The compaction's checkpoint of the system messages, then its summary.
    assert!(matches!(messages[..], [AgentMessage::System(_), AgentMessage::CompactionSummary(_), ..]), "{messages:?}");
}

#[tokio::test(start_paused = true)]
async fn a_session_switch_during_a_run_ends_the_run_first() {
    let mut actor = start(|_| {});
    actor.faux.push(slow("a slow answer that will not finish", 1000));
    actor.call(prompt("go")).await.unwrap();
    actor.until(|e| matches!(e, AgentEvent::MessageUpdate { .. })).await;
    let switch = actor.submit(Op::NewSession { parent_session: None }).await;
    assert_eq!(actor.reply(switch).await, Ok(Reply::Switched(Switched::new(false))));
    let settled_at = actor.position(|o| matches!(o, Output::Event(AgentEvent::AgentSettled { aborted: true, .. })));
    let answered = actor.position(|o| matches!(o, Output::Reply { tag, .. } if *tag == switch));
    assert!(settled_at < answered);
    assert!(actor.messages().await.is_empty());
    // The new session takes prompts at once.
    assert_eq!(actor.call(prompt("again")).await, Ok(Reply::Prompt(Disposition::Started)));
}

#[tokio::test(start_paused = true)]
async fn abort_during_a_compaction_cancels_it_and_waits_for_its_end() {
    let mut actor = start(|s| s.compaction.keep_recent_tokens = 5);
    for text in ["first question with some words", "second question with more words"] {
        actor.call(prompt(text)).await.unwrap();
        actor.until(settled).await;
    }
    actor.faux.push(slow("a summary that never finishes", 1000));
    let compact = actor.submit(Op::Compact { custom_instructions: None }).await;
    actor.until(|e| matches!(e, AgentEvent::CompactionStart { .. })).await;
    let abort = actor.submit(Op::Abort).await;
    assert_eq!(actor.reply(abort).await, Ok(Reply::Ack));
    let compact_at = actor.position(
        |o| matches!(o, Output::Reply { tag, result: Err(e) } if *tag == compact && e.kind == ErrorKind::Aborted),
    );
    let abort_at = actor.position(|o| matches!(o, Output::Reply { tag, .. } if *tag == abort));
    assert!(compact_at < abort_at);
    match actor.call(Op::GetState).await {
        Ok(Reply::State(s)) => assert!(!s.is_compacting),
        other => panic!("{other:?}"),
    }
}
