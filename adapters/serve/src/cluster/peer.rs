//! The owner's side of mirrors: this worker answers its peers' requests
//! ([`super::wire::PeerRequest`]) on its command subject. A mirror is, to
//! the session's hub here, one more connection: its queue is drained by a
//! task that sends each event and reply to the mirror as a numbered frame
//! (a heartbeat when there is nothing to send), and its clients' ops go to
//! the session's actor tagged for it. The mirror's own tags are mapped to
//! this connection's 32-bit ones and back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::StreamExt;
use pi_core::agent::Output;
use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::RequestTag;
use pi_transport::Delivered;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::mirror::OPEN_TAG;
use super::wire::{
    Frame, FrameBody, MirrorId, PART_HEADER, PeerAnswer, PeerRequest, command_subject, mirror_subject, parts,
};
use crate::conn::{ConnHandle, ConnId, Kick, Queued, actor_tag};
use crate::hub::Hub;
use crate::registry::Registry;

/// The mirror's tags by this connection's.
#[derive(Debug, Default)]
struct Tags {
    next: u32,
    remote: HashMap<RequestTag, RequestTag>,
}

impl Tags {
    fn local_for(&mut self, remote: RequestTag) -> RequestTag {
        self.next = self.next.wrapping_add(1).max(1);
        let local = RequestTag::from(self.next);
        self.remote.insert(local, remote);
        local
    }
}

struct Peer {
    hub: Arc<Hub>,
    conn: ConnId,
    tags: Arc<Mutex<Tags>>,
}

/// The mirrors of this worker's sessions held by other workers.
pub struct Peers {
    cluster: Cluster,
    registry: Weak<Registry>,
    peers: Mutex<HashMap<MirrorId, Peer>>,
    queue_messages: usize,
}

/// Answer the peers' requests until `stop`.
pub fn serve(cluster: Cluster, registry: Weak<Registry>, queue_messages: usize, stop: CancellationToken) {
    let peers = Arc::new(Peers { cluster, registry, peers: Mutex::new(HashMap::new()), queue_messages });
    tokio::spawn(async move {
        let subject = command_subject(&peers.cluster.options.worker);
        let mut requests = match peers.cluster.client.subscribe(subject.clone()).await {
            Ok(requests) => requests,
            Err(e) => {
                tracing::error!("pi serve: cannot serve other workers on {subject}: {e}");
                return;
            }
        };
        loop {
            let message = tokio::select! {
                message = requests.next() => message,
                _ = stop.cancelled() => break,
            };
            let Some(message) = message else { break };
            let peers = peers.clone();
            tokio::spawn(async move {
                let answer = match serde_json::from_slice::<PeerRequest>(&message.payload) {
                    Ok(request) => peers.handle(request).await,
                    Err(e) => PeerAnswer::Failed(CoreError::invalid("request", format!("a peer's request: {e}"))),
                };
                if let (Some(reply), Ok(payload)) = (message.reply, serde_json::to_vec(&answer)) {
                    let _ = peers.cluster.client.publish(reply, Bytes::from(payload)).await;
                }
            });
        }
        let _ = requests.unsubscribe().await;
    });
}

impl Peers {
    fn peer(&self, mirror: &MirrorId) -> Option<(Arc<Hub>, ConnId, Arc<Mutex<Tags>>)> {
        let peers = self.peers.lock().ok()?;
        peers.get(mirror).map(|p| (p.hub.clone(), p.conn, p.tags.clone()))
    }

    async fn handle(self: &Arc<Self>, request: PeerRequest) -> PeerAnswer {
        match request {
            PeerRequest::Open { session, mirror, after_seq } => self.open(session, mirror, after_seq).await,
            PeerRequest::Op { mirror, tag, op } => {
                let Some((hub, conn, tags)) = self.peer(&mirror) else { return PeerAnswer::UnknownMirror };
                if hub.is_closing() {
                    return PeerAnswer::NotOwner;
                }
                let local = tag.map(|t| tags.lock().map(|mut tags| tags.local_for(t)).unwrap_or(0));
                match hub.agent().submit(local.map(|l| actor_tag(conn, l)), op).await {
                    Ok(()) => PeerAnswer::Done,
                    Err(_) => PeerAnswer::NotOwner,
                }
            }
            PeerRequest::Close { mirror } => {
                let peer = self.peers.lock().ok().and_then(|mut peers| peers.remove(&mirror));
                if let Some(peer) = peer {
                    peer.hub.detach(peer.conn).await;
                }
                PeerAnswer::Done
            }
        }
    }

