//! One loaded session: its agent actor and the pump that owns the actor's
//! output. The pump numbers every event, keeps the latest in the replay
//! buffer, hands each event to every attached connection's bounded queue
//! and each reply to the connection that asked, attaches connections
//! (reply, missed events, pending dialogs and approvals, then live events, in that order),
//! and unloads the session once it has been idle and alone long enough.
//!
//! The pump never waits on a connection: a queue that is full means its
//! client does not read, and that connection is disconnected (with the
//! reason logged), so one slow client cannot stall a session or another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_core::agent::{AgentHandle, Output};
use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Attachment, Forked, Op, Reply, RequestTag, Switched};
use pi_transport::Delivered;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::ownership::Ownership;
use crate::registry::Registry;
use crate::replay::{Numbered, ReplayBuffer};

/// A connection's number (0 is the hub's own requests).
pub type ConnId = u64;

const LOCAL_BITS: u32 = 32;
const LOCAL_MASK: u64 = (1 << LOCAL_BITS) - 1;

/// The actor's tag for connection `conn`'s request `tag`.
pub fn actor_tag(conn: ConnId, tag: RequestTag) -> RequestTag {
    (conn << LOCAL_BITS) | (tag & LOCAL_MASK)
}

fn split_tag(tag: RequestTag) -> (ConnId, RequestTag) {
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
struct Departed {
    id: ConnId,
    queue: mpsc::WeakSender<Queued>,
    kick: Kick,
}

impl Departed {
    fn handle(&self) -> Option<ConnHandle> {
        Some(ConnHandle { id: self.id, queue: self.queue.upgrade()?, kick: self.kick.clone() })
    }
}

/// The session ended (or is unloading): attach elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session has ended")]
pub struct HubClosed;

enum Control {
    Attach { conn: ConnHandle, tag: Option<RequestTag>, after_seq: Option<u64>, done: oneshot::Sender<bool> },
    Detach { conn: ConnId, done: oneshot::Sender<()> },
}

/// A loaded session, shared by the registry and the connections attached to it.
pub struct Hub {
    id: Mutex<String>,
    agent: AgentHandle,
    control: mpsc::Sender<Control>,
    closing: AtomicBool,
    closed: CancellationToken,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("id", &self.id()).finish()
    }
}

impl Hub {
    pub fn id(&self) -> String {
        self.id.lock().map(|id| id.clone()).unwrap_or_default()
    }

    pub fn agent(&self) -> &AgentHandle {
        &self.agent
    }

    /// True once the session is unloading or over: attach to a fresh load.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Resolves once the session has ended and let go of its lock.
    pub async fn wait_closed(&self) {
        self.closed.cancelled().await;
    }

    /// Attach `conn`: with `tag`, the reply `Attached` is queued first; with
    /// `after_seq`, the events after it; then the pending dialogs, then live events.
    pub async fn attach(
        &self,
        conn: ConnHandle,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
    ) -> Result<(), HubClosed> {
        let (done, attached) = oneshot::channel();
        let msg = Control::Attach { conn, tag, after_seq, done };
        if self.is_closing() || self.control.send(msg).await.is_err() {
            return Err(HubClosed);
        }
        match attached.await {
            Ok(true) => Ok(()),
            _ => Err(HubClosed),
        }
    }

    /// Stop sending to `conn` (answered once nothing more is queued for it).
    pub async fn detach(&self, conn: ConnId) {
        let (done, detached) = oneshot::channel();
        if self.control.send(Control::Detach { conn, done }).await.is_ok() {
            let _ = detached.await;
        }
    }

    /// End the session (server shutdown): abort its work, flush, stop.
    pub async fn shut_down(&self) {
        let _ = self.agent.submit(None, Op::Shutdown { abort: true }).await;
    }
}

