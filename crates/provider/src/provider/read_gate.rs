//! When a reply's body may be read on while an extension listens to each
//! stream event (pi's `provider_stream_event`). In pi, JS runs one task at a
//! time: between two reads of the body (two I/O callbacks) every microtask
//! runs, so the agent has handed the events decoded so far to its handlers
//! (each ran up to its first real wait) before the next read's events are
//! shown. The consumer of the stream ([`crate::stream::stream_assistant`])
//! closes the gate when it takes an event and opens it once its events
//! reached the handlers; the HTTP driver reads the next chunk only through
//! an open gate. A slow handler keeps the gate open (its events were
//! handed over), so the body is read on meanwhile, as pi's is.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use futures::{Stream, StreamExt};

use super::ProviderStream;

/// Whether the consumer handed over every event it took.
#[derive(Default)]
pub struct ReadGate {
    open: AtomicBool,
    reader: AtomicWaker,
}

impl ReadGate {
    /// The consumer took an event it has not handed over yet.
    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// The consumer handed its events over (their handlers started): the reader may go on.
    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
        self.reader.wake();
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Ready once the gate is open (the task woken when it opens).
    pub(crate) fn poll_open(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.open.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        self.reader.register(cx.waker());
        if self.open.load(Ordering::Acquire) { Poll::Ready(()) } else { Poll::Pending }
    }
}

tokio::task_local! {
    static GATE: Arc<ReadGate>;
}

/// The gate of the stream being polled, if its consumer keeps one.
pub(crate) fn current() -> Option<Arc<ReadGate>> {
    GATE.try_with(Arc::clone).ok()
}

/// `stream`, polled with `gate` as [`current`] (the driver takes it when it opens the body).
pub fn gated(stream: ProviderStream, gate: Arc<ReadGate>) -> ProviderStream {
    Box::pin(Gated { stream, gate })
}

struct Gated {
    stream: ProviderStream,
    gate: Arc<ReadGate>,
}

impl Stream for Gated {
    type Item = <ProviderStream as Stream>::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        GATE.sync_scope(this.gate.clone(), || this.stream.poll_next_unpin(cx))
    }
}