    async fn open(self: &Arc<Self>, session: String, mirror: MirrorId, after_seq: Option<u64>) -> PeerAnswer {
        let Some(registry) = self.registry.upgrade() else { return PeerAnswer::NotOwner };
        let Some(hub) = registry.get(&session).filter(|h| !h.is_mirror()) else { return PeerAnswer::NotOwner };
        let (queue, queued) = mpsc::channel(self.queue_messages.max(1));
        let kick = Kick::default();
        let conn = ConnHandle { id: registry.next_conn_id(), queue, kick: kick.clone() };
        let tags = Arc::new(Mutex::new(Tags::default()));
        let open = tags.lock().map(|mut t| t.local_for(OPEN_TAG)).unwrap_or(1);
        let conn_id = conn.id;
        if let Ok(mut peers) = self.peers.lock() {
            // A mirror opened again (its worker lost track): the old attachment goes.
            if let Some(old) =
                peers.insert(mirror.clone(), Peer { hub: hub.clone(), conn: conn_id, tags: tags.clone() })
            {
                let hub = old.hub.clone();
                tokio::spawn(async move { hub.detach(old.conn).await });
            }
        }
        let subject = mirror_subject(&mirror.worker, mirror.mirror);
        let beat = (self.cluster.options.lease_ttl / 3).max(Duration::from_millis(200));
        tokio::spawn(forward(self.clone(), mirror.clone(), conn_id, queued, kick, tags, subject, beat));
        match hub.attach(conn, Some(open), after_seq).await {
            Ok(()) => PeerAnswer::Done,
            Err(_) => {
                if let Ok(mut peers) = self.peers.lock()
                    && peers.get(&mirror).is_some_and(|p| p.conn == conn_id)
                {
                    peers.remove(&mirror);
                }
                PeerAnswer::NotOwner
            }
        }
    }

    fn forget(&self, mirror: &MirrorId, conn: ConnId) {
        if let Ok(mut peers) = self.peers.lock()
            && peers.get(mirror).is_some_and(|p| p.conn == conn)
        {
            peers.remove(mirror);
        }
    }
}

/// Send the mirror's queue as frames, in order, until the session lets go of
/// it (or the mirror does not keep up): then a last `Closed` frame.
#[allow(clippy::too_many_arguments)]
async fn forward(
    peers: Arc<Peers>,
    mirror: MirrorId,
    conn: ConnId,
    mut queued: mpsc::Receiver<Queued>,
    kick: Kick,
    tags: Arc<Mutex<Tags>>,
    subject: String,
    beat: Duration,
) {
    let client = peers.cluster.client.clone();
    let max = client.max_payload().saturating_sub(1024).max(4096);
    let mut n = 0;
    loop {
        let (body, last) = tokio::select! {
            item = queued.recv() => match item.map(Queued::delivered) {
                Some(Ok(Delivered { output, seq })) => (frame_body(output, seq, &tags), false),
                Some(Err(reason)) => (FrameBody::Closed { reason }, true),
                None => (FrameBody::Closed { reason: "the session let go of the mirror".into() }, true),
            },
            reason = kick.kicked() => (FrameBody::Closed { reason: format!("the mirror fell behind: {reason}") }, true),
            // The first frame is the answer to the opening.
            _ = tokio::time::sleep(beat), if n > 0 => (FrameBody::Beat, false),
        };
        n += 1;
        let payload = match serde_json::to_vec(&Frame { n, body }) {
            Ok(payload) => Bytes::from(payload),
            Err(e) => {
                tracing::warn!("mirror {}/{}: a frame could not be written: {e}", mirror.worker, mirror.mirror);
                n -= 1;
                continue;
            }
        };
        let split = parts(payload, max);
        let count = split.len();
        for (i, part) in split.into_iter().enumerate() {
            let sent = if count == 1 {
                client.publish(subject.clone(), part).await
            } else {
                let mut headers = HeaderMap::new();
                headers.insert(PART_HEADER, format!("{}/{count}", i + 1));
                client.publish_with_headers(subject.clone(), headers, part).await
            };
            if let Err(e) = sent {
                tracing::debug!("mirror {}/{}: {e}", mirror.worker, mirror.mirror);
            }
        }
        if last {
            break;
        }
    }
    peers.forget(&mirror, conn);
}

/// The frame of one queued output, its tags the mirror's own.
fn frame_body(output: Output, seq: Option<u64>, tags: &Mutex<Tags>) -> FrameBody {
    match output {
        Output::Event(AgentEvent::BashExecutionUpdate { request, delta }) => {
            let request = request.and_then(|local| tags.lock().ok()?.remote.get(&local).copied());
            FrameBody::Event { seq: seq.unwrap_or(0), event: AgentEvent::BashExecutionUpdate { request, delta } }
        }
        Output::Event(event) => FrameBody::Event { seq: seq.unwrap_or(0), event },
        Output::Reply { tag, result } => {
            let remote = tags.lock().ok().and_then(|mut t| t.remote.remove(&tag)).unwrap_or(tag);
            FrameBody::Reply { tag: remote, result }
        }
    }
}
