//! A connection as a session's hub sees it: its number, its bounded queue
//! and how to disconnect it; and the hub's two ways of queueing for it
//! without ever waiting (a full queue means its client does not read, and
//! the connection is disconnected with the reason).

use std::sync::{Arc, Mutex};

use pi_core::agent::Output;
use pi_core::event::AgentEvent;
use pi_core::op::RequestTag;
use pi_transport::Delivered;
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

/// One item of a connection's queue.
// `Out` is nearly every item and `Closed` the last one: boxing `Out` would
// cost an allocation per message to shrink a variant that is almost never used.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Queued {
    Out(Delivered),
    /// The session the connection was attached to ended; the connection closes.
    Closed(String),
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

/// The event as connection `conn` sees it: a `bash` output chunk names the
/// request only for the connection that sent the `bash` command.
pub fn event_for(conn: ConnId, event: &AgentEvent) -> AgentEvent {
    match event {
        AgentEvent::BashExecutionUpdate { request, delta } => {
            let request = request.and_then(|t| {
                let (owner, local) = split_tag(t);
                (owner == conn).then_some(local)
            });
            AgentEvent::BashExecutionUpdate { request, delta: delta.clone() }
        }
        other => other.clone(),
    }
}

pub fn deliver(conn: &ConnHandle, event: AgentEvent, seq: Option<u64>) -> bool {
    deliver_output(conn, Output::Event(event), seq)
}

/// Queue one item for `conn` without waiting; a full queue disconnects it.
pub fn deliver_output(conn: &ConnHandle, output: Output, seq: Option<u64>) -> bool {
    match conn.queue.try_send(Queued::Out(Delivered { output, seq })) {
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