/// What the hub's own requests are for.
enum Internal {
    Attach {
        conn: ConnHandle,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
        done: oneshot::Sender<bool>,
    },
    /// Detach once the actor's earlier output has been routed (the answers
    /// it owes the connection for requests sent before are delivered first).
    Detach {
        conn: ConnId,
        done: oneshot::Sender<()>,
    },
    Unload,
    Identity,
}

/// How a session's hub behaves.
#[derive(Debug, Clone)]
pub struct HubOptions {
    pub replay_events: usize,
    pub idle_unload: Duration,
}

struct Pump {
    hub: Arc<Hub>,
    registry: Arc<Registry>,
    options: HubOptions,
    buffer: ReplayBuffer,
    conns: Vec<ConnHandle>,
    /// Connections that left this session (switched to another) but may
    /// still be owed answers: replies only, without keeping them open.
    departed: Vec<Departed>,
    /// Dialogs and requests to the client (approvals…) asked in this load: id, seq, the event.
    dialogs: Vec<(String, Numbered)>,
    internal: std::collections::HashMap<RequestTag, Internal>,
    next_internal: RequestTag,
    unloading: bool,
    alone_since: Instant,
    session_file: Option<String>,
    lock: Option<Ownership>,
}

/// Start the pump of a freshly spawned actor; returns the hub.
pub fn start(
    registry: Arc<Registry>,
    id: String,
    session_file: Option<String>,
    agent: AgentHandle,
    outputs: mpsc::Receiver<Output>,
    lock: Ownership,
    options: HubOptions,
) -> Arc<Hub> {
    let (control_tx, control_rx) = mpsc::channel(64);
    let hub = Arc::new(Hub {
        id: Mutex::new(id),
        agent,
        control: control_tx,
        closing: AtomicBool::new(false),
        closed: CancellationToken::new(),
    });
    let pump = Pump {
        hub: hub.clone(),
        registry,
        buffer: ReplayBuffer::new(options.replay_events),
        options,
        conns: Vec::new(),
        departed: Vec::new(),
        dialogs: Vec::new(),
        internal: Default::default(),
        next_internal: 1,
        unloading: false,
        alone_since: Instant::now(),
        session_file,
        lock: Some(lock),
    };
    tokio::spawn(pump.run(outputs, control_rx));
    hub
}

impl Pump {
    async fn run(mut self, mut outputs: mpsc::Receiver<Output>, mut control: mpsc::Receiver<Control>) {
        loop {
            let alone = self.conns.is_empty() && !self.unloading && self.internal.is_empty();
            let deadline = self.alone_since + self.options.idle_unload;
            tokio::select! {
                output = outputs.recv() => match output {
                    Some(output) => self.output(output),
                    None => break,
                },
                Some(msg) = control.recv() => self.control(msg),
                _ = tokio::time::sleep_until(deadline), if alone => {
                    self.alone_since = Instant::now();
                    self.unloading = true;
                    self.ask(Internal::Unload, Op::Unload);
                }
            }
        }
        self.finish(control);
    }

    /// Submit one of the hub's own requests (from a task: the pump never waits on the actor).
    fn ask(&mut self, purpose: Internal, op: Op) {
        let tag = actor_tag(0, self.next_internal);
        self.next_internal += 1;
        self.internal.insert(tag, purpose);
        let agent = self.hub.agent.clone();
        tokio::spawn(async move {
            let _ = agent.submit(Some(tag), op).await;
        });
    }

    fn control(&mut self, msg: Control) {
        match msg {
            Control::Attach { conn, tag, after_seq, done } => {
                if self.hub.is_closing() {
                    let _ = done.send(false);
                    return;
                }
                // The actor answers in order: the list of pending requests
                // comes after every event emitted so far, which fixes the cut.
                self.ask(Internal::Attach { conn, tag, after_seq, done }, Op::PendingRequests);
            }
            Control::Detach { conn, done } => {
                if self.conns.iter().any(|c| c.id == conn) {
                    self.ask(Internal::Detach { conn, done }, Op::PendingRequests);
                } else {
                    let _ = done.send(());
                }
            }
        }
    }

