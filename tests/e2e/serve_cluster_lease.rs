//! A cluster worker's leases when its renewals run late: alone in the
//! cluster, a worker paused past its lease TTL (SIGSTOP, then SIGCONT) takes
//! its expired leases again, moving each session's fencing epoch along, and
//! goes on serving its sessions (also one never written to its file); and
//! an owner paused mid-stream while another worker takes its session over
//! hands its still-connected client over to the new owner; and an owner
//! whose lease went to another worker stores none of its queued events
//! after the new owner's, even one already on its way to the server before
//! it could know (the server refuses it). The lease bucket is read with
//! `async-nats` on the same real nats-server.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use nix::sys::signal::Signal;
use pi_core::event::AgentEvent;
use pi_serve::cluster::events::{EVENT_STREAM, Numbered, Retention};
use pi_serve::cluster::lease::{Lease, LeaseError, owner_of};
use pi_serve::cluster::wire::event_subject;
use pi_serve::cluster::{Cluster, ClusterOptions};

use crate::harness::Sandbox;
use crate::serve::python_scenario;
use crate::serve_cluster::{Nats, cluster, session_file_text, shared_dir, signal, slow_pair, worker};

/// The fencing epoch recorded on shared storage for session `id` (0: none).
fn epoch_on_disk(shared: &Path, id: &str) -> u64 {
    let path = shared.join(".owners").join(format!("{id}.epoch"));
    std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0)
}

/// The lease bucket of the cluster (the workers created it).
async fn lease_bucket(nats: &Nats) -> kv::Store {
    let client = async_nats::connect(nats.url.as_str()).await.expect("connect to nats-server");
    async_nats::jetstream::new(client).get_key_value("pi_leases").await.expect("the lease bucket")
}

/// The live lease of session `id`: its revision and its value.
async fn lease_of(leases: &kv::Store, id: &str) -> Option<(u64, String)> {
    let entry = leases.entry(id).await.expect("read the lease bucket")?;
    (entry.operation == kv::Operation::Put)
        .then(|| (entry.revision, String::from_utf8_lossy(&entry.value).into_owned()))
}

