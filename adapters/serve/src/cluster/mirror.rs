//! A mirror: this worker's hub for a session owned by another worker. Its
//! clients attach to it as to any hub; its agent is a relay whose ops go to
//! the owner over the bus (one request each, in order), and its output is
//! the owner's frames for it (events with the owner's `seq`, replies).
//!
//! The mirror tells its hub the owner is lost ([`MirrorItem::Lost`]) when
//! the owner closes it (the session unloads or is handed over), a frame is
//! missing, nothing (not even a heartbeat) came for two heartbeats and a
//! second, or an op finds nobody serving the session. The hub then finds the
//! session again (taking it over when its lease expired) and moves its
//! connections there; the ops sent meanwhile wait and go to the new place
//! ([`MirrorCtl::finish`]).
//!
//! Every request the owner accepted is *in flight* until its answer reaches
//! the client ([`MirrorCtl::answered`]). When the mirror is lost with
//! requests still in flight (their answers were in frames that never came:
//! the bus restarted, the owner died), [`MirrorCtl::finish`] names them, and
//! their clients are told the request may or may not have run. A request
//! the owner never took (it let go of the session first) is not in flight:
//! it waits and goes to the session's new place.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::{Request, RequestErrorKind};
use bytes::Bytes;
use futures::StreamExt;
use pi_core::agent::{AgentHandle, Output};
use pi_core::error::{CoreError, ErrorKind};
use pi_core::op::{Op, Reply, RequestTag};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::wire::{
    Frame, FrameBody, Joiner, MirrorId, PART_HEADER, PeerAnswer, PeerRequest, command_subject, mirror_subject,
};

/// The mirror's own tag for its opening reply.
pub const OPEN_TAG: RequestTag = 0;

/// Ops a mirror's clients may queue before they wait.
const OP_QUEUE: usize = 256;

/// Items between the frame reader and the hub.
const ITEM_QUEUE: usize = 4096;

/// How long an owner may take to answer a request.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// What a mirror hands its hub.
// Nearly every item is an output: boxing it would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum MirrorItem {
    /// An event (with the owner's `seq`) or a reply.
    Output(Output, Option<u64>),
    /// The owner is gone or let go: find the session again.
    Lost(String),
    /// The mirror was closed on purpose (unloaded, the server stops).
    Ended,
}

/// The tags of the requests the owner accepted whose answers have not
/// reached their clients yet.
#[derive(Debug, Clone, Default)]
struct InFlight(Arc<Mutex<HashSet<RequestTag>>>);

impl InFlight {
    fn add(&self, tag: RequestTag) {
        if let Ok(mut tags) = self.0.lock() {
            tags.insert(tag);
        }
    }

    fn remove(&self, tag: RequestTag) {
        if let Ok(mut tags) = self.0.lock() {
            tags.remove(&tag);
        }
    }

    fn take(&self) -> Vec<RequestTag> {
        let mut tags: Vec<RequestTag> = self.0.lock().map(|mut tags| tags.drain().collect()).unwrap_or_default();
        tags.sort_unstable();
        tags
    }
}

/// How the mirror ends: where its waiting ops go, and who hears of the
/// requests whose answers were lost.
struct Finish {
    successor: Option<AgentHandle>,
    unanswered: oneshot::Sender<Vec<RequestTag>>,
}

/// The hub's hold on its mirror's op relay.
pub struct MirrorCtl {
    finish: oneshot::Sender<Finish>,
    in_flight: InFlight,
}

impl std::fmt::Debug for MirrorCtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MirrorCtl")
    }
}

impl MirrorCtl {
    /// The owner's answer to request `tag` reached its client.
    pub fn answered(&self, tag: RequestTag) {
        self.in_flight.remove(tag);
    }

    /// The mirror is over: the ops still on their way go to `successor`
    /// (where the session moved), or, without one, are dropped with the
    /// mirror. Resolves to the requests the owner accepted whose answers
    /// never came (empty when the relay is gone).
    pub fn finish(self, successor: Option<AgentHandle>) -> oneshot::Receiver<Vec<RequestTag>> {
        let (unanswered, rx) = oneshot::channel();
        let _ = self.finish.send(Finish { successor, unanswered });
        rx
    }
}

