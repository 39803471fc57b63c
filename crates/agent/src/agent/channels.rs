//! The actor's channels: the ordered output stream to the front end, and the
//! internal channel on which its background tasks report back.

use tokio::sync::mpsc;

use super::internal::{Emitter, Internal};
use super::{Output, Outputs};
use crate::event::AgentEvent;

/// Capacity of the internal channel (background tasks wait when it is full).
const INTERNAL_CAPACITY: usize = 1024;

/// Where the actor's outputs go: one at a time, or with the events of a
/// background task together ([`super::spawn_batched`]).
pub(super) enum OutputTx {
    One(mpsc::Sender<Output>),
    Batched(mpsc::Sender<Outputs>),
}

/// Where the actor's outputs go and where its background tasks write to it.
pub(super) struct Channels {
    out: OutputTx,
    internal: mpsc::Sender<Internal>,
    /// Taken once, by the actor loop.
    inbox: Option<mpsc::Receiver<Internal>>,
    /// Events are not sent (the extensions still get them) while a command's
    /// `newSession({setup})` runs: pi's front ends listen to the new session
    /// only once its setup is done.
    events_withheld: bool,
}

impl Channels {
    pub(super) fn new(out: OutputTx) -> Self {
        let (internal, inbox) = mpsc::channel(INTERNAL_CAPACITY);
        Channels { out, internal, inbox: Some(inbox), events_withheld: false }
    }

    /// The receiving end of the internal channel (once).
    pub(super) fn take_inbox(&mut self) -> Option<mpsc::Receiver<Internal>> {
        self.inbox.take()
    }

    /// A sender for a background task's messages to the actor.
    pub(super) fn internal(&self) -> mpsc::Sender<Internal> {
        self.internal.clone()
    }

    /// An [`Emitter`] for a background task's events.
    pub(super) fn emitter(&self) -> Emitter {
        Emitter::new(self.internal.clone())
    }

    /// Withhold events from the front end (see `events_withheld`), or send them again.
    pub(super) fn withhold_events(&mut self, withheld: bool) {
        self.events_withheld = withheld;
    }

    /// Queue an output: at once when the channel has room (no waiter is
    /// armed), else waiting for room, exactly as a plain `send` would. A
    /// front end that went away drops it.
    pub(super) async fn send(&self, output: Output) {
        if self.events_withheld && matches!(output, Output::Event(_)) {
            return;
        }
        match &self.out {
            OutputTx::One(out) => send(out, output).await,
            OutputTx::Batched(out) => send(out, Outputs::One(output)).await,
        }
    }

    /// Whether [`Channels::send_events`] hands events over together.
    pub(super) fn batched(&self) -> bool {
        matches!(self.out, OutputTx::Batched(_))
    }

    /// Queue these events as outputs, in order: in one hand-off when the
    /// front end takes them together, else one by one.
    pub(super) async fn send_events(&self, events: Vec<AgentEvent>) {
        if self.events_withheld {
            return;
        }
        match &self.out {
            OutputTx::One(out) => {
                for event in events {
                    send(out, Output::Event(event)).await;
                }
            }
            OutputTx::Batched(_) if events.is_empty() => {}
            OutputTx::Batched(out) => send(out, Outputs::Events(events)).await,
        }
    }
}

/// Queue an item: at once when the channel has room (no waiter is armed),
/// else waiting for room, exactly as a plain `send` would. A front end that
/// went away drops it.
async fn send<T>(out: &mpsc::Sender<T>, item: T) {
    match out.try_send(item) {
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
        Err(mpsc::error::TrySendError::Full(item)) => {
            let _ = out.send(item).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Reply;

    #[tokio::test]
    async fn a_full_output_waits_for_room_and_keeps_the_order() {
        let (out, mut rx) = mpsc::channel(1);
        let mut channels = Channels::new(OutputTx::One(out));
        assert!(channels.take_inbox().is_some() && channels.take_inbox().is_none());
        channels.send(Output::Reply { tag: 1, result: Ok(Reply::Ack) }).await;
        let reader = tokio::spawn(async move {
            let mut tags = Vec::new();
            while let Some(Output::Reply { tag, .. }) = rx.recv().await {
                tags.push(tag);
            }
            tags
        });
        channels.send(Output::Reply { tag: 2, result: Ok(Reply::Ack) }).await;
        drop(channels);
        assert_eq!(reader.await.unwrap(), vec![1, 2]);
    }

    /// The output channel allocates its slots 32 at a time when it is
    /// created, so every idle session pays for 32 outputs: events keep their
    /// big data (messages) boxed (296 bytes with them boxed, ~560 without).
    #[test]
    fn an_output_slot_stays_small() {
        let size = std::mem::size_of::<Output>();
        assert!(size <= 320, "an output is {size} bytes");
        // The op queue too: ops are boxed in it (168 bytes inline).
        let size = std::mem::size_of::<super::super::QueuedOp>();
        assert!(size <= 32, "a queued op is {size} bytes");
    }
}
