//! The pump of one hub: it owns the session's output. It numbers every event
//! (a mirror keeps its owner's numbers), keeps the latest in the replay
//! buffer, publishes them to the session's stream in a cluster, hands each
//! event to every attached connection's bounded queue and each reply to the
//! connection that asked, attaches connections (reply, missed events,
//! pending dialogs and approvals, then live events, in that order), and
//! unloads the session once it has been idle and alone long enough.
//!
//! The pump never waits on a connection: a queue that is full means its
//! client does not read, and that connection is disconnected (with the
//! reason logged), so one slow client cannot stall a session or another.
//!
//! In a cluster it also: reads from the stream the events a re-attaching
//! client missed before this load; tells clients a run was interrupted when
//! it took the session over from a lost worker ([`crate::interrupted`]);
//! and, for a mirror whose owner was lost or let go (or an owner whose lease
//! went to another worker), finds the session again and moves its
//! connections there without a gap.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pi_core::agent::Output;
use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Attachment, Forked, Op, Reply, RequestTag, Switched};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::cluster::events::{EventLog, Numbered as Keep, Stored};
use crate::cluster::lease::LeaseWatch;
use crate::cluster::mirror::{MirrorCtl, MirrorItem};
use crate::conn::{ConnHandle, ConnId, Departed, Queued, actor_tag, deliver, deliver_output, split_tag};
use crate::hub::{Control, Feed, Home, Hub, HubOptions, Loaded};
use crate::ownership::Ownership;
use crate::replay::{Numbered, ReplayBuffer};

/// How long a hub letting go waits for its events to be stored.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

/// How often the pump looks again at a lease in doubt while it holds output.
const DOUBT_POLL: Duration = Duration::from_millis(50);

/// What the hub's own requests are for.
enum Internal {
    Attach(Attaching),
    /// Detach once the actor's earlier output has been routed (the answers
    /// it owes the connection for requests sent before are delivered first).
    Detach {
        conn: ConnId,
        done: oneshot::Sender<()>,
    },
    Unload,
    Identity,
    /// Tell the clients the run of the lost worker was interrupted.
    Interrupted {
        worker: String,
    },
}

/// An attach on its way: waiting for the actor's cut, then maybe for the stream.
struct Attaching {
    conn: ConnHandle,
    tag: Option<RequestTag>,
    after_seq: Option<u64>,
    done: oneshot::Sender<bool>,
    /// The pending requests at the cut, and the last event before it.
    pending: Vec<String>,
    cut: u64,
    /// The events read from the stream come up to this number.
    upto: u64,
}

struct Pump {
    hub: Arc<Hub>,
    home: Arc<dyn Home>,
    options: HubOptions,
    buffer: ReplayBuffer,
    conns: Vec<ConnHandle>,
    /// Connections that left this session (switched to another) but may
    /// still be owed answers: replies only, without keeping them open.
    departed: Vec<Departed>,
    /// Dialogs and requests to the client (approvals…) asked in this load: id, seq, the event.
    dialogs: Vec<(String, Numbered)>,
    internal: HashMap<RequestTag, Internal>,
    next_internal: RequestTag,
    /// Attaches waiting for the stream, by key.
    fetching: HashMap<u64, Attaching>,
    unloading: bool,
    alone_since: Instant,
    session_file: Option<String>,
    lock: Option<Ownership>,
    log: Option<Arc<EventLog>>,
    /// The session's lease (in a cluster): its events are stored only while it is this worker's.
    lease: Option<LeaseWatch>,
    /// A prompt's run is going on.
    running: bool,
    /// A mirror whose owner is gone, being found again.
    moving: bool,
    /// The session's lease went to another worker: this actor's events are
    /// no longer the session's, and its clients move to the new owner.
    fenced: bool,
    /// The actor's output while the lease is in doubt, in order.
    held: Vec<Output>,
    /// Why (logs, and the clients whose answers were lost with it).
    lost_reason: String,
    /// A mirror's hold on its op relay.
    ctl: Option<MirrorCtl>,
    done: bool,
    control_tx: mpsc::Sender<Control>,
}

