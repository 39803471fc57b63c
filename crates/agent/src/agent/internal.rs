//! Messages from the agent's background tasks (run, bash, compaction) back to the actor.

use tokio::sync::{mpsc, oneshot};

use super::extension_state::ExtSignal;
use crate::error::CoreError;
use crate::event::{AgentEvent, EventSink};
use crate::extensions::{HostSignal, SignalSink};
use crate::message::AgentMessage;
use crate::op::{BashResult, Reply, RequestTag};

/// Which queue a run pulls from at a turn boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    Steering,
    FollowUp,
}

/// A queued message taken for delivery, with both queues as they stand once
/// it is delivered (the `queue_update` that precedes it, as pi 1.6.0 sends
/// one per delivered message).
#[derive(Debug)]
pub struct Delivered {
    pub message: AgentMessage,
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// A message from a background task to the actor.
#[derive(Debug)]
pub enum Internal {
    /// Forward an event to the output (the actor updates its state from it first).
    /// Boxed, as the other large variants: this enum moves through a channel.
    Event(Box<AgentEvent>),
    /// Several events, handled as if each came as an [`Internal::Event`], in order.
    Events(Vec<AgentEvent>),
    /// The events of one read of a streaming reply, as [`Internal::Events`],
    /// with the fields of its message as they stand after them (see
    /// `streamed_message_fields`), for extensions that handle its events.
    Streamed(Vec<AgentEvent>, Box<serde_json::Value>),
    /// Take queued messages (per the queue's mode); the actor emits nothing yet.
    TakeQueued { kind: QueueKind, reply: oneshot::Sender<Vec<Delivered>> },
    /// Emit a `queue_update` with the current queues.
    QueueChanged,
    /// The conversation as the model sees it now (the actor owns it; a run
    /// reads it before each model call instead of keeping a copy).
    Context { reply: oneshot::Sender<Vec<AgentMessage>> },
    /// A failed attempt will be retried: drop it from the conversation
    /// (it stays in the session file).
    RetractFromContext { message: Box<AgentMessage> },
    /// The run is about to emit `agent_settled` (its handlers may run meanwhile).
    RunSettling { run_id: u64 },
    /// The run task is done (after `agent_settled`).
    RunFinished { run_id: u64 },
    /// Compaction checks and results (see `compacting`).
    Compaction(Box<super::compaction_msg::CompactionMsg>),
    /// An RPC `bash` finished (or could not start).
    BashFinished { tag: Option<RequestTag>, outcome: Box<Result<(BashResult, AgentMessage), String>> },
    /// Extension work: host signals, finished commands and hooks.
    Extension(Box<ExtSignal>),
    /// The messages still pending at a boundary (`turn_end`, `agent_before_settle`).
    BoundaryPending { reply: oneshot::Sender<crate::extensions::boundary::PendingMessages> },
    /// Append the drafts of boundary `event`; the answer is whether the
    /// conversation can take one more model request.
    CommitBoundary { event: &'static str, entries: Vec<serde_json::Value>, reply: oneshot::Sender<bool> },
    /// A run's start is prepared (its `before_agent_start` handlers ran):
    /// the restored tools not registered by now are dropped, as pi's
    /// `_startRun` drops them after `_prepareRun`.
    RunPrepared,
    /// The tools the model gets now (an extension changed them during a run).
    CurrentTools { reply: oneshot::Sender<ToolSet> },
    /// The tools a running tool may call now (nested calls).
    CallableTools { reply: oneshot::Sender<Callable> },
    /// Answered once every message sent before it is handled (the events
    /// before it have reached the extensions).
    Flush { reply: oneshot::Sender<()> },
    /// A provider's current credential for an MCP server's `auth.provider`
    /// (see `actor::mcp_provider_token`).
    ProviderToken { provider: String, reply: oneshot::Sender<Option<String>> },
    /// A login started by `Op::Login` has news (see `login_ops`).
    Login(Box<LoginMsg>),
    /// Prompt-cache warming has news (see `cache_warmer`).
    CacheWarming(Box<super::cache_warmer::WarmMsg>),
    /// A running tool reads or appends the session (see `session_link`).
    Session(Box<super::session_link::SessionRequest>),
}

/// News of a login, from its task to the actor.
#[derive(Debug)]
pub enum LoginMsg {
    Started { tag: Option<RequestTag>, result: Result<Reply, CoreError> },
    Finished { provider: String, error: Option<String> },
}

/// The tools of a model request, their specs, the prompt sections for them,
/// the inactive tools codemode and `tool_search` reach, and the names of the
/// active tools (MCP tools among them).
pub struct ToolSet(
    pub crate::tools::ToolRegistry,
    pub Vec<crate::provider::ToolSpec>,
    pub crate::system_prompt::Sections,
    pub Vec<std::sync::Arc<dyn crate::tools::Tool>>,
    pub std::sync::Arc<Vec<String>>,
);

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.names()).finish()
    }
}

/// The tools a running tool may call, and their specs.
pub struct Callable(pub crate::tools::ToolRegistry, pub Vec<crate::provider::ToolSpec>);

