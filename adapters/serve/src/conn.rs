//! A connection as a session's hub sees it: its number, its bounded queue
//! and how to disconnect it; and the hub's two ways of queueing for it
//! without ever waiting (a full queue means its client does not read, and
//! the connection is disconnected with the reason).

use std::sync::{Arc, Mutex};

use pi_core::agent::Output;
use pi_core::event::AgentEvent;
use pi_core::op::RequestTag;
use pi_transport::{Delivered, Received};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A connection's number (0 is the hub's own requests).
pub type ConnId = u64;

const LOCAL_BITS: u32 = 32;
const LOCAL_MASK: u64 = (1 << LOCAL_BITS) - 1;

/// The actor's tag for connection `conn`'s request `tag`.
pub fn actor_tag(conn: ConnId, tag: RequestTag) -> RequestTag {
    (conn << LOCAL_BITS) | (tag & LOCAL_MASK)
}

/// The connection and its own tag in an actor's tag.
pub fn split_tag(tag: RequestTag) -> (ConnId, RequestTag) {
    (tag >> LOCAL_BITS, tag & LOCAL_MASK)
}

/// One item of a connection's queue. Small (four words): a tokio channel
/// allocates its slots 32 at a time, at creation, so an item the size of an
/// event cost every idle connection about 17 KiB.
#[derive(Debug)]
pub enum Queued {
    /// A numbered event of the session, shared with its other connections
    /// and its replay buffer (a connection maps it from there, a mirror's
    /// link takes its own copy).
    Event(Arc<AgentEvent>, u64),
    /// A reply, or an event for this connection alone.
    Out(Box<Delivered>),
    /// The session the connection was attached to ended; the connection closes.
    Closed(String),
}

impl Queued {
    /// The item as a connection's output, a shared event left shared, or
    /// why its session ended.
    pub fn received(self) -> Result<Received, String> {
        match self {
            Queued::Event(event, seq) => Ok(Received::Shared(event, seq)),
            Queued::Out(delivered) => Ok(Received::Own(*delivered)),
            Queued::Closed(reason) => Err(reason),
        }
    }

    /// The item as an output of its own, or why its session ended.
    pub fn delivered(self) -> Result<Delivered, String> {
        match self {
            Queued::Event(event, seq) => {
                Ok(Delivered { output: Output::Event(Arc::unwrap_or_clone(event)), seq: Some(seq) })
            }
            Queued::Out(delivered) => Ok(*delivered),
            Queued::Closed(reason) => Err(reason),
        }
    }
}

/// Disconnects a connection whose client stopped reading.
#[derive(Debug, Clone, Default)]
pub struct Kick {
    token: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl Kick {
    pub fn kick(&self, reason: String) {
        if let Ok(mut slot) = self.reason.lock()
            && slot.is_none()
        {
            *slot = Some(reason);
        }
        self.token.cancel();
    }

    pub async fn kicked(&self) -> String {
        self.token.cancelled().await;
        self.reason.lock().ok().and_then(|r| r.clone()).unwrap_or_default()
    }
}

/// A connection as a hub sees it.
#[derive(Debug, Clone)]
pub struct ConnHandle {
    pub id: ConnId,
    pub queue: mpsc::Sender<Queued>,
    pub kick: Kick,
}

/// A connection that left a session, as that session's pump keeps it: a
/// weak sender (it does not keep the connection's output open).
#[derive(Debug)]
pub(crate) struct Departed {
    pub id: ConnId,
    pub queue: mpsc::WeakSender<Queued>,
    pub kick: Kick,
}

impl Departed {
    pub fn of(handle: ConnHandle) -> Departed {
        Departed { id: handle.id, queue: handle.queue.downgrade(), kick: handle.kick }
    }

    pub fn handle(&self) -> Option<ConnHandle> {
        Some(ConnHandle { id: self.id, queue: self.queue.upgrade()?, kick: self.kick.clone() })
    }
}

/// Numbered event `seq` as connection `conn` gets it: shared, except a
/// `bash` output chunk, which names the request only for the connection
/// that sent the `bash` command.
pub fn event_for(conn: ConnId, event: &Arc<AgentEvent>, seq: u64) -> Queued {
    match &**event {
        AgentEvent::BashExecutionUpdate { request, delta } => {
            let request = request.and_then(|t| {
                let (owner, local) = split_tag(t);
                (owner == conn).then_some(local)
            });
            let output = Output::Event(AgentEvent::BashExecutionUpdate { request, delta: delta.clone() });
            Queued::Out(Box::new(Delivered { output, seq: Some(seq) }))
        }
        _ => Queued::Event(event.clone(), seq),
    }
}

/// Queue numbered event `seq` for `conn` without waiting; a full queue disconnects it.
pub fn deliver(conn: &ConnHandle, event: &Arc<AgentEvent>, seq: u64) -> bool {
    queue(conn, event_for(conn.id, event, seq))
}

/// Queue one output for `conn` without waiting; a full queue disconnects it.
pub fn deliver_output(conn: &ConnHandle, output: Output, seq: Option<u64>) -> bool {
    queue(conn, Queued::Out(Box::new(Delivered { output, seq })))
}

fn queue(conn: &ConnHandle, item: Queued) -> bool {
    match conn.queue.try_send(item) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            let reason =
                format!("the client does not read: {} messages are waiting to be sent", conn.queue.max_capacity());
            // The connection logs the reason as it goes.
            conn.kick.kick(reason);
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}
