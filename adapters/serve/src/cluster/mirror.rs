//! A mirror: this worker's hub for a session owned by another worker. Its
//! clients attach to it as to any hub; its agent is a relay whose ops go to
//! the owner over the bus (one request each, in order), and its output is
//! the owner's frames for it (events with the owner's `seq`, replies).
//!
//! The mirror tells its hub the owner is lost ([`MirrorItem::Lost`]) when
//! the owner closes it (the session unloads or is handed over), a frame is
//! missing, nothing (not even a heartbeat) came for longer than the lease
//! TTL, or an op finds nobody serving the session. The hub then finds the
//! session again (taking it over when its lease expired) and moves its
//! connections there; the ops sent meanwhile wait and go to the new place
//! ([`MirrorCtl::finish`]).

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

/// The hub's hold on its mirror's op relay.
pub struct MirrorCtl {
    finish: oneshot::Sender<Option<AgentHandle>>,
}

impl std::fmt::Debug for MirrorCtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MirrorCtl")
    }
}

impl MirrorCtl {
    /// The mirror is over: the ops still on their way go to `successor`
    /// (where the session moved), or, without one, are dropped with the mirror.
    pub fn finish(self, successor: Option<AgentHandle>) {
        let _ = self.finish.send(successor);
    }
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
    let payload = serde_json::to_vec(request).map_err(|e| OpenFailure::Bus(e.to_string()))?;
    let request_to = command_subject(worker);
    let sent = cluster
        .client
        .send_request(request_to, Request::new().payload(Bytes::from(payload)).timeout(Some(ANSWER_WAIT)));
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
    match ask(cluster, owner, &request).await? {
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
    let silence = cluster.options.lease_ttl + Duration::from_secs(1);
    tokio::spawn(read_frames(frames, joiner, items_tx.clone(), owner.to_string(), silence, stop.clone()));
    let link = Relay { cluster: cluster.clone(), owner: owner.to_string(), me, items: items_tx, stop };
    tokio::spawn(link.run(ops, finished));
    Ok(Opened {
        agent,
        items,
        ctl: MirrorCtl { finish },
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
async fn read_frames(
    mut frames: async_nats::Subscriber,
    mut joiner: Joiner,
    items: mpsc::Sender<MirrorItem>,
    owner: String,
    silence: Duration,
    stop: CancellationToken,
) {
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
            break Some(format!("frames from its owner {owner} were lost ({} came after {})", frame.n, expected - 1));
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
        let _ = items.send(MirrorItem::Lost(reason)).await;
    }
}

/// The mirror's op relay: the clients' ops to the owner, in order.
struct Relay {
    cluster: Cluster,
    owner: String,
    me: MirrorId,
    items: mpsc::Sender<MirrorItem>,
    stop: CancellationToken,
}

/// Where an op went.
enum Sent {
    Done,
    /// Nobody took it: it waits for the session's new place.
    Held,
}

impl Relay {
    async fn run(
        self,
        mut ops: mpsc::Receiver<(Option<RequestTag>, Op)>,
        mut finished: oneshot::Receiver<Option<AgentHandle>>,
    ) {
        let mut held: Vec<(Option<RequestTag>, Op)> = Vec::new();
        let successor = loop {
            tokio::select! {
                successor = &mut finished => break successor.ok().flatten(),
                op = ops.recv() => match op {
                    None => break None,
                    Some(op) if !held.is_empty() => held.push(op),
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
        let request = PeerRequest::Op { mirror: self.me.clone(), tag, op };
        match ask(&self.cluster, &self.owner, &request).await {
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
            Err(OpenFailure::Bus(reason)) => {
                let text = format!(
                    "the request could not be relayed to the session's worker ({reason}); it may not have run: try again"
                );
                self.reply(tag, Err(CoreError::new(ErrorKind::Busy, text).with_retryable(true))).await;
                self.lost(reason).await;
                Sent::Done
            }
        }
    }
}