/// Start the hub of a loaded session and its pump; returns the hub.
pub(crate) fn start(home: Arc<dyn Home>, loaded: Loaded, options: HubOptions) -> Arc<Hub> {
    let (hub, control) = Hub::new(&loaded);
    let mut pump = Pump {
        control_tx: hub.control.clone(),
        hub: hub.clone(),
        home,
        options,
        buffer: loaded.buffer,
        conns: Vec::new(),
        departed: Vec::new(),
        dialogs: Vec::new(),
        internal: HashMap::new(),
        next_internal: 1,
        fetching: HashMap::new(),
        unloading: false,
        alone_since: Instant::now(),
        session_file: loaded.session_file,
        lock: loaded.ownership,
        log: loaded.log,
        lease: None,
        running: false,
        moving: false,
        fenced: false,
        held: Vec::new(),
        lost_reason: String::new(),
        ctl: None,
        done: false,
    };
    if let Some(worker) = loaded.interrupted {
        pump.ask(Internal::Interrupted { worker }, Op::GetState);
    }
    tokio::spawn(pump.run(loaded.feed, control));
    hub
}

impl Pump {
    async fn run(mut self, feed: Feed, mut control: mpsc::Receiver<Control>) {
        let (mut feed, lease) = match feed {
            Feed::Actor { outputs, lease } => (Source::Actor(outputs), lease),
            Feed::Mirror { items, ctl } => {
                self.ctl = Some(ctl);
                (Source::Mirror(items), None)
            }
        };
        self.lease = lease.clone();
        let valid = lease;
        let mut feed_open = true;
        'pump: while !self.done {
            // A lost lease is seen here, whatever woke the pump (the worker's
            // `losses` wake it through its control queue).
            if !self.fenced && valid.as_ref().is_some_and(LeaseWatch::is_lost) {
                self.fence();
            }
            let alone = self.conns.is_empty() && !self.unloading && self.internal.is_empty() && !self.moving;
            let deadline = self.alone_since + self.options.idle_unload;
            // While its lease is in doubt the pump looks again every so often
            // (the lease has no waker: see `cluster::losses`).
            let holding = valid.is_some() && !self.held.is_empty() && !self.fenced;
            let timer = match (alone, holding) {
                (_, true) => Some(deadline.min(Instant::now() + DOUBT_POLL)),
                (true, false) => Some(deadline),
                (false, false) => None,
            };
            tokio::select! {
                item = next(&mut feed), if feed_open => {
                    // The outputs already at hand are routed in this turn:
                    // one wake-up of the pump (and of each connection) for all.
                    let mut item = Some(item);
                    let mut taken = 0;
                    while let Some(next_item) = item.take() {
                        match self.feed(next_item, valid.as_ref()) {
                            Fed::Go => {}
                            Fed::Closed => {
                                feed_open = false;
                                break;
                            }
                            Fed::Stop => break 'pump,
                        }
                        taken += 1;
                        if taken < OUTPUTS_AT_HAND && !self.done {
                            item = try_next(&mut feed).map(Some);
                        }
                    }
                }
                Some(msg) = control.recv() => self.control(msg),
                // Made only when the branch is on: a timer is not set up on every turn (every delta).
                () = async { if let Some(at) = timer { tokio::time::sleep_until(at).await } }, if timer.is_some() => {
                    if holding && !self.in_doubt(valid.as_ref()) {
                        self.release_held();
                    }
                    if alone && Instant::now() >= deadline {
                        self.alone_since = Instant::now();
                        self.unloading = true;
                        self.ask(Internal::Unload, Op::Unload);
                    }
                }
            }
        }
        self.finish(control).await;
    }

    /// The session's lease went to another worker: this actor's events are
    /// no longer the session's; it is shut down and its clients move on.
    fn fence(&mut self) {
        self.fenced = true;
        // What waited is dropped (but the answers owed to clients).
        self.release_held();
        self.hub.moving.store(true, Ordering::SeqCst);
        self.hub.closing.store(true, Ordering::SeqCst);
        tracing::warn!(
            "session {}: its lease went to another worker; unloading it here (its clients move there)",
            self.hub.id()
        );
        let agent = self.hub.agent().clone();
        tokio::spawn(async move { agent.submit(None, Op::Shutdown { abort: true }).await });
    }

    /// Route one item of the feed (`None`: it ended).
    fn feed(&mut self, item: Option<MirrorItem>, valid: Option<&LeaseWatch>) -> Fed {
        match item {
            // The lease is in doubt (no renewal concluded within its TTL): held
            // until the next renewal says whether the session is still this worker's.
            Some(MirrorItem::Output(output, _)) if !self.held.is_empty() || self.in_doubt(valid) => {
                if self.held.is_empty() {
                    tracing::info!("session {}: its lease is in doubt; its output waits", self.hub.id());
                }
                self.held.push(output);
            }
            Some(MirrorItem::Output(output, seq)) if !self.moving => {
                if let (Some(ctl), Output::Reply { tag, .. }) = (&self.ctl, &output) {
                    ctl.answered(*tag);
                }
                self.output(output, seq);
            }
            Some(MirrorItem::Output(..)) => {}
            Some(MirrorItem::Lost(reason)) => self.lost(reason),
            Some(MirrorItem::Ended) if !self.moving => return Fed::Stop,
            Some(MirrorItem::Ended) => {}
            None => {
                self.release_held();
                if self.hub.is_mirror() && !self.hub.is_closing() {
                    self.lost("the link to its owner ended".to_string());
                } else if self.fenced && !self.conns.is_empty() && !self.moving {
                    self.lost("its lease went to another worker".to_string());
                } else if !self.moving {
                    return Fed::Stop;
                }
                return Fed::Closed;
            }
        }
        Fed::Go
    }

    /// True when the session's lease may have expired unnoticed (see
    /// [`LeaseWatch::in_doubt`]).
    fn in_doubt(&self, lease: Option<&LeaseWatch>) -> bool {
        !self.fenced && lease.is_some_and(LeaseWatch::in_doubt)
    }

    /// Route the output held while the lease was in doubt (once fenced,
    /// only its replies).
    fn release_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        tracing::info!(
            "session {}: {} outputs held while its lease was in doubt go on",
            self.hub.id(),
            self.held.len()
        );
        for output in std::mem::take(&mut self.held) {
            self.output(output, None);
        }
    }

    /// Submit one of the hub's own requests (from a task: the pump never waits on the actor).
    fn ask(&mut self, purpose: Internal, op: Op) {
        let tag = actor_tag(0, self.next_internal);
        self.next_internal += 1;
        self.internal.insert(tag, purpose);
        let agent = self.hub.agent().clone();
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
                let attaching = Attaching { conn, tag, after_seq, done, pending: Vec::new(), cut: 0, upto: 0 };
                self.ask(Internal::Attach(attaching), Op::PendingRequests);
            }
            Control::Detach { conn, done } => {
                if self.conns.iter().any(|c| c.id == conn) && !self.moving {
                    self.ask(Internal::Detach { conn, done }, Op::PendingRequests);
                } else {
                    self.detach(conn);
                    let _ = done.send(());
                }
            }
            Control::Fetched { key, result } => {
                if let Some(attaching) = self.fetching.remove(&key) {
                    self.complete_attach(attaching, Some(result));
                }
            }
            Control::Moved(result) => self.moved(result),
            Control::MovedAll => self.done = true,
            // Looked at on every turn of the loop.
            Control::LookAtLease => {}
        }
    }

    fn output(&mut self, output: Output, seq: Option<u64>) {
        match output {
            // Another worker owns the session now: its events are that worker's.
            Output::Event(_) if self.fenced => {}
            Output::Event(event) => self.event(event, seq),
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

    fn event(&mut self, event: AgentEvent, seq: Option<u64>) {
        let event = Arc::new(event);
        let seq = match seq {
            Some(seq) => {
                self.buffer.push_at(seq, event.clone());
                seq
            }
            None => self.buffer.push(event.clone()),
        };
        match &*event {
            AgentEvent::AgentStart => self.set_running(true),
            AgentEvent::AgentSettled { .. } => self.set_running(false),
            AgentEvent::ExtensionUiRequest(request) if request.kind.is_dialog() => {
                self.dialogs.push((request.id.clone(), (seq, event.clone())));
            }
            AgentEvent::ClientRequest(request) => self.dialogs.push((request.id.clone(), (seq, event.clone()))),
            AgentEvent::ClientRequestEnded { id } => self.dialogs.retain(|(open, _)| open != id),
            _ => {}
        }
        if let Some(log) = self.log.as_ref().filter(|_| !self.hub.is_mirror()) {
            let prev = self.buffer.prev_of(seq);
            let (session, lease) = (self.hub.id(), self.lease.clone());
            log.keep(Keep { session, seq, prev, running: self.running, event: event.clone(), lease });
        }
        let mut dropped = Vec::new();
        for conn in &self.conns {
            if !deliver(conn, &event, seq) {
                dropped.push(conn.id);
            }
        }
        self.drop_conns(&dropped);
    }

    fn set_running(&mut self, running: bool) {
        self.running = running;
        self.hub.running.send_replace(running);
    }

    fn detach(&mut self, conn: ConnId) {
        self.departed.retain(|d| d.id != conn && d.queue.strong_count() > 0);
        if let Some(at) = self.conns.iter().position(|c| c.id == conn) {
            let handle = self.conns.remove(at);
            self.departed.push(Departed::of(handle));
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
            (Some(Internal::Attach(mut attaching)), Ok(Reply::PendingRequests(ids))) => {
                attaching.pending = ids;
                attaching.cut = self.buffer.last_seq();
                let older = attaching.after_seq.and_then(|after| self.buffer.after(after).older);
                match (older, &self.log) {
                    (Some(upto), Some(log)) => {
                        // Events before this load (or dropped from the buffer) come from the stream first.
                        attaching.upto = upto;
                        let after = attaching.after_seq.unwrap_or(0);
                        let key = self.next_internal;
                        self.next_internal += 1;
                        self.fetching.insert(key, attaching);
                        let (log, id, control) = (log.clone(), self.hub.id(), self.control_tx.clone());
                        tokio::spawn(async move {
                            let result = log.after(&id, after, Some(upto)).await;
                            let _ = control.send(Control::Fetched { key, result }).await;
                        });
                    }
                    _ => self.complete_attach(attaching, None),
                }
            }
            (Some(Internal::Attach(attaching)), _) => {
                let _ = attaching.done.send(false);
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
            (Some(Internal::Interrupted { worker }), Ok(Reply::State(state))) => {
                tracing::warn!(
                    "session {}: its run on {worker} was interrupted by the loss of that worker",
                    state.session_id
                );
                for event in crate::interrupted::events(&worker, state.model.as_deref()) {
                    self.event(event, None);
                }
            }
            (Some(Internal::Identity | Internal::Interrupted { .. }), _) | (None, _) => {}
        }
    }

    /// The actor switched to session `new` (fork, clone): take its lock, let go of the old one.
    fn rekey(&mut self, old: &str, new: &str) {
        match &self.lock {
            // In a cluster the lease stays the old id's (a fork's new id is not leased).
            Some(Ownership::Leased(_)) => tracing::warn!("session {new}: a fork under --cluster keeps {old}'s lease"),
            _ => match self.home.lock_for(new) {
                Ok(lock) => self.lock = Some(Ownership::Local(lock)),
                Err(e) => tracing::warn!("session {new}: {e}"),
            },
        }
        if let Ok(mut id) = self.hub.id.lock() {
            *id = new.to_string();
        }
        self.home.rekey(old, new, &self.hub);
        tracing::info!("session {old} continues as {new}");
    }

    /// Queue the attach's reply, the events it missed, the pending dialogs,
    /// and from then on the live events. `fetched`: the older events read
    /// from the stream (up to `attaching.upto`).
    fn complete_attach(&mut self, attaching: Attaching, fetched: Option<Result<Vec<Stored>, String>>) {
        let Attaching { conn, tag, after_seq, done, pending, cut, upto } = attaching;
        if self.hub.is_closing() {
            let _ = done.send(false);
            return;
        }
        // Dialogs not pending at the cut are over; those asked since are live.
        self.dialogs.retain(|(id, (seq, _))| pending.contains(id) || *seq > cut);
        let mut stream_gap = false;
        let was_fetched = fetched.is_some();
        let older: Vec<(u64, Arc<AgentEvent>)> = match fetched {
            None => Vec::new(),
            Some(Ok(events)) => {
                stream_gap = broken_chain(after_seq.unwrap_or(0), upto, &events);
                events.into_iter().map(|e| (e.seq, Arc::new(e.event))).collect()
            }
            Some(Err(e)) => {
                tracing::warn!("session {}: cannot read its older events: {e}", self.hub.id());
                stream_gap = true;
                Vec::new()
            }
        };
        let from = if was_fetched { after_seq.map(|a| a.max(upto)) } else { after_seq };
        let replay = from.map(|after| self.buffer.after(after));
        let held = replay.as_ref().map_or(&[][..], |r| &r.events[..]);
        // `older` still set: the buffer dropped events the stream was not asked for.
        let gap = stream_gap || replay.as_ref().is_some_and(|r| r.gap || r.older.is_some());
        let replayed = (older.len() + held.len()) as u64;
        let mut ok = true;
        if let Some(tag) = tag {
            let attachment = Attachment {
                session_id: self.hub.id(),
                session_file: self.session_file.clone(),
                last_seq: self.buffer.last_seq(),
                replayed,
                gap,
            };
            let result = Ok(Reply::Switched(Switched { cancelled: false, attached: Some(attachment) }));
            ok &= deliver_output(&conn, Output::Reply { tag, result }, None);
        }
        let sent: std::collections::HashSet<u64> = older.iter().chain(held.iter()).map(|(seq, _)| *seq).collect();
        for (seq, event) in older.iter().chain(held.iter()) {
            ok = ok && deliver(&conn, event, *seq);
        }
        for (_, (seq, event)) in self.dialogs.iter().filter(|(_, (seq, _))| !sent.contains(seq)) {
            ok = ok && deliver(&conn, event, *seq);
        }
        if ok {
            self.conns.retain(|c| c.id != conn.id);
            self.departed.retain(|d| d.id != conn.id);
            self.conns.push(conn);
        }
        let _ = done.send(ok);
    }

    /// A mirror's owner is gone or let go: find the session again.
    fn lost(&mut self, reason: String) {
        if self.moving {
            return;
        }
        let id = self.hub.id();
        tracing::info!("session {id}: {reason}; finding it again");
        self.moving = true;
        self.lost_reason = reason;
        self.hub.moving.store(true, Ordering::SeqCst);
        self.hub.closing.store(true, Ordering::SeqCst);
        self.home.forget(&id, &self.hub);
        for (_, attaching) in self.fetching.drain() {
            let _ = attaching.done.send(false);
        }
        for (_, purpose) in self.internal.drain() {
            fail(purpose);
        }
        let (finding, control) = (self.home.clone().find(id), self.control_tx.clone());
        tokio::spawn(async move {
            let result = finding.await;
            let _ = control.send(Control::Moved(result)).await;
        });
    }

    fn moved(&mut self, result: Result<Arc<Hub>, CoreError>) {
        let id = self.hub.id();
        let conns = std::mem::take(&mut self.conns);
        match result {
            Ok(next) => {
                let (hub, control, last) = (self.hub.clone(), self.control_tx.clone(), self.buffer.last_seq());
                let (ctl, why) = (self.ctl.take(), self.lost_reason.clone());
                tokio::spawn(async move {
                    for conn in &conns {
                        if next.attach(conn.clone(), None, Some(last)).await.is_err() {
                            conn.kick.kick(format!("session {} could not be attached again", next.id()));
                        }
                    }
                    // The ops that waited go there now; the answers lost with the owner are told.
                    if let Some(ctl) = ctl {
                        let unanswered = ctl.finish(Some(next.agent().clone())).await.unwrap_or_default();
                        for tag in unanswered {
                            let (conn, local) = split_tag(tag);
                            if let Some(handle) = conns.iter().find(|c| c.id == conn) {
                                let result = Err(crate::cluster::mirror::answer_lost(&why));
                                deliver_output(handle, Output::Reply { tag: local, result }, None);
                            }
                        }
                    }
                    tracing::info!("session {}: its connections moved on", next.id());
                    if let Ok(mut successor) = hub.successor.lock() {
                        *successor = Some(next);
                    }
                    let _ = control.send(Control::MovedAll).await;
                });
            }
            Err(e) => {
                let reason =
                    format!("session {id}: its worker let go of it and it cannot be opened again: {}", e.message);
                tracing::warn!("{reason}");
                for conn in conns {
                    if conn.queue.try_send(Queued::Closed(reason.clone())).is_err() {
                        conn.kick.kick(reason.clone());
                    }
                }
                self.done = true;
            }
        }
    }

    async fn finish(mut self, mut control: mpsc::Receiver<Control>) {
        self.hub.closing.store(true, Ordering::SeqCst);
        let id = self.hub.id();
        for conn in self.conns.drain(..) {
            if conn.queue.try_send(Queued::Closed(format!("session {id} has ended"))).is_err() {
                conn.kick.kick(format!("session {id} has ended"));
            }
        }
        for (_, purpose) in self.internal.drain() {
            fail(purpose);
        }
        for (_, attaching) in self.fetching.drain() {
            let _ = attaching.done.send(false);
        }
        control.close();
        while let Ok(msg) = control.try_recv() {
            match msg {
                Control::Attach { done, .. } => drop(done.send(false)),
                Control::Detach { done, .. } => drop(done.send(())),
                Control::Fetched { .. } | Control::Moved(_) | Control::MovedAll | Control::LookAtLease => {}
            }
        }
        let successor = self.hub.successor.lock().ok().and_then(|s| s.as_ref().map(|h| h.agent().clone()));
        if self.hub.is_mirror() {
            // A mirror that did not move: the ops still on their way fail with it.
            if let Some(ctl) = self.ctl.take() {
                drop(ctl.finish(successor));
            }
        } else if let (Some(log), Some(_)) = (&self.log, self.buffer.last_here()) {
            // Before another worker may take the session: its events are stored.
            if !log.settle(&id, SETTLE_WAIT).await {
                tracing::warn!("session {id}: its last events were not all stored within {SETTLE_WAIT:?}");
            }
        }
        // Let go of the lock before leaving the registry, so a new load
        // of this session in this process can take it.
        drop(self.lock.take());
        self.home.forget(&id, &self.hub);
        self.hub.running.send_replace(false);
        self.hub.closed.cancel();
        tracing::debug!("session {id}: hub stopped");
    }
}

fn fail(purpose: Internal) {
    match purpose {
        Internal::Attach(attaching) => drop(attaching.done.send(false)),
        Internal::Detach { done, .. } => drop(done.send(())),
        Internal::Unload | Internal::Identity | Internal::Interrupted { .. } => {}
    }
}

/// True when the events read from the stream after `after` do not reach
/// `upto` without a hole (the stream's retention dropped some).
fn broken_chain(after: u64, upto: u64, events: &[Stored]) -> bool {
    let mut reached = after;
    for event in events {
        if event.prev > reached {
            return true;
        }
        reached = event.seq;
    }
    reached < upto
}

/// Where a pump's output comes from: its actor, or its mirror's owner.
enum Source {
    Actor(mpsc::Receiver<Output>),
    Mirror(mpsc::Receiver<MirrorItem>),
}

/// What routing an item of the feed asks of the pump's loop.
enum Fed {
    Go,
    /// The feed ended (the pump may go on: a mirror finds its session again).
    Closed,
    /// The pump ends.
    Stop,
}

/// Most outputs routed in one turn of the pump's loop (its other inputs
/// are looked at between turns).
const OUTPUTS_AT_HAND: usize = 256;

/// The next item if it is already at hand (`None` when it is not; the feed
/// ending is seen by [`next`]).
fn try_next(feed: &mut Source) -> Option<MirrorItem> {
    match feed {
        Source::Actor(outputs) => outputs.try_recv().ok().map(|output| MirrorItem::Output(output, None)),
        Source::Mirror(items) => items.try_recv().ok(),
    }
}

async fn next(feed: &mut Source) -> Option<MirrorItem> {
    match feed {
        Source::Actor(outputs) => outputs.recv().await.map(|output| MirrorItem::Output(output, None)),
        Source::Mirror(items) => items.recv().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(seq: u64, prev: u64) -> Stored {
        Stored { seq, prev, running: false, event: AgentEvent::TurnStart }
    }

    #[test]
    fn a_hole_in_the_stream_is_a_gap() {
        assert!(!broken_chain(10, 12, &[stored(11, 10), stored(12, 11)]));
        // A new load's first event names the previous owner's last one.
        assert!(!broken_chain(10, 900, &[stored(11, 10), stored(900, 11)]));
        assert!(broken_chain(10, 12, &[stored(12, 11)]));
        assert!(broken_chain(10, 12, &[stored(11, 10)]));
        assert!(!broken_chain(12, 12, &[]));
        assert!(broken_chain(5, 12, &[]));
    }
}