    fn output(&mut self, output: Output) {
        match output {
            Output::Event(event) => {
                let event = Arc::new(event);
                let seq = self.buffer.push(event.clone());
                match &*event {
                    AgentEvent::ExtensionUiRequest(request) if request.kind.is_dialog() => {
                        self.dialogs.push((request.id.clone(), (seq, event.clone())));
                    }
                    AgentEvent::ClientRequest(request) => self.dialogs.push((request.id.clone(), (seq, event.clone()))),
                    AgentEvent::ClientRequestEnded { id } => self.dialogs.retain(|(open, _)| open != id),
                    _ => {}
                }
                let mut dropped = Vec::new();
                for conn in &self.conns {
                    if !deliver(conn, event_for(conn.id, &event), Some(seq)) {
                        dropped.push(conn.id);
                    }
                }
                self.drop_conns(&dropped);
            }
            Output::Reply { tag, result } => {
                let (conn, local) = split_tag(tag);
                if matches!(
                    result,
                    Ok(Reply::Fork(Forked { cancelled: false, .. })
                        | Reply::Switched(Switched { cancelled: false, .. }))
                ) {
                    // The actor now holds another session (fork, clone).
                    self.ask(Internal::Identity, Op::GetState);
                }
                if conn == 0 {
                    self.internal_reply(tag, result);
                    return;
                }
                let reply = Output::Reply { tag: local, result };
                if let Some(handle) = self.conns.iter().find(|c| c.id == conn) {
                    if !deliver_output(handle, reply, None) {
                        self.drop_conns(&[conn]);
                    }
                } else if let Some(handle) = self.departed.iter().find(|d| d.id == conn).and_then(Departed::handle) {
                    // An answer owed to a connection now attached elsewhere.
                    deliver_output(&handle, reply, None);
                }
            }
        }
    }

    fn detach(&mut self, conn: ConnId) {
        self.departed.retain(|d| d.id != conn && d.queue.strong_count() > 0);
        if let Some(at) = self.conns.iter().position(|c| c.id == conn) {
            let handle = self.conns.remove(at);
            self.departed.push(Departed { id: handle.id, queue: handle.queue.downgrade(), kick: handle.kick });
        }
        if self.conns.is_empty() {
            self.alone_since = Instant::now();
        }
    }

    fn drop_conns(&mut self, ids: &[ConnId]) {
        if ids.is_empty() {
            return;
        }
        self.conns.retain(|c| !ids.contains(&c.id));
        if self.conns.is_empty() {
            self.alone_since = Instant::now();
        }
    }

    fn internal_reply(&mut self, tag: RequestTag, result: Result<Reply, CoreError>) {
        match (self.internal.remove(&tag), result) {
            (Some(Internal::Attach { conn, tag, after_seq, done }), Ok(Reply::PendingRequests(ids))) => {
                self.complete_attach(conn, tag, after_seq, &ids);
                let _ = done.send(true);
            }
            (Some(Internal::Attach { done, .. }), _) => {
                let _ = done.send(false);
            }
            (Some(Internal::Detach { conn, done }), _) => {
                self.detach(conn);
                let _ = done.send(());
            }
            (Some(Internal::Unload), Ok(_)) => {
                // The actor stops: its output ends and the pump with it.
                self.hub.closing.store(true, Ordering::SeqCst);
                tracing::info!("session {}: unloaded after {:?} idle", self.hub.id(), self.options.idle_unload);
            }
            (Some(Internal::Unload), Err(_)) => {
                self.unloading = false;
                self.alone_since = Instant::now();
            }
            (Some(Internal::Identity), Ok(Reply::State(state))) => {
                let old = self.hub.id();
                self.session_file = state.session_file.clone();
                if state.session_id != old {
                    self.rekey(&old, &state.session_id);
                }
            }
            (Some(Internal::Identity), _) | (None, _) => {}
        }
    }

