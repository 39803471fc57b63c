//! A cluster worker's leases when its renewals run late: alone in the
//! cluster, a worker paused past its lease TTL (SIGSTOP, then SIGCONT) takes
//! its expired leases again, moving each session's fencing epoch along, and
//! goes on serving its sessions (also one never written to its file); and
//! an owner paused mid-stream while another worker takes its session over
//! hands its still-connected client over to the new owner. The lease bucket
//! is read with `async-nats` on the same real nats-server.

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::kv;
use nix::sys::signal::Signal;

use crate::harness::Sandbox;
use crate::serve::python_scenario;
use crate::serve_cluster::{Nats, cluster, session_file_text, shared_dir, signal, worker};

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
    let sb = Sandbox::with_server().await;
    let mut slow = pi_compat::fake_server::Reply::text_chunks((0..60).map(|i| format!("w{i} ")));
    slow.delay = Duration::from_millis(40);
    sb.server().on_marker("stream slowly", slow);
    let shared = shared_dir(&sb);
    let a = worker(&sb, &nats, &shared, "wa", "2").await;
    let b = worker(&sb, &nats, &shared, "wb", "2").await;
    let pid = a.pi.child.id().expect("pid").to_string();
    let (url_a, url_b) = (a.url.clone(), b.url.clone());
    if cluster(&b, "paused", &[&url_a, &url_b, &pid]).await.is_none() {
        return;
    }
    let log = a.pi.stderr();
    assert!(log.contains("lease lost to another worker (wb)"), "{log}");
    assert!(log.contains("its connections moved on"), "{log}");
}