/// What a client hears when the answer to its request was lost with the
/// link to the session's worker.
pub fn answer_lost(why: &str) -> CoreError {
    CoreError::new(
        ErrorKind::Internal,
        format!(
            "the answer to this request was lost with the link to the session's worker ({why}): \
             the request may or may not have run; check the session's state before sending it again"
        ),
    )
}

/// A mirror just opened.
pub struct Opened {
    pub agent: AgentHandle,
    pub items: mpsc::Receiver<MirrorItem>,
    pub ctl: MirrorCtl,
    /// The owner's latest event when the mirror attached.
    pub last_seq: u64,
    pub session_file: Option<String>,
}

/// Why a mirror could not be opened.
#[derive(Debug)]
pub enum OpenFailure {
    /// Nobody serves the session there (the owner is gone, or not yet ready).
    NotThere(String),
    /// The bus did not carry the request.
    Bus(String),
}

async fn ask(cluster: &Cluster, worker: &str, request: &PeerRequest) -> Result<PeerAnswer, OpenFailure> {
    ask_within(cluster, worker, request, ANSWER_WAIT).await
}

/// How long an opening waits for the owner: a live owner answers at once,
/// and a dead one's lease expires within the TTL (the caller then takes the
/// session over instead of waiting on it).
fn open_wait(cluster: &Cluster) -> Duration {
    ANSWER_WAIT.min(cluster.options.lease_ttl.max(Duration::from_secs(1)))
}

async fn ask_within(
    cluster: &Cluster,
    worker: &str,
    request: &PeerRequest,
    wait: Duration,
) -> Result<PeerAnswer, OpenFailure> {
    let payload = serde_json::to_vec(request).map_err(|e| OpenFailure::Bus(e.to_string()))?;
    let request_to = command_subject(worker);
    let sent =
        cluster.client.send_request(request_to, Request::new().payload(Bytes::from(payload)).timeout(Some(wait)));
    match sent.await {
        Ok(message) => serde_json::from_slice(&message.payload)
            .map_err(|e| OpenFailure::Bus(format!("an answer from {worker} could not be read: {e}"))),
        Err(e) if e.kind() == RequestErrorKind::NoResponders => {
            Err(OpenFailure::NotThere(format!("worker {worker} does not answer on the bus")))
        }
        Err(e) if e.kind() == RequestErrorKind::MaxPayloadExceeded => Err(OpenFailure::Bus(format!(
            "the request is too big to relay to worker {worker} over the bus ({e}); raise the NATS server's max_payload"
        ))),
        Err(e) => Err(OpenFailure::Bus(format!("worker {worker}: {e}"))),
    }
}

