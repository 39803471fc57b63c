//! Notifications pi 1.6.0 awaits ([`protocol::AWAITED_EVENTS`]): each
//! subscriber that awaits them gets the event as a request and answers once
//! its handlers are done, one extension after the other in load order,
//! before the caller goes on (writes the event to the client, answers the
//! command). Nothing is asked when no extension awaits the event. One pi
//! emits without awaiting it (`thinking_level_select`) runs the same way
//! aside, its caller told once the first handlers started.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::process::CallError;
use super::{Extensions, protocol};
use crate::event::AgentEvent;

impl Extensions {
    /// Whether some live extension awaits the handlers of `name`.
    pub fn awaits(&self, name: &str) -> bool {
        !self.is_empty() && self.list().iter().any(|e| e.awaits(name))
    }

    /// Whether some live extension awaits the handlers of `event`.
    pub fn awaits_event(&self, event: &AgentEvent) -> bool {
        !self.is_empty() && protocol::event_name(event).is_some_and(|name| self.awaits(name))
    }

    /// Run the handlers of the extensions that await the core `event`, each to its end.
    pub async fn deliver_event(&self, event: &AgentEvent) {
        if !self.awaits_event(event) {
            return;
        }
        if let Some((name, payload)) = protocol::event_payload(event) {
            self.deliver(name, payload).await;
        }
    }

    /// Run the `message_start` / `message_update` handlers of the
    /// extensions that await [`protocol::MESSAGE_STREAM`] for one read of a
    /// streaming reply (`events`, its message's `fields` after it).
    pub async fn deliver_stream(&self, events: &[AgentEvent], fields: Value) {
        if self.awaits(protocol::MESSAGE_STREAM) {
            self.deliver(protocol::MESSAGE_STREAM, protocol::message_stream_payload(events, fields)).await;
        }
    }

    /// [`Extensions::deliver_stream`] while the reply's body is read on:
    /// each host answers once every handler it could run did (the rest wait
    /// on a timer or I/O, as after pi's microtasks), saying whether they are
    /// done. `handed_over` is told at the first that is not, or at the end,
    /// and that one's handlers are then awaited to their end (pi's reader
    /// goes on while the agent awaits them).
    pub async fn deliver_stream_reading_on(
        &self,
        events: &[AgentEvent],
        fields: Value,
        handed_over: &(dyn Fn() + Sync),
    ) {
        let name = protocol::MESSAGE_STREAM;
        let payload = protocol::message_stream_payload(events, fields);
        let mut told = false;
        for ext in self.list().iter().filter(|e| e.awaits(name)) {
            let waiting = match ext.call(protocol::STREAM_DISPATCH, payload.clone(), None).await {
                Ok(answer) => answer.get("done") != Some(&Value::Bool(true)),
                Err(CallError::Dead(_) | CallError::Cancelled) => false,
                Err(CallError::Failed(error)) => {
                    self.report(ext, name, error).await;
                    false
                }
            };
            if !waiting {
                continue;
            }
            if !std::mem::replace(&mut told, true) {
                handed_over();
            }
            if let Err(CallError::Failed(error)) = ext.call(protocol::STREAM_DRAIN, Value::Null, None).await {
                self.report(ext, name, error).await;
            }
        }
        if !told {
            handed_over();
        }
    }

    /// Run the handlers of `name` (payload `{"type": name, …}`) of each
    /// extension that awaits them, in load order, each to its end (or its
    /// extension's timeout: a hung handler stops its extension, not the
    /// session). A failed call is reported as the event's error.
    pub async fn deliver(&self, name: &str, payload: Value) {
        for ext in self.list().iter().filter(|e| e.awaits(name)) {
            match ext.call(protocol::AWAITED_EVENT, payload.clone(), None).await {
                Ok(_) | Err(CallError::Dead(_) | CallError::Cancelled) => {}
                Err(CallError::Failed(error)) => self.report(ext, name, error).await,
            }
        }
    }

    /// The first live extension (its id) that awaits the handlers of `name`, in load order.
    pub fn first_awaiting(&self, name: &str) -> Option<usize> {
        self.list().iter().find(|e| e.awaits(name)).map(|e| e.id)
    }

    /// Run the handlers of `name`, which pi emits without awaiting them
    /// (`thinking_level_select`), as pi's emit runs them: each awaiting
    /// extension's in load order beside its other work, the next
    /// extension's once the ones before are done. `started` is told once
    /// the first extension's handlers ran up to their first wait. `own`:
    /// extension `id` started its handlers itself as run `run` (its own
    /// `pi.setThinkingLevel()`, see [`Extensions::new_unawaited_run`]), not asked again.
    pub async fn deliver_unawaited(
        &self,
        name: &str,
        payload: Value,
        own: Option<(usize, u64)>,
        started: oneshot::Sender<()>,
    ) {
        let mut started = Some(started);
        for ext in self.list().iter().filter(|e| e.awaits(name)) {
            let run = match own {
                Some((id, run)) if id == ext.id => run,
                _ => {
                    let run = Self::new_unawaited_run();
                    match ext.call(protocol::UNAWAITED_STARTED, json!({"run": run, "event": payload}), None).await {
                        Ok(_) => run,
                        Err(CallError::Dead(_) | CallError::Cancelled) => continue,
                        Err(CallError::Failed(error)) => {
                            self.report(ext, name, error).await;
                            continue;
                        }
                    }
                }
            };
            if let Some(started) = started.take() {
                let _ = started.send(());
            }
            // Not bounded by the call timeout: pi does not await these handlers, a slow one only holds the next.
            match ext.call_streaming(protocol::UNAWAITED_FINISHED, json!({"run": run}), None).await {
                Ok(_) | Err(CallError::Dead(_) | CallError::Cancelled) => {}
                Err(CallError::Failed(error)) => self.report(ext, name, error).await,
            }
        }
        if let Some(started) = started {
            let _ = started.send(());
        }
    }

    /// A new run of handlers pi does not await, for [`Extensions::deliver_unawaited`].
    pub fn new_unawaited_run() -> u64 {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        RUNS.fetch_add(1, Ordering::Relaxed) + 1
    }
}