#[tokio::test]
async fn a_worker_alone_paused_past_its_leases_takes_them_again_and_keeps_its_sessions() {
    let Some(nats) = Nats::start().await else { return };
    let sb = Sandbox::offline();
    let shared = shared_dir(&sb);
    let a = worker(&sb, &nats, &shared, "wa", "1").await;
    let url = a.url.clone();
    let (idle, written) = ("lease-idle-1", "lease-written-1");
    if python_scenario(&a, "scale_write", &[&url, written]).await.is_none() {
        return;
    }
    cluster(&a, "touch", &[&url, idle]).await;
    assert!(
        !std::fs::read_dir(&shared).expect("shared").flatten().any(|e| e.file_name().to_string_lossy().contains(idle))
    );
    let before = [epoch_on_disk(&shared, idle), epoch_on_disk(&shared, written)];
    assert!(before.iter().all(|e| *e > 0), "epochs before the pause: {before:?}");
    let leases = lease_bucket(&nats).await;

    // Paused until the bucket has expired both leases (no renewal came within the TTL).
    signal(&a, Signal::SIGSTOP);
    let mut expired = false;
    for _ in 0..600 {
        if lease_of(&leases, idle).await.is_none() && lease_of(&leases, written).await.is_none() {
            expired = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    signal(&a, Signal::SIGCONT);
    assert!(expired, "the leases of a paused worker never expired");

    // Back, the worker takes both again under new epochs, on disk and in the bucket.
    let mut after = [0, 0];
    for _ in 0..600 {
        after = [epoch_on_disk(&shared, idle), epoch_on_disk(&shared, written)];
        if after[0] > before[0] && after[1] > before[1] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(after[0] > before[0] && after[1] > before[1], "epochs {before:?} -> {after:?}: {}", a.pi.stderr());
    for (id, epoch) in [(idle, after[0]), (written, after[1])] {
        let (revision, value) = lease_of(&leases, id).await.expect("the lease is held again");
        assert!(value.contains("\"owner\":\"wa\""), "{id}: {value}");
        assert!(revision >= epoch, "{id}: revision {revision}, epoch {epoch}");
    }

    // The never-written session is still found by id; the written one goes on and is written under the new epoch.
    cluster(&a, "found", &[&url, idle]).await;
    cluster(&a, "resume", &[&url, written, "remember the lighthouse"]).await;
    let text = session_file_text(&shared, written);
    assert!(text.contains("once more"), "the prompt after the pause was not written: {text}");
    let log = a.pi.stderr();
    assert!(log.contains("taken again under fencing epoch"), "{log}");
    assert!(!log.contains("lease lost"), "{log}");
}

#[tokio::test]
async fn an_owner_paused_mid_stream_past_its_lease_hands_its_clients_over_to_the_new_owner() {
    let Some(nats) = Nats::start().await else { return };
    let pair = slow_pair(&nats).await;
    let (url_a, url_b) = (pair.a.url.clone(), pair.b.url.clone());
    if cluster(&pair.b, "paused", &[&url_a, &url_b, &pair.pid_a]).await.is_none() {
        return;
    }
    let log = pair.a.pi.stderr();
    assert!(log.contains("lease lost to another worker (wb)"), "{log}");
    assert!(log.contains("its connections moved on"), "{log}");
}

/// A worker's side of the cluster, in this process, with a 1 s lease TTL.
async fn member(nats: &Nats, name: &str) -> Cluster {
    member_with_ttl(nats, name, Duration::from_secs(1)).await
}

/// A worker's side of the cluster, in this process, with lease TTL `ttl`.
async fn member_with_ttl(nats: &Nats, name: &str, ttl: Duration) -> Cluster {
    let options = ClusterOptions {
        urls: vec![nats.url.clone()],
        credentials: None,
        lease_ttl: ttl,
        worker: name.to_string(),
        retention: Retention::default(),
    };
    Cluster::connect(options).await.expect("join the cluster")
}

fn numbered(session: &str, seq: u64, lease: &Lease, text: &str) -> Numbered {
    let event = AgentEvent::QueueUpdate { steering: vec![text.to_string()], follow_up: Vec::new() };
    Numbered {
        session: session.to_string(),
        seq,
        prev: seq - 1,
        running: false,
        event: Arc::new(event),
        lease: Some(lease.watch()),
    }
}

#[tokio::test]
async fn a_lost_owners_queued_events_are_not_stored_after_the_new_owners() {
    let Some(nats) = Nats::start().await else { return };
    let shared = tempfile::tempdir().expect("shared dir");
    let (a, b) = (member(&nats, "wa").await, member(&nats, "wb").await);
    let id = "lost-queue-1";
    let wait = Duration::from_secs(10);
    let old = owner(&a, shared.path(), id).await;
    a.events.keep(numbered(id, 1, &old, "A's first"));
    assert!(a.events.settle(id, wait).await, "A's first event was not stored");

    // A's lease goes (as when A is paused past it) and B takes the session over.
    let leases = lease_bucket(&nats).await;
    leases.delete(id).await.expect("expire A's lease");
    let new = owner(&b, shared.path(), id).await;
    b.events.keep(numbered(id, 2, &new, "B's first"));
    assert!(b.events.settle(id, wait).await, "B's first event was not stored");
    let watch = old.watch();
    for _ in 0..200 {
        if watch.is_lost() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(watch.is_lost(), "A's renewals never found its lease gone to B");

    // A's events still queued from before (numbered after its first) are not stored.
    a.events.keep(numbered(id, 2, &old, "A's stale second"));
    a.events.keep(numbered(id, 3, &old, "A's stale third"));
    assert!(a.events.settle(id, wait).await, "A's stale events were neither stored nor dropped");
    let tail = b.events.tail(id).await.expect("read the tail").expect("a tail");
    assert_eq!(tail.seq, 2, "the stream's last event is not B's");
    let stored = b.events.after(id, 0, None).await.expect("read the events");
    let texts: Vec<String> = stored.iter().map(|e| serde_json::to_string(&e.event).expect("json")).collect();
    assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2], "{texts:?}");
    assert!(texts[1].contains("B's first") && !texts.iter().any(|t| t.contains("stale")), "{texts:?}");
    drop(new);
}

/// The payload of the last message on session `id`'s event subject, read from the stream as is.
async fn last_message_text(nats: &Nats, id: &str) -> String {
    let client = async_nats::connect(nats.url.as_str()).await.expect("connect to nats-server");
    let stream = async_nats::jetstream::new(client).get_stream(EVENT_STREAM).await.expect("the event stream");
    let message = stream.get_last_raw_message_by_subject(&event_subject(id)).await.expect("the last message");
    String::from_utf8_lossy(&message.payload).into_owned()
}

/// Take session `id` as a worker does: its lease, then its event stream (the mark).
async fn owner(member: &Cluster, shared: &Path, id: &str) -> Lease {
    let (lease, _) = Lease::acquire(member, shared, id).await.expect("take the lease");
    let (_, mark) = member.events.mark(id).await.expect("mark the session's events");
    lease.chain_from(mark);
    lease
}

/// The case renewals cannot catch: A's event is handed to its connection
/// while A still believes it owns the session (its lease is gone, but no
/// renewal has told it yet; a long TTL keeps its renewals away during the
/// test), and reaches the server after B took the session over. The server
/// refuses it, and A learns its lease is gone.
#[tokio::test]
async fn a_stale_owners_event_reaching_the_server_after_the_new_owners_mark_is_refused() {
    let Some(nats) = Nats::start().await else { return };
    let shared = tempfile::tempdir().expect("shared dir");
    let ttl = Duration::from_secs(600);
    let (a, b) = (member_with_ttl(&nats, "wa", ttl).await, member_with_ttl(&nats, "wb", ttl).await);
    let id = "late-event-1";
    let wait = Duration::from_secs(10);
    let old = owner(&a, shared.path(), id).await;
    a.events.keep(numbered(id, 1, &old, "A's first"));
    assert!(a.events.settle(id, wait).await, "A's first event was not stored");

    // A's lease goes (expired while A was paused); B takes the session over and stores its first event.
    lease_bucket(&nats).await.delete(id).await.expect("expire A's lease");
    let new = owner(&b, shared.path(), id).await;
    b.events.keep(numbered(id, 2, &new, "B's first"));
    assert!(b.events.settle(id, wait).await, "B's first event was not stored");
    let watch = old.watch();
    assert!(!watch.is_lost() && !watch.in_doubt(), "A already knows: this would not test the server's check");

    // A's late event: nothing on A's side stops it; the server does.
    a.events.keep(numbered(id, 2, &old, "A's late second"));
    assert!(a.events.settle(id, wait).await, "A's late event was neither stored nor refused");
    assert!(watch.is_lost(), "A was not told that the stream refused its event");
    let last = last_message_text(&nats, id).await;
    assert!(last.contains("B's first"), "the session's last message is not B's: {last}");
    let stored = b.events.after(id, 0, None).await.expect("read the events");
    let texts: Vec<String> = stored.iter().map(|e| serde_json::to_string(&e.event).expect("json")).collect();
    assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2], "{texts:?}");
    assert!(texts[1].contains("B's first") && !texts.iter().any(|t| t.contains("late")), "{texts:?}");
    assert_eq!(b.events.tail(id).await.expect("tail").map(|t| t.seq), Some(2));

    // B goes on: its next event follows its own.
    b.events.keep(numbered(id, 3, &new, "B's second"));
    assert!(b.events.settle(id, wait).await);
    assert_eq!(b.events.after(id, 0, None).await.expect("read").iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    drop((old, new));
}

/// New leases are created through the lease keeper's connection, as their
/// renewals are (its small read buffer on the keeper's thread), not through
/// the worker's: twenty creates send and receive nothing on the
/// worker's connection. The leases are real: each is in the bucket under the
/// worker's name at its epoch, and taking one again is refused as owned by it.
#[tokio::test]
async fn new_leases_are_created_through_the_keepers_connection() {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(nats) = Nats::start().await else { return };
    let shared = tempfile::tempdir().expect("shared dir");
    // No renewal during the test: each lease stays at its create's revision.
    let a = member_with_ttl(&nats, "wa", Duration::from_secs(90)).await;
    let stats = a.client.statistics();
    let (sent, received) = (stats.out_messages.load(SeqCst), stats.in_messages.load(SeqCst));
    let ids: Vec<String> = (0..20).map(|n| format!("keeper-create-{n}")).collect();
    let mut held = Vec::new();
    for id in &ids {
        held.push(Lease::acquire(&a, shared.path(), id).await.expect("take the lease").0);
    }
    let moved = (stats.out_messages.load(SeqCst) - sent, stats.in_messages.load(SeqCst) - received);
    assert_eq!(moved, (0, 0), "messages (sent, received) on the worker's connection for {} creates", ids.len());
    let bucket = lease_bucket(&nats).await;
    for (id, lease) in ids.iter().zip(&held) {
        let (revision, value) = lease_of(&bucket, id).await.expect("a live lease");
        assert_eq!((owner_of(value.as_bytes()), revision), ("wa".to_string(), lease.epoch()), "{id}");
    }
    match Lease::acquire(&a, shared.path(), &ids[0]).await {
        Err(LeaseError::OwnedElsewhere { owner, .. }) => assert_eq!(owner, "wa"),
        other => panic!("a held lease was taken again: {other:?}"),
    }
    drop(held);
}