/// Open a mirror (numbered `number` on this worker) of session `id`, owned by `owner`.
pub async fn open(cluster: &Cluster, id: &str, owner: &str, number: u64) -> Result<Opened, OpenFailure> {
    let me = MirrorId { worker: cluster.options.worker.clone(), mirror: number };
    let bus = |e: String| OpenFailure::Bus(e);
    let mut frames =
        cluster.client.subscribe(mirror_subject(&me.worker, number)).await.map_err(|e| bus(e.to_string()))?;
    let request = PeerRequest::Open { session: id.to_string(), mirror: me.clone(), after_seq: None };
    match ask_within(cluster, owner, &request, open_wait(cluster)).await? {
        PeerAnswer::Done => {}
        PeerAnswer::NotOwner | PeerAnswer::UnknownMirror => {
            return Err(OpenFailure::NotThere(format!("worker {owner} does not serve session {id}")));
        }
        PeerAnswer::Failed(e) => return Err(OpenFailure::Bus(e.message)),
    }
    // The owner's first frame answers the opening: where its events stand.
    let mut joiner = Joiner::default();
    let first = tokio::time::timeout(ANSWER_WAIT, read_frame(&mut frames, &mut joiner)).await;
    let attachment = match first {
        Ok(Some(Ok(Frame {
            n: 1,
            body:
                FrameBody::Reply {
                    tag: OPEN_TAG,
                    result: Ok(Reply::Switched(pi_core::op::Switched { attached: Some(a), .. })),
                },
        }))) => a,
        Ok(Some(Ok(Frame { body: FrameBody::Closed { reason }, .. }))) => return Err(OpenFailure::NotThere(reason)),
        Ok(other) => {
            let _ = ask(cluster, owner, &PeerRequest::Close { mirror: me }).await;
            return Err(bus(format!("worker {owner} opened the mirror of {id} with {other:?}")));
        }
        Err(_) => {
            let _ = ask(cluster, owner, &PeerRequest::Close { mirror: me }).await;
            return Err(bus(format!("worker {owner} did not send the mirror of {id} within {ANSWER_WAIT:?}")));
        }
    };
    let (items_tx, items) = mpsc::channel(ITEM_QUEUE);
    let (agent, ops) = AgentHandle::relay(OP_QUEUE);
    let (finish, finished) = oneshot::channel();
    let stop = CancellationToken::new();
    let gone = CancellationToken::new();
    let in_flight = InFlight::default();
    // The owner beats every third of the TTL: two missed beats and a second
    // of slack, so a dead owner's session is looked for again about when
    // its lease goes stale (then it is taken over).
    let silence = cluster.options.lease_ttl * 2 / 3 + Duration::from_secs(1);
    let reader =
        Reader { items: items_tx.clone(), owner: owner.to_string(), silence, stop: stop.clone(), gone: gone.clone() };
    tokio::spawn(reader.run(frames, joiner));
    let link = Relay {
        cluster: cluster.clone(),
        owner: owner.to_string(),
        me,
        items: items_tx,
        stop,
        gone,
        in_flight: in_flight.clone(),
    };
    tokio::spawn(link.run(ops, finished));
    Ok(Opened {
        agent,
        items,
        ctl: MirrorCtl { finish, in_flight },
        last_seq: attachment.last_seq,
        session_file: attachment.session_file,
    })
}

async fn read_frame(frames: &mut async_nats::Subscriber, joiner: &mut Joiner) -> Option<Result<Frame, String>> {
    loop {
        let message = frames.next().await?;
        let part = message.headers.as_ref().and_then(|h| h.get(PART_HEADER)).map(|v| v.as_str().to_string());
        match joiner.take(part.as_deref(), &message.payload) {
            Ok(Some(whole)) => return Some(serde_json::from_slice(&whole).map_err(|e| format!("a frame: {e}"))),
            Ok(None) => continue,
            Err(e) => return Some(Err(e)),
        }
    }
}

/// The owner's frames as the hub's items, until the owner lets go, goes
/// silent, or a frame is missing.
struct Reader {
    items: mpsc::Sender<MirrorItem>,
    owner: String,
    silence: Duration,
    stop: CancellationToken,
    /// Cancelled once the owner is lost: the relay then holds the ops.
    gone: CancellationToken,
}

impl Reader {
    async fn run(self, mut frames: async_nats::Subscriber, mut joiner: Joiner) {
        let Reader { items, owner, silence, stop, gone } = self;
        let mut expected = 2;
        let lost = loop {
            let frame = tokio::select! {
                frame = tokio::time::timeout(silence, read_frame(&mut frames, &mut joiner)) => frame,
                _ = stop.cancelled() => break None,
            };
            let frame = match frame {
                Err(_) => break Some(format!("no word from its owner {owner} for {silence:?}")),
                Ok(None) => break Some("the bus closed the mirror's subscription".to_string()),
                Ok(Some(Err(e))) => break Some(format!("a frame from its owner {owner} could not be read: {e}")),
                Ok(Some(Ok(frame))) => frame,
            };
            if frame.n != expected {
                break Some(format!(
                    "frames from its owner {owner} were lost ({} came after {})",
                    frame.n,
                    expected - 1
                ));
            }
            expected += 1;
            let item = match frame.body {
                FrameBody::Event { seq, event } => MirrorItem::Output(Output::Event(event), Some(seq)),
                FrameBody::Reply { tag, result } => MirrorItem::Output(Output::Reply { tag, result }, None),
                FrameBody::Beat => continue,
                FrameBody::Closed { reason } => break Some(format!("its owner {owner} let go of it: {reason}")),
            };
            if items.send(item).await.is_err() {
                break None;
            }
        };
        let _ = frames.unsubscribe().await;
        if let Some(reason) = lost {
            gone.cancel();
            let _ = items.send(MirrorItem::Lost(reason)).await;
        }
    }
}

