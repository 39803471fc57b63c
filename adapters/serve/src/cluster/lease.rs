//! One owner per session across the cluster: a lease, the key `<session id>`
//! of the KV bucket [`super::LEASE_BUCKET`], whose value names the owner.
//!
//! * Taken with a create (it fails while another worker's lease lives); the
//!   revision of that create is the owner's fencing epoch, recorded on shared
//!   storage ([`super::fence::claim`]) before the session is loaded.
//! * Renewed every third of the TTL by an update that expects the last
//!   revision. A renewal that finds the lease gone (it ran more than the TTL
//!   late: the bucket expired it) takes it again with a create, and moves the
//!   fencing epoch to that create's revision when no other worker owned the
//!   session meanwhile ([`EpochFence::move_to`]): the session stays here.
//!   A lost race (another worker holds it, or owned it meanwhile) ends the
//!   renewals, fires [`Lease::lost_token`] and is logged.
//! * The renewals run on the lease keeper's thread ([`super::keeper`]), away
//!   from the worker's busy runtime; one that comes late is logged.
//! * While no renewal has concluded for a TTL (the worker was paused, or the
//!   keeper starved), the lease is in doubt ([`LeaseWatch::in_doubt`]): the
//!   session's pump holds its events until the next renewal says whether the
//!   lease is still this worker's, so a stale owner publishes nothing.
//! * Expires with the bucket's `max_age` (the TTL) once its owner stops
//!   renewing (killed, paused, cut off), so the next attach on any worker
//!   takes the session over.
//! * Released (deleted, expecting its revision) when the session unloads or
//!   the worker drains.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::kv;
use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Cluster;
use super::fence::{EpochFence, claim};

/// How many fencing epochs are claimed (written and synced) at once.
static CLAIMS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// Why a lease could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("session {id} is owned elsewhere (by {owner})")]
    OwnedElsewhere { id: String, owner: String },
    #[error("session {id}: the cluster cannot be reached: {detail}")]
    Bus { id: String, detail: String },
}

/// A held lease; renewed until dropped, then released.
///
/// An idle session holds one, so it is kept small: its state shared with
/// its renewals in one allocation, the bucket's handle shared by every lease
/// of the worker (an `async_nats` KV handle is over a kilobyte).
#[derive(Debug)]
pub struct Lease {
    id: String,
    state: Arc<State>,
    leases: Arc<kv::Store>,
    fence: Arc<EpochFence>,
    /// The worker whose expired lease this one took over.
    taken_from: Option<String>,
    /// Let go of already ([`Lease::release`]).
    released: bool,
}

/// What a lease and its renewals share.
#[derive(Debug)]
struct State {
    revision: AtomicU64,
    lost: AtomicBool,
    /// Fires when another worker took the session (renewal lost).
    lost_token: CancellationToken,
    stop: CancellationToken,
    /// Until when the lease is surely this worker's, in ms after `origin`
    /// (moved by each renewal).
    valid_until: AtomicU64,
    origin: Instant,
    /// A renewal concluded (the pump holding output looks again).
    concluded: Notify,
}