    /// The actor switched to session `new` (fork, clone): take its lock, let go of the old one.
    fn rekey(&mut self, old: &str, new: &str) {
        match &self.lock {
            // In a cluster the lease stays the old id's (a fork's new id is not leased).
            Some(Ownership::Leased(_)) => tracing::warn!("session {new}: a fork under --cluster keeps {old}'s lease"),
            _ => match self.registry.lock_for(new) {
                Ok(lock) => self.lock = Some(Ownership::Local(lock)),
                Err(e) => tracing::warn!("session {new}: {e}"),
            },
        }
        if let Ok(mut id) = self.hub.id.lock() {
            *id = new.to_string();
        }
        self.registry.rekey(old, new, &self.hub);
        tracing::info!("session {old} continues as {new}");
    }

    fn complete_attach(
        &mut self,
        conn: ConnHandle,
        tag: Option<RequestTag>,
        after_seq: Option<u64>,
        pending: &[String],
    ) {
        self.dialogs.retain(|(id, _)| pending.contains(id));
        let replay = after_seq.map(|after| self.buffer.after(after));
        let replayed = replay.as_ref().map_or(0, |r| r.events.len() as u64);
        let mut ok = true;
        if let Some(tag) = tag {
            let attachment = Attachment {
                session_id: self.hub.id(),
                session_file: self.session_file.clone(),
                last_seq: self.buffer.last_seq(),
                replayed,
                gap: replay.as_ref().is_some_and(|r| r.gap),
            };
            ok &= deliver_output(
                &conn,
                Output::Reply {
                    tag,
                    result: Ok(Reply::Switched(Switched { cancelled: false, attached: Some(attachment) })),
                },
                None,
            );
        }
        let resent = |seq: u64| match after_seq {
            Some(after) => seq <= after || !self.buffer.holds(seq),
            None => true,
        };
        for (seq, event) in replay.iter().flat_map(|r| r.events.iter()) {
            ok = ok && deliver(&conn, event_for(conn.id, event), Some(*seq));
        }
        for (_, (seq, event)) in self.dialogs.iter().filter(|(_, (seq, _))| resent(*seq)) {
            ok = ok && deliver(&conn, event_for(conn.id, event), Some(*seq));
        }
        if ok {
            self.conns.retain(|c| c.id != conn.id);
            self.departed.retain(|d| d.id != conn.id);
            self.conns.push(conn);
        }
    }

    fn finish(mut self, mut control: mpsc::Receiver<Control>) {
        self.hub.closing.store(true, Ordering::SeqCst);
        let id = self.hub.id();
        for conn in self.conns.drain(..) {
            if conn.queue.try_send(Queued::Closed(format!("session {id} has ended"))).is_err() {
                conn.kick.kick(format!("session {id} has ended"));
            }
        }
        for (_, purpose) in self.internal.drain() {
            match purpose {
                Internal::Attach { done, .. } => drop(done.send(false)),
                Internal::Detach { done, .. } => drop(done.send(())),
                Internal::Unload | Internal::Identity => {}
            }
        }
        control.close();
        while let Ok(msg) = control.try_recv() {
            match msg {
                Control::Attach { done, .. } => drop(done.send(false)),
                Control::Detach { done, .. } => drop(done.send(())),
            }
        }
        // Let go of the lock before leaving the registry, so a new load
        // of this session in this process can take it.
        drop(self.lock.take());
        self.registry.remove(&id, &self.hub);
        self.hub.closed.cancel();
        tracing::debug!("session {id}: hub stopped");
    }
}

/// The event as connection `conn` sees it: a `bash` output chunk names the
/// request only for the connection that sent the `bash` command.
fn event_for(conn: ConnId, event: &AgentEvent) -> AgentEvent {
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

fn deliver(conn: &ConnHandle, event: AgentEvent, seq: Option<u64>) -> bool {
    deliver_output(conn, Output::Event(event), seq)
}

/// Queue one item for `conn` without waiting; a full queue disconnects it.
fn deliver_output(conn: &ConnHandle, output: Output, seq: Option<u64>) -> bool {
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
