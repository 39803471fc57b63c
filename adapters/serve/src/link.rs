//! A connection's side of the registry: the [`OpPort`] and [`OutputPort`]
//! the transport's connection loop serves a WebSocket connection with.
//!
//! In the seed dialects a connection is attached to one session at a time:
//! `new_session`/`newSession` create one, `switch_session` and
//! `resumeSession` (with `afterSeq`) attach to an existing one, `initialize`
//! and any other command start a new session when none is attached. Every
//! other op goes to the attached session's actor, its tag marked with the
//! connection so the hub routes the reply back here. Closing the connection
//! detaches it; the session's work goes on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_core::agent::{AgentClosed, Output};
use pi_core::error::CoreError;
use pi_core::op::{Op, Reply, RequestTag};
use pi_transport::{Delivered, OpPort, OutputPort, Received};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::hub::{ConnHandle, Hub, Kick, Queued, actor_tag};
use crate::registry::Registry;

/// Why a connection's output ended, when a session ended under it.
pub type EndReason = Arc<Mutex<Option<String>>>;

/// The connection's ops: to the registry (attach) or the attached session.
pub struct Link {
    registry: Arc<Registry>,
    /// None once the connection is closing (its queue then drains and ends).
    conn: Option<ConnHandle>,
    attached: Option<Arc<Hub>>,
}

/// The connection's output: its bounded queue, filled by the hubs.
pub struct ConnOutputs {
    rx: mpsc::Receiver<Queued>,
    ended: EndReason,
    /// How long a live event waits before it is written (see [`connect`]).
    write_delay: Duration,
    /// The event waiting, and until when (kept here: the wait may be cancelled and resumed).
    held: Option<(Queued, Instant)>,
}

/// A new connection's link and output, with a queue of `capacity` messages.
/// With a `write_delay`, a live event is held that long before it is
/// written, so the events queued meanwhile go out in the same write (one
/// system call for several deltas, at the cost of that much latency);
/// replies are never held.
pub fn connect(
    registry: Arc<Registry>,
    capacity: usize,
    kick: Kick,
    write_delay: Duration,
) -> (Link, ConnOutputs, EndReason) {
    let (queue, rx) = mpsc::channel(capacity.max(1));
    let id = registry.next_conn_id();
    let ended = EndReason::default();
    let link = Link { registry, conn: Some(ConnHandle { id, queue, kick }), attached: None };
    (link, ConnOutputs { rx, ended: ended.clone(), write_delay, held: None }, ended)
}

impl ConnOutputs {
    /// An item of the queue as output: `Closed` ends it, with the reason kept
    /// (the queue is closed, so the next `recv` ends the output).
    fn take(&mut self, queued: Queued) -> Option<Received> {
        match queued.received() {
            Ok(received) => Some(received),
            Err(reason) => {
                if let Ok(mut ended) = self.ended.lock() {
                    *ended = Some(reason);
                }
                self.rx.close();
                None
            }
        }
    }
}

impl OutputPort for ConnOutputs {
    async fn recv(&mut self) -> Option<Received> {
        if self.held.is_none() {
            let queued = self.rx.recv().await?;
            if self.write_delay.is_zero() || !matches!(queued, Queued::Event(..)) {
                return self.take(queued);
            }
            self.held = Some((queued, Instant::now() + self.write_delay));
        }
        if let Some((_, until)) = &self.held {
            tokio::time::sleep_until(*until).await;
        }
        let (queued, _) = self.held.take()?;
        self.take(queued)
    }

    /// The outputs already queued are mapped together and sent as one write.
    fn try_recv(&mut self) -> Option<Received> {
        let queued = match self.held.take() {
            Some((queued, _)) => queued,
            None => self.rx.try_recv().ok()?,
        };
        self.take(queued)
    }
}

impl Link {
    /// The connection's number (logs).
    pub fn id(&self) -> u64 {
        self.conn.as_ref().map_or(0, |c| c.id)
    }

    /// The attached session's id.
    pub fn session_id(&self) -> Option<String> {
        self.attached.as_ref().map(|h| h.id())
    }

    /// Attach at connection time (`?session=ID&afterSeq=N`): the session,
    /// created with that id when it does not exist.
    pub async fn attach_at_start(&mut self, session: &str, after_seq: Option<u64>) -> Result<(), CoreError> {
        let hub = self.registry.open_or_create(session).await?;
        self.switch_to(hub, None, after_seq).await
    }

    async fn reply(&self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        match (tag, &self.conn) {
            (Some(tag), Some(conn)) => {
                let output = Output::Reply { tag, result };
                let _ = conn.queue.send(Queued::Out(Box::new(Delivered { output, seq: None }))).await;
            }
            (None, _) => {
                if let Err(e) = result {
                    tracing::warn!("connection {}: {}", self.id(), e.message);
                }
            }
            _ => {}
        }
    }

    async fn detach(&mut self) {
        if let (Some(hub), Some(conn)) = (self.attached.take(), &self.conn) {
            hub.follow().detach(conn.id).await;
        }
    }

    /// Leave the current session and attach to `hub` (the reply, when
    /// `tag` is given, comes from the hub, ahead of the replayed events).
    async fn switch_to(
        &mut self,
        mut hub: Arc<Hub>,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
    ) -> Result<(), CoreError> {
        let Some(conn) = self.conn.clone() else { return Ok(()) };
        self.detach().await;
        loop {
            match hub.attach(conn.clone(), tag, after_seq).await {
                Ok(()) => {
                    self.attached = Some(hub);
                    return Ok(());
                }
                // It was unloading (or moving): load it again, or follow it.
                Err(_) => {
                    let id = hub.id();
                    hub.wait_closed().await;
                    let next = hub.follow();
                    hub = if Arc::ptr_eq(&next, &hub) { self.registry.open(&id).await? } else { next };
                }
            }
        }
    }