/// The mirror's op relay: the clients' ops to the owner, in order.
struct Relay {
    cluster: Cluster,
    owner: String,
    me: MirrorId,
    items: mpsc::Sender<MirrorItem>,
    stop: CancellationToken,
    /// Cancelled once the owner is lost: ops wait for the session's new place.
    gone: CancellationToken,
    in_flight: InFlight,
}

/// Where an op went.
enum Sent {
    Done,
    /// Nobody took it: it waits for the session's new place.
    Held,
}

impl Relay {
    async fn run(self, mut ops: pi_core::agent::OpReceiver, mut finished: oneshot::Receiver<Finish>) {
        let mut held: Vec<(Option<RequestTag>, Op)> = Vec::new();
        let successor = loop {
            tokio::select! {
                finish = &mut finished => {
                    let Ok(Finish { successor, unanswered }) = finish else { break None };
                    // Nothing is being sent now: what is in flight stays unanswered.
                    let _ = unanswered.send(self.in_flight.take());
                    break successor;
                }
                op = ops.recv() => match op {
                    None => break None,
                    Some(op) if !held.is_empty() || self.gone.is_cancelled() => held.push(op),
                    Some((tag, op)) => {
                        if let Sent::Held = self.send(tag, op.clone()).await {
                            held.push((tag, op));
                        }
                    }
                },
            }
        };
        self.stop.cancel();
        let _ = ask(&self.cluster, &self.owner, &PeerRequest::Close { mirror: self.me.clone() }).await;
        let Some(successor) = successor else { return };
        // The session moved: what waited, then everything after, goes there.
        for (tag, op) in held {
            if tag.is_some_and(|t| crate::conn::split_tag(t).0 == 0) {
                continue;
            }
            if successor.submit(tag, op).await.is_err() {
                return;
            }
        }
        while let Some((tag, op)) = ops.recv().await {
            if tag.is_some_and(|t| crate::conn::split_tag(t).0 == 0) {
                continue;
            }
            if successor.submit(tag, op).await.is_err() {
                return;
            }
        }
    }

    async fn reply(&self, tag: Option<RequestTag>, result: Result<Reply, CoreError>) {
        if let Some(tag) = tag {
            let _ = self.items.send(MirrorItem::Output(Output::Reply { tag, result }, None)).await;
        }
    }

    async fn lost(&self, reason: String) {
        self.gone.cancel();
        let _ = self.items.send(MirrorItem::Lost(reason)).await;
    }

    async fn send(&self, tag: Option<RequestTag>, op: Op) -> Sent {
        match op {
            // The hub unloads its mirror, or the server stops: let go of the owner's session.
            Op::Unload | Op::Shutdown { .. } if tag.is_none_or(|t| crate::conn::split_tag(t).0 == 0) => {
                self.reply(tag, Ok(Reply::Ack)).await;
                self.stop.cancel();
                let _ = self.items.send(MirrorItem::Ended).await;
                return Sent::Done;
            }
            _ => {}
        }
        // In flight from before it is sent: its answer may come before the owner's "done".
        if let Some(tag) = tag {
            self.in_flight.add(tag);
        }
        let request = PeerRequest::Op { mirror: self.me.clone(), tag, op };
        let answer = ask(&self.cluster, &self.owner, &request).await;
        if let (Some(tag), false) = (tag, matches!(answer, Ok(PeerAnswer::Done) | Err(OpenFailure::Bus(_)))) {
            // The owner did not take it.
            self.in_flight.remove(tag);
        }
        match answer {
            Ok(PeerAnswer::Done) => Sent::Done,
            Ok(PeerAnswer::Failed(e)) => {
                self.reply(tag, Err(e)).await;
                Sent::Done
            }
            Ok(PeerAnswer::NotOwner | PeerAnswer::UnknownMirror) => {
                self.lost(format!("its owner {} no longer serves it", self.owner)).await;
                Sent::Held
            }
            Err(OpenFailure::NotThere(reason)) => {
                self.lost(reason).await;
                Sent::Held
            }
            // The owner may have taken it: it stays in flight until its
            // answer comes or the mirror is found lost without it.
            Err(OpenFailure::Bus(reason)) => {
                self.lost(reason).await;
                Sent::Done
            }
        }
    }
}
