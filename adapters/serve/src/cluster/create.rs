//! New leases' creates, made on the lease keeper's thread: a session's
//! thread asks (the session's id, inline when it is a UUID, and where to
//! answer), and one loop on the keeper ([`serve`], started with the
//! renewals) runs [`AT_ONCE`] creates at a time through the keeper's
//! connection and answers each with the epoch taken.
//!
//! Everything a create allocates (the lease's value, the request and its
//! headers, the bus's answer and its parse, the read of a refused lease)
//! is made and freed on the keeper's thread, beside the renewals' own: a
//! create run from a session's thread through the keeper's connection had
//! its request freed on the keeper and its answer freed on the session's
//! thread, and each such chunk left a hole in the arena it came from (the
//! first thousand sessions of a worker took a few hundred KiB more with
//! `--cluster` than without, much of it such holes).

use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::compact_id::CompactId;
use super::lease::LeaseError;
use super::lease_state::{clock_ms, now_ms, owner_of, owner_value};

/// Creates in flight at once (as many as a batch of renewals has).
pub(super) const AT_ONCE: usize = super::renew::AT_ONCE;

/// Creates waiting for their turn before the next one asking waits to ask
/// (a burst of new sessions waits in the asking tasks, not in a queue).
const WAITING: usize = AT_ONCE;

/// A lease taken by a create.
#[derive(Debug)]
pub(super) struct Created {
    /// The create's revision: the owner's fencing epoch.
    pub epoch: u64,
    /// When the create was sent ([`clock_ms`]): the lease is surely this
    /// worker's for a TTL from then.
    pub asked: u64,
    /// The worker whose expired lease was taken over, if any.
    pub from: Option<String>,
}

/// A create asked of the keeper.
struct Ask {
    id: CompactId,
    answer: oneshot::Sender<Result<Created, LeaseError>>,
}

/// Where sessions' threads ask for creates.
#[derive(Debug)]
pub(super) struct Asks {
    asks: mpsc::Sender<Ask>,
}

/// What the keeper's loop serves.
pub(super) struct Served {
    asks: mpsc::Receiver<Ask>,
}

/// The two ends: sessions ask through [`Asks`], the keeper serves [`Served`].
pub(super) fn channel() -> (Asks, Served) {
    let (asks, served) = mpsc::channel(WAITING);
    (Asks { asks }, Served { asks: served })
}

impl Asks {
    /// Take the lease of session `id` for this worker (on the keeper's thread).
    pub(super) async fn create(&self, id: &str) -> Result<Created, LeaseError> {
        let stopped = || LeaseError::Bus { id: id.to_string(), detail: "the lease keeper stopped".to_string() };
        let (answer, answered) = oneshot::channel();
        self.asks.send(Ask { id: CompactId::new(id), answer }).await.map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

/// True when a lease was last renewed more than `ttl` ago: its owner is gone
/// (the bucket's `max_age` removes it too, but the server's expiry timer may
/// lag by up to another TTL; this keeps the bound at the TTL).
pub(super) fn is_stale(value: &[u8], ttl: Duration) -> bool {
    let renewed = serde_json::from_slice::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v.get("renewed").and_then(serde_json::Value::as_u64));
    renewed.is_some_and(|at| now_ms().saturating_sub(at) > u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

/// The keeper's loop: every create asked, [`AT_ONCE`] at a time, until the
/// worker's side is gone.
pub(super) async fn serve(served: Served, leases: &kv::Store, worker: &str, ttl: Duration) {
    let mut asks = served.asks;
    futures::stream::poll_fn(|cx| asks.poll_recv(cx))
        .map(|ask: Ask| async move {
            // Asked by a load that went meanwhile (its client left): nothing to take.
            if ask.answer.is_closed() {
                return;
            }
            let text = ask.id.text();
            let created = create(leases, &text, worker, ttl).await;
            if let Err(Ok(Created { epoch, .. })) = ask.answer.send(created) {
                // It went while the create was on its way: the lease is let go
                // now (nothing would renew it; a load that follows finds it free).
                let _ = leases.delete_expect_revision(&*text, Some(epoch)).await;
            }
        })
        .buffer_unordered(AT_ONCE)
        .for_each(|()| async {})
        .await;
}

/// Create session `id`'s lease for `worker`, or take over one whose owner
/// stopped renewing it (compare-and-set on its revision).
async fn create(leases: &kv::Store, id: &str, worker: &str, ttl: Duration) -> Result<Created, LeaseError> {
    let asked = clock_ms();
    match leases.create(id, owner_value(worker)).await {
        Ok(epoch) => Ok(Created { epoch, asked, from: None }),
        Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
            let entry = leases.entry(id).await.ok().flatten();
            let owner = entry.as_ref().map_or_else(|| "another worker".to_string(), |e| owner_of(&e.value));
            let elsewhere = |owner| LeaseError::OwnedElsewhere { id: id.to_string(), owner };
            match entry {
                Some(entry) if is_stale(&entry.value, ttl) => {
                    match leases.update(id, owner_value(worker), entry.revision).await {
                        Ok(epoch) => {
                            tracing::info!("session {id}: taking over from {owner} (its lease expired)");
                            Ok(Created { epoch, asked, from: Some(owner) })
                        }
                        Err(_) => Err(elsewhere(owner)),
                    }
                }
                // (Ours: from an earlier load whose release has not landed yet, or a load in progress.)
                _ => Err(elsewhere(owner)),
            }
        }
        Err(e) => Err(LeaseError::Bus { id: id.to_string(), detail: e.to_string() }),
    }
}
