//! A response body read while an extension listens to each stream event
//! (pi's `provider_stream_event`). pi-ai reads its stream in a loop of its
//! own: it awaits the handlers of each parsed event, then decodes it into
//! the message's events, which the agent hands to its own handlers at its
//! own pace. So here a task reads the body, shows each framed event to the
//! observer and waits for it, then passes the event on; the call decodes
//! what was passed on when it is polled. A slow `message_update` handler
//! does not hold the reading, and no event is decoded before its handlers
//! ran. Without a listener the body is read in place, as before.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::Body;
use crate::provider::observe::RequestObserver;
use crate::provider::sse::{BodyError, SseEvent};

/// What the reading task passes on.
pub(super) enum Read {
    /// An event its observer has seen.
    Event(SseEvent),
    /// The body failed.
    Failed(BodyError),
    /// The body ended cleanly.
    End,
}

/// A body the observer watches: not read yet, then read by its task.
pub(super) struct ObservedBody {
    /// Read from the first poll after the call opened, so what the caller
    /// made of the opening (pi's `message_start`) comes before the first event.
    unread: Option<(Body, Arc<dyn RequestObserver>)>,
    /// What the reading task passed on, and the task (stopped when this is dropped).
    reading: Option<(mpsc::UnboundedReceiver<Read>, AbortOnDropHandle<()>)>,
}

impl ObservedBody {
    pub(super) fn new(body: Body, observer: Arc<dyn RequestObserver>) -> Self {
        ObservedBody { unread: Some((body, observer)), reading: None }
    }

    /// The next event the observer has seen, the body's failure or its end;
    /// `None` once the task stopped (cancelled).
    pub(super) async fn next(&mut self, cancel: &CancellationToken) -> Option<Read> {
        if let Some((body, observer)) = self.unread.take() {
            let (tx, rx) = mpsc::unbounded_channel();
            let task = tokio::spawn(read(body, observer, tx, cancel.clone()));
            self.reading = Some((rx, AbortOnDropHandle::new(task)));
        }
        let (events, _) = self.reading.as_mut()?;
        events.recv().await
    }
}

/// Read `body` to its end: each framed event shown to `observer` (awaited),
/// then passed on. Stops when cancelled or when nobody takes the events.
async fn read(
    mut body: Body,
    observer: Arc<dyn RequestObserver>,
    events: mpsc::UnboundedSender<Read>,
    cancel: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            next = body.chunks.next() => next,
        };
        let (framed, ended) = match next {
            Some(Ok(bytes)) => (body.framer.push(&bytes), false),
            Some(Err(e)) => {
                let _ = events.send(Read::Failed(e));
                return;
            }
            None => (body.framer.finish(), true),
        };
        let framed = match framed {
            Ok(framed) => framed,
            Err(e) => {
                let _ = events.send(Read::Failed(BodyError::Transport(e)));
                return;
            }
        };
        for event in framed {
            // OpenAI's end marker is the stream's framing, not an event (pi's SDK never shows it).
            if event.data != "[DONE]" {
                let data = serde_json::from_str(&event.data).unwrap_or_else(|_| Value::String(event.data.clone()));
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return,
                    _ = observer.stream_event(data) => {}
                }
            }
            if events.send(Read::Event(event)).is_err() {
                return;
            }
        }
        if ended {
            let _ = events.send(Read::End);
            return;
        }
    }
}