impl std::fmt::Debug for Callable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.names()).finish()
    }
}

/// Sends events (and other messages) from a task to the actor.
#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::Sender<Internal>,
    /// A run's emitter: extensions' `message_end` handlers may replace each
    /// finalized message before it goes out, and the handlers pi awaits run
    /// before their event goes out ([`Emitter::with_message_end_hooks`]).
    hooks: Option<std::sync::Arc<RunHandlers>>,
}

/// The extensions' handlers a run's events wait for, and the last
/// replacement the `message_end` ones made.
pub(crate) struct RunHandlers {
    extensions: crate::extensions::Extensions,
    cancel: tokio_util::sync::CancellationToken,
    replaced: std::sync::Mutex<Option<AgentMessage>>,
}

impl Emitter {
    pub(crate) fn new(tx: mpsc::Sender<Internal>) -> Self {
        Emitter { tx, hooks: None }
    }

    /// This emitter, with pi's `message_end` handlers run on each
    /// `message_end` it emits (when an extension has some): the event, and
    /// so the session and later requests, carry what they return. The
    /// sender takes the replacement back with [`Emitter::replaced`]. The
    /// other events whose handlers pi awaits (`turn_start`, `message_start`,
    /// the tool execution events, …) go out once the handlers of the
    /// extensions that await them are done.
    pub(crate) fn with_message_end_hooks(
        &self,
        extensions: crate::extensions::Extensions,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        let hooks = RunHandlers { extensions, cancel, replaced: std::sync::Mutex::new(None) };
        Emitter { tx: self.tx.clone(), hooks: Some(std::sync::Arc::new(hooks)) }
    }

    /// `message`, or what the `message_end` handlers replaced it with when
    /// it was the last message this emitter ended.
    pub(crate) fn replaced(&self, message: AgentMessage) -> AgentMessage {
        let Some(hooks) = &self.hooks else { return message };
        let taken = hooks.replaced.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        taken.unwrap_or(message)
    }

    /// The handlers `event` waits for before it goes out, if any.
    fn hooked(&self, event: &AgentEvent) -> Option<&RunHandlers> {
        let hooks = self.hooks.as_deref()?;
        let waits = match event {
            AgentEvent::MessageEnd { .. } => hooks.extensions.listens("message_end_hook"),
            _ => hooks.extensions.awaits_event(event),
        };
        waits.then_some(hooks)
    }

    /// The handlers a streaming reply's reads wait for (extensions that
    /// await [`crate::extensions::protocol::MESSAGE_STREAM`]), if any.
    fn awaits_stream(&self) -> Option<&RunHandlers> {
        let hooks = self.hooks.as_deref()?;
        hooks.extensions.awaits(crate::extensions::protocol::MESSAGE_STREAM).then_some(hooks)
    }

    /// `event` once the handlers had it: the events sent before it reach
    /// the extensions first (pi runs handlers in event order).
    async fn through_hooks(&self, hooks: &RunHandlers, event: AgentEvent) -> AgentEvent {
        self.flush().await;
        let AgentEvent::MessageEnd { message } = event else {
            hooks.extensions.deliver_event(&event).await;
            return event;
        };
        match hooks.extensions.message_end(&message, &hooks.cancel).await {
            Some(replacement) => {
                *hooks.replaced.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(replacement.clone());
                AgentEvent::MessageEnd { message: Box::new(replacement) }
            }
            None => AgentEvent::MessageEnd { message },
        }
    }

    /// The fields of the streaming reply `message` after `events` (see
    /// `streamed_message_fields`), when a pi module handles `message_start`
    /// or `message_update`: its host keeps pi's streaming message with them.
    /// At the reply's end its message is final.
    fn stream_fields(
        &self,
        events: &[AgentEvent],
        message: &crate::message::AssistantMessage,
        stopped: bool,
    ) -> Option<Box<serde_json::Value>> {
        let extensions = &self.hooks.as_deref()?.extensions;
        if !extensions.listens(crate::extensions::protocol::MESSAGE_STREAM) {
            return None;
        }
        let ended = events.iter().any(|e| matches!(e, AgentEvent::MessageEnd { .. }));
        let mut fields = super::actor::streamed_message_fields::streamed_message_fields(message, stopped || ended);
        // pi-ai times the reply once its stream is over, before the agent
        // hands on the events of its last read.
        if let (true, Some(ms), Some(map)) = (ended, message.duration_ms, fields.as_object_mut()) {
            map.insert("durationMs".into(), serde_json::json!(ms));
        }
        Some(Box::new(fields))
    }

    /// Emit an event. If the actor is gone the event is dropped: nobody listens.
    pub(crate) async fn emit(&self, event: AgentEvent) {
        let event = match self.hooked(&event) {
            Some(hooks) => self.through_hooks(hooks, event).await,
            None => event,
        };
        let _ = self.tx.send(Internal::Event(Box::new(event))).await;
    }

    /// Once every message sent before is handled: the events emitted so
    /// far have reached the extensions (before a hook they handle in order).
    pub(crate) async fn flush(&self) {
        let (reply, flushed) = oneshot::channel();
        let _ = self.tx.send(Internal::Flush { reply }).await;
        let _ = flushed.await;
    }