    /// The attached session, or a new one.
    async fn session(&mut self) -> Result<Arc<Hub>, CoreError> {
        if let Some(hub) = &self.attached {
            // A mirror that moves keeps its ops for the session's new place.
            let mut current = hub.follow();
            if current.is_moving() && !current.is_mirror() {
                // An owner whose session went to another worker: its
                // connections are being moved there; the op goes there too.
                current.wait_closed().await;
                current = current.follow();
            }
            if !current.is_closing() || current.is_mirror() {
                self.attached = Some(current.clone());
                return Ok(current);
            }
        }
        let hub = self.registry.create(None, None).await?;
        self.switch_to(hub.clone(), None, None).await?;
        Ok(hub)
    }

    /// Give `op` to the attached session's actor.
    async fn forward(&mut self, tag: Option<RequestTag>, op: Op) -> Result<(), CoreError> {
        let hub = self.session().await?;
        let Some(conn) = &self.conn else { return Ok(()) };
        let tag = match tag {
            Some(t) if t > u64::from(u32::MAX) => {
                return Err(CoreError::busy("too many requests on this connection: reconnect"));
            }
            t => t.map(|t| actor_tag(conn.id, t)),
        };
        match hub.agent().reserve().await {
            Ok(permit) => {
                permit.send(tag, op);
                Ok(())
            }
            Err(AgentClosed) => {
                self.attached = None;
                Err(CoreError::internal(format!("session {} has ended", hub.id())))
            }
        }
    }

    async fn handle(&mut self, tag: Option<RequestTag>, op: Op) -> Result<(), CoreError> {
        match op {
            Op::NewSession { parent_session } => {
                let hub = self.registry.create(None, parent_session).await?;
                self.switch_to(hub, tag, None).await
            }
            Op::SwitchSession { session_path: reference, after_seq } | Op::ResumeSession { reference, after_seq } => {
                let id = self.registry.resolve(&reference).await?;
                let hub = self.registry.open(&id).await?;
                self.switch_to(hub, tag, after_seq).await
            }
            // End of input (or the server stops): leave the session running.
            Op::Shutdown { .. } if tag.is_none() => {
                self.detach().await;
                self.conn = None;
                Ok(())
            }
            // JSON-RPC `shutdown`: end the attached session; the connection closes after the reply.
            Op::Shutdown { abort } if self.attached.is_none() => {
                let _ = abort;
                self.reply(tag, Ok(Reply::Ack)).await;
                self.conn = None;
                Ok(())
            }
            Op::ExtensionUiResponse { .. } if self.attached.is_none() => {
                Err(CoreError::not_found("No pending extension dialog: this connection is attached to no session"))
            }
            other => self.forward(tag, other).await,
        }
    }
}

impl OpPort for Link {
    async fn submit(&mut self, tag: Option<RequestTag>, op: Op) -> Result<(), AgentClosed> {
        if self.conn.is_none() {
            return Ok(());
        }
        if let Err(e) = self.handle(tag, op).await {
            self.reply(tag, Err(e)).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_core::event::AgentEvent;

    fn outputs(write_delay: Duration) -> (mpsc::Sender<Queued>, ConnOutputs) {
        let (tx, rx) = mpsc::channel(16);
        (tx, ConnOutputs { rx, ended: EndReason::default(), write_delay, held: None })
    }

    fn seq_of(received: Option<Received>) -> Option<u64> {
        match received? {
            Received::Shared(_, seq) => Some(seq),
            Received::Own(delivered) => delivered.seq,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_delay_holds_a_live_event_so_the_next_ones_go_with_it() {
        let (tx, mut out) = outputs(Duration::from_millis(20));
        tx.send(Queued::Event(Arc::new(AgentEvent::TurnStart), 1)).await.unwrap();
        let mut recv = Box::pin(out.recv());
        // Held: nothing comes before the delay has passed (virtual time).
        assert!(tokio::time::timeout(Duration::from_millis(10), &mut recv).await.is_err());
        tx.send(Queued::Event(Arc::new(AgentEvent::TurnStart), 2)).await.unwrap();
        assert_eq!(seq_of(recv.await), Some(1));
        // The event that came meanwhile is at hand for the same write.
        assert_eq!(seq_of(out.try_recv()), Some(2));
        assert!(out.try_recv().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn replies_and_undelayed_events_are_not_held() {
        let (tx, mut out) = outputs(Duration::from_millis(20));
        let reply = Delivered { output: Output::Reply { tag: 7, result: Ok(Reply::Ack) }, seq: None };
        tx.send(Queued::Out(Box::new(reply))).await.unwrap();
        let started = Instant::now();
        assert!(matches!(
            out.recv().await,
            Some(Received::Own(Delivered { output: Output::Reply { tag: 7, .. }, .. }))
        ));
        assert_eq!(Instant::now(), started);
        let (tx, mut out) = outputs(Duration::ZERO);
        tx.send(Queued::Event(Arc::new(AgentEvent::TurnStart), 3)).await.unwrap();
        assert_eq!(seq_of(out.recv().await), Some(3));
        assert_eq!(Instant::now(), started);
    }
}