impl State {
    fn in_doubt(&self) -> bool {
        millis(self.origin.elapsed()) > self.valid_until.load(Ordering::SeqCst)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What the pump of a leased session watches.
#[derive(Debug, Clone)]
pub struct LeaseWatch {
    /// Fires once another worker holds the session.
    pub lost: CancellationToken,
    state: Arc<State>,
}

impl LeaseWatch {
    /// No renewal concluded within the TTL: the lease may have expired.
    pub fn in_doubt(&self) -> bool {
        self.state.in_doubt()
    }

    /// Resolves once a renewal concluded (since the last time it resolved).
    pub async fn concluded(&self) {
        self.state.concluded.notified().await;
    }
}

fn now_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

/// A lease's value: its owner and when it last renewed (wall clock, ms).
fn owner_value(worker: &str) -> Bytes {
    Bytes::from(serde_json::json!({ "owner": worker, "renewed": now_ms() }).to_string())
}

/// The owner named by a lease's value.
pub fn owner_of(value: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v.get("owner").and_then(|o| o.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "another worker".to_string())
}

/// True when a lease was last renewed more than `ttl` ago: its owner is gone
/// (the bucket's `max_age` removes it too, but the server's expiry timer may
/// lag by up to another TTL; this keeps the bound at the TTL).
fn is_stale(value: &[u8], ttl: Duration) -> bool {
    let renewed = serde_json::from_slice::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v.get("renewed").and_then(serde_json::Value::as_u64));
    renewed.is_some_and(|at| now_ms().saturating_sub(at) > u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

impl Lease {
    /// Take the lease of session `id` for this worker and claim its epoch
    /// in `session_dir`.
    pub async fn acquire(cluster: &Cluster, session_dir: &Path, id: &str) -> Result<Lease, LeaseError> {
        let bus = |detail: String| LeaseError::Bus { id: id.to_string(), detail };
        let worker = &cluster.options.worker;
        let mut taken_from = None;
        let asked = Instant::now();
        let epoch = match cluster.leases.create(id, owner_value(worker)).await {
            Ok(revision) => revision,
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let entry = cluster.leases.entry(id).await.ok().flatten();
                let owner = entry.as_ref().map_or_else(|| "another worker".to_string(), |e| owner_of(&e.value));
                match entry {
                    // Its owner stopped renewing: take it over (compare-and-set on that revision).
                    Some(entry) if is_stale(&entry.value, cluster.options.lease_ttl) => {
                        match cluster.leases.update(id, owner_value(worker), entry.revision).await {
                            Ok(revision) => {
                                tracing::info!("session {id}: taking over from {owner} (its lease expired)");
                                taken_from = Some(owner);
                                revision
                            }
                            Err(_) => return Err(LeaseError::OwnedElsewhere { id: id.to_string(), owner }),
                        }
                    }
                    // (Ours: from an earlier load whose release has not landed yet, or a load in progress.)
                    _ => return Err(LeaseError::OwnedElsewhere { id: id.to_string(), owner }),
                }
            }
            Err(e) => return Err(bus(e.to_string())),
        };
        let state = State {
            revision: AtomicU64::new(epoch),
            lost: AtomicBool::new(false),
            lost_token: CancellationToken::new(),
            stop: CancellationToken::new(),
            valid_until: AtomicU64::new(millis(cluster.options.lease_ttl)),
            origin: asked,
            concluded: Notify::new(),
        };
        let lease = Lease {
            id: id.to_string(),
            state: Arc::new(state),
            leases: cluster.leases.clone(),
            fence: Arc::new(EpochFence::new(session_dir, id, epoch)),
            taken_from,
            released: false,
        };
        let renewal = Renewal {
            leases: cluster.keeper.leases.clone(),
            id: id.to_string(),
            worker: worker.clone(),
            ttl: cluster.options.lease_ttl,
            state: lease.state.clone(),
            fence: lease.fence.clone(),
            since: asked,
        };
        // Renewed from now on: claiming the epoch (an fsync) may take a while on a busy disk.
        cluster.keeper.spawn(renewal.run());
        let dir = session_dir.to_path_buf();
        let session = id.to_string();
        // A few claims at a time: a burst of new sessions would otherwise grow
        // the blocking pool to a thread each, whose stacks stay resident.
        let _claiming = CLAIMS.acquire().await.map_err(|e| bus(e.to_string()))?;
        match tokio::task::spawn_blocking(move || claim(&dir, &session, epoch)).await {
            Ok(Ok(())) => {}
            // Dropping the lease releases it.
            Ok(Err(e)) => return Err(bus(e.to_string())),
            Err(e) => return Err(bus(e.to_string())),
        }
        tracing::debug!("session {id}: lease taken (epoch {epoch})");
        Ok(lease)
    }

    /// The fencing epoch this owner writes under (moved when it takes its expired lease again).
    pub fn epoch(&self) -> u64 {
        self.fence.epoch()
    }

    /// True once another worker holds the session (renewal lost).
    pub fn is_lost(&self) -> bool {
        self.state.lost.load(Ordering::SeqCst)
    }

    /// The fence the session's writes go through.
    pub fn fence(&self) -> pi_core::session::SharedFence {
        self.fence.clone()
    }

    /// Fires once another worker holds the session.
    pub fn lost_token(&self) -> CancellationToken {
        self.state.lost_token.clone()
    }

    /// The lease's state, for the session's pump.
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch { lost: self.state.lost_token.clone(), state: self.state.clone() }
    }

    /// Let go of the lease now, rather than in the background once dropped:
    /// a load that follows at once (creating the session it did not find)
    /// then finds it free.
    pub async fn release(mut self) {
        self.released = true;
        self.state.stop.cancel();
        if self.is_lost() {
            return;
        }
        let last = self.state.revision.load(Ordering::SeqCst);
        if let Err(e) = self.leases.delete_expect_revision(&self.id, Some(last)).await {
            tracing::debug!("session {}: lease release: {e}", self.id);
        }
    }

    /// The worker whose expired lease this one took over, if any.
    pub fn taken_from(&self) -> Option<&str> {
        self.taken_from.as_deref()
    }

    /// The worker holding session `id`'s live lease, if any.
    pub async fn holder(cluster: &Cluster, id: &str) -> Result<Option<String>, LeaseError> {
        match cluster.leases.entry(id).await {
            Ok(Some(entry))
                if entry.operation == kv::Operation::Put && !is_stale(&entry.value, cluster.options.lease_ttl) =>
            {
                Ok(Some(owner_of(&entry.value)))
            }
            Ok(_) => Ok(None),
            Err(e) => Err(LeaseError::Bus { id: id.to_string(), detail: e.to_string() }),
        }
    }
}

/// The renewals of one lease: a task on the keeper's thread for as long as
/// the lease is held. While it waits for the next renewal it holds little;
/// a renewal's bus requests (several kilobytes of future) live on the heap
/// only while it runs.
struct Renewal {
    leases: Arc<kv::Store>,
    id: String,
    worker: String,
    ttl: Duration,
    state: Arc<State>,
    fence: Arc<EpochFence>,
    /// When the lease was asked for (its first renewal is due a period later).
    since: Instant,
}

/// What one renewal concluded.
enum Renewed {
    /// Renewed (or taken again): not in doubt until a TTL after it was sent.
    Yes,
    /// Not concluded (the bus is away, or could not tell): again at the next period.
    Again,
    /// The lease is lost or let go: the renewals end.
    End,
}

/// What a renewal that found the lease gone did.
enum Retaken {
    /// Ours again, at this revision.
    Held(u64),
    /// Another worker holds it, or owned the session meanwhile.
    Lost(String),
    /// The bus could not tell: try again at the next renewal.
    Unknown(String),
}

impl Renewal {
    async fn run(self) {
        let period = (self.ttl / 3).max(Duration::from_millis(100));
        let mut last_renewed = self.since;
        let mut next = self.since + period;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = self.state.stop.cancelled() => return,
            }
            let sent = Instant::now();
            next = sent + period;
            let since = sent - last_renewed;
            if since > period * 2 {
                tracing::warn!(
                    "session {}: lease renewal late: {since:?} since the last one (every {period:?}, TTL {:?})",
                    self.id,
                    self.ttl
                );
            }
            // Boxed: the requests' futures take room only while they run.
            match Box::pin(self.renew(since)).await {
                Renewed::Yes => {
                    self.concluded(sent);
                    last_renewed = sent;
                }
                Renewed::Again => self.concluded(sent),
                Renewed::End => return,
            }
        }
    }

    /// One renewal, `since` after the last one that concluded.
    async fn renew(&self, since: Duration) -> Renewed {
        let id = &self.id;
        let last = self.state.revision.load(Ordering::SeqCst);
        match self.leases.update(id, owner_value(&self.worker), last).await {
            Ok(next) => {
                self.state.revision.store(next, Ordering::SeqCst);
                Renewed::Yes
            }
            // Another worker took it, or the lease expired before this renewal
            // (late by more than the TTL): take it again if nobody else has.
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => match self.retake(last).await {
                // Let go meanwhile (the session unloaded): the lease goes too.
                Retaken::Held(revision) if self.state.stop.is_cancelled() => {
                    let _ = self.leases.delete_expect_revision(id, Some(revision)).await;
                    Renewed::End
                }
                Retaken::Held(revision) => {
                    self.state.revision.store(revision, Ordering::SeqCst);
                    tracing::warn!(
                        "session {id}: its lease expired while this worker served it ({since:?} since the last \
                         renewal, TTL {:?}); taken again under fencing epoch {}",
                        self.ttl,
                        self.fence.epoch()
                    );
                    Renewed::Yes
                }
                Retaken::Lost(owner) => {
                    self.state.lost.store(true, Ordering::SeqCst);
                    self.state.lost_token.cancel();
                    tracing::warn!("session {id}: lease lost to another worker ({owner}); its writes are now refused");
                    Renewed::End
                }
                Retaken::Unknown(why) => {
                    tracing::warn!("session {id}: the lease is gone and cannot be taken again yet: {why}");
                    Renewed::Again
                }
            },
            // The bus is away: try again; past the TTL the lease expires and the fence takes over.
            Err(e) => {
                tracing::warn!("session {id}: cannot renew the lease: {e}");
                Renewed::Again
            }
        }
    }

    /// A renewal sent at `sent` concluded without losing the lease: it is not
    /// in doubt until a TTL later. (A bus that is away does not put it in
    /// doubt: no other worker can take it through the bus either, and the
    /// epoch fence still guards the session file.)
    fn concluded(&self, sent: Instant) {
        let until = millis((sent + self.ttl).saturating_duration_since(self.state.origin));
        self.state.valid_until.store(until, Ordering::SeqCst);
        // One waiter (the pump): a renewal that concluded while it was not waiting is kept for it.
        self.state.concluded.notify_one();
    }

    /// The lease is no longer at revision `last`: take it again when it is
    /// free (expired or released) and the session had no other owner since.
    async fn retake(&self, last: u64) -> Retaken {
        let id = &self.id;
        let entry = match self.leases.entry(id).await {
            Ok(entry) => entry,
            Err(e) => return Retaken::Unknown(e.to_string()),
        };
        if let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) {
            // Held: by another worker (or by this one, its renewal's answer
            // lost on the way: still this owner when the fence says so).
            let owner = owner_of(&entry.value);
            if owner != self.worker || entry.revision <= last {
                return Retaken::Lost(owner);
            }
            let fence = self.fence.clone();
            return match tokio::task::spawn_blocking(move || fence.is_current()).await {
                Ok(Ok(true)) => Retaken::Held(entry.revision),
                _ => Retaken::Lost(owner),
            };
        }
        let revision = match self.leases.create(id, owner_value(&self.worker)).await {
            Ok(revision) => revision,
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let owner = self.leases.entry(id).await.ok().flatten().map(|e| owner_of(&e.value));
                return Retaken::Lost(owner.unwrap_or_else(|| "another worker".to_string()));
            }
            Err(e) => return Retaken::Unknown(e.to_string()),
        };
        let fence = self.fence.clone();
        match tokio::task::spawn_blocking(move || fence.move_to(revision)).await {
            Ok(Ok(true)) => Retaken::Held(revision),
            moved => {
                // Another worker owned the session meanwhile (or the epoch file
                // cannot be written): this owner may not go on; the lease it just
                // took is let go for whoever loads the session next.
                let _ = self.leases.delete_expect_revision(id, Some(revision)).await;
                match moved {
                    Ok(Err(e)) => Retaken::Lost(format!("the fencing epoch cannot be moved: {e}")),
                    Err(e) => Retaken::Lost(format!("the fencing epoch cannot be moved: {e}")),
                    _ => Retaken::Lost("a worker that owned the session meanwhile".to_string()),
                }
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.state.stop.cancel();
        if self.is_lost() || self.released {
            return;
        }
        let (leases, id, last) = (self.leases.clone(), self.id.clone(), self.state.revision.load(Ordering::SeqCst));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = leases.delete_expect_revision(&id, Some(last)).await {
                    tracing::debug!("session {id}: lease release: {e}");
                }
            });
        }
    }
}