    pub(crate) async fn send(&self, msg: Internal) {
        let _ = self.tx.send(msg).await;
    }
}

#[async_trait::async_trait]
impl EventSink for Emitter {
    async fn emit(&self, event: AgentEvent) {
        Emitter::emit(self, event).await;
    }

    /// One message for all of them: one hand-off to the actor, not one per
    /// event (one that waits for handlers goes on its own).
    async fn emit_all(&self, events: Vec<AgentEvent>) {
        if events.iter().any(|e| self.hooked(e).is_some()) {
            let mut batch = Vec::new();
            for event in events {
                if let Some(hooks) = self.hooked(&event) {
                    if !batch.is_empty() {
                        let _ = self.tx.send(Internal::Events(std::mem::take(&mut batch))).await;
                    }
                    let event = self.through_hooks(hooks, event).await;
                    let _ = self.tx.send(Internal::Event(Box::new(event))).await;
                } else {
                    batch.push(event);
                }
            }
            if !batch.is_empty() {
                let _ = self.tx.send(Internal::Events(batch)).await;
            }
            return;
        }
        if !events.is_empty() {
            let _ = self.tx.send(Internal::Events(events)).await;
        }
    }

    /// [`Emitter::emit_all`] when the channel has room (if the actor is
    /// gone the events are dropped, as a `send` drops them).
    fn try_emit_all(&self, events: Vec<AgentEvent>) -> Result<(), Vec<AgentEvent>> {
        if events.is_empty() {
            return Ok(());
        }
        if events.iter().any(|e| self.hooked(e).is_some()) {
            return Err(events);
        }
        match self.tx.try_send(Internal::Events(events)) {
            Err(mpsc::error::TrySendError::Full(Internal::Events(events))) => Err(events),
            _ => Ok(()),
        }
    }

    /// [`Emitter::try_emit_all`], with the message's fields when extensions
    /// keep pi's streaming message (a read that changed only them included).
    fn try_emit_streamed(
        &self,
        events: Vec<AgentEvent>,
        message: &crate::message::AssistantMessage,
        stopped: bool,
    ) -> Result<(), Vec<AgentEvent>> {
        let Some(fields) = self.stream_fields(&events, message, stopped) else { return self.try_emit_all(events) };
        if self.awaits_stream().is_some() || events.iter().any(|e| self.hooked(e).is_some()) {
            return Err(events);
        }
        match self.tx.try_send(Internal::Streamed(events, fields)) {
            Err(mpsc::error::TrySendError::Full(Internal::Streamed(events, _))) => Err(events),
            _ => Ok(()),
        }
    }

    /// [`Emitter::emit_all`], with the message's fields as
    /// [`Emitter::try_emit_streamed`] sends them; a `message_end` that
    /// handlers may replace goes on its own, after the rest.
    async fn emit_streamed(
        &self,
        mut events: Vec<AgentEvent>,
        message: &crate::message::AssistantMessage,
        stopped: bool,
    ) {
        let Some(fields) = self.stream_fields(&events, message, stopped) else { return self.emit_all(events).await };
        let hooked_end =
            matches!(events.last(), Some(end @ AgentEvent::MessageEnd { .. }) if self.hooked(end).is_some());
        let end = if hooked_end { events.pop() } else { None };
        if let Some(hooks) = self.awaits_stream() {
            // pi awaits `message_start` / `message_update` handlers: the events before reach them first.
            self.flush().await;
            hooks.extensions.deliver_stream(&events, (*fields).clone()).await;
        }
        let _ = self.tx.send(Internal::Streamed(events, fields)).await;
        if let Some(end) = end {
            Emitter::emit(self, end).await;
        }
    }

    /// [`Emitter::emit_streamed`], telling `handed_over` once the events
    /// reached the extensions: the handlers pi awaits once they ran up to
    /// their first wait (pi's reader goes on meanwhile), the others' once
    /// the actor sent them (in order before any later stream event).
    async fn emit_streamed_reading_on(
        &self,
        events: Vec<AgentEvent>,
        message: &crate::message::AssistantMessage,
        stopped: bool,
        handed_over: &(dyn Fn() + Sync),
    ) {
        let awaited = self.awaits_stream().zip(self.stream_fields(&events, message, stopped));
        let Some((hooks, fields)) = awaited else {
            self.emit_streamed(events, message, stopped).await;
            self.flush().await;
            return handed_over();
        };
        // The events before reach the extensions first.
        self.flush().await;
        hooks.extensions.deliver_stream_reading_on(&events, (*fields).clone(), handed_over).await;
        let _ = self.tx.send(Internal::Streamed(events, fields)).await;
    }
}

/// Host signals go straight into the actor's internal queue.
pub(super) struct ActorSink(pub mpsc::Sender<Internal>);

#[async_trait::async_trait]
impl SignalSink for ActorSink {
    async fn deliver(&self, signal: HostSignal) -> bool {
        self.0.send(Internal::Extension(Box::new(ExtSignal::Host(signal)))).await.is_ok()
    }
}
