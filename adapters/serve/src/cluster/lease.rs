//! One owner per session across the cluster: a lease, the key `<session id>`
//! of the KV bucket [`super::LEASE_BUCKET`], whose value names the owner.
//!
//! * Taken with a create (it fails while another worker's lease lives); the
//!   revision of that create is the owner's fencing epoch, recorded on shared
//!   storage ([`super::fence::claim`]) before the session is loaded. The
//!   create goes through the lease keeper's connection, as the renewals do
//!   (`Renewals::bucket`).
//! * Renewed every third of the TTL by an update that expects the last
//!   revision. A renewal that finds the lease gone (it ran more than the TTL
//!   late: the bucket expired it) takes it again with a create, and moves the
//!   fencing epoch to that create's revision when no other worker owned the
//!   session meanwhile ([`EpochFence::move_to`]): the session stays here.
//!   A lost race (another worker holds it, or owned it meanwhile) ends the
//!   renewals, marks the lease lost ([`LeaseWatch::is_lost`]), tells the
//!   worker's [`super::losses`] (the session's pump then hands its clients
//!   over) and is logged.
//! * The renewals run on the lease keeper's thread ([`super::keeper`]), away
//!   from the worker's busy runtime, in one loop over every lease of the
//!   worker ([`super::renew`]); one that comes late is logged.
//! * While no renewal has concluded for a TTL (the worker was paused, or the
//!   keeper starved), the lease is in doubt ([`LeaseWatch::in_doubt`]): the
//!   session's pump holds its events (looking again every so often) until
//!   the next renewal says whether the lease is still this worker's, so a
//!   stale owner publishes nothing.
//! * Expires with the bucket's `max_age` (the TTL) once its owner stops
//!   renewing (killed, paused, cut off), so the next attach on any worker
//!   takes the session over.
//! * Released (deleted, expecting its revision) when the session unloads or
//!   the worker drains.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::jetstream::kv;

use super::Cluster;
use super::fence::{EpochFence, claim};
use super::lease_state::{State, clock_ms, millis, now_ms, owner_value};
use super::lease_write::Written;
use super::losses::Losses;
use super::renew::Renewals;

pub use super::lease_state::owner_of;

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
/// An idle session holds one, so it is kept small (two pointers, held
/// inline by the session's `Ownership`): its state (and
/// fence) shared with the worker's renewals and the session in one
/// allocation, the bucket's handles in the renewals shared by every lease of
/// the worker (an `async_nats` KV handle is over a kilobyte).
#[derive(Debug)]
pub struct Lease {
    state: Arc<State>,
    renewals: Arc<Renewals>,
}

/// What the pump of a leased session watches.
#[derive(Debug, Clone)]
pub struct LeaseWatch {
    state: Arc<State>,
}

impl LeaseWatch {
    /// No renewal concluded within the TTL: the lease may have expired.
    pub fn in_doubt(&self) -> bool {
        self.state.in_doubt()
    }

    /// True once another worker holds the session.
    pub fn is_lost(&self) -> bool {
        self.state.is_lost()
    }

    /// True once the lease was let go (released, or dropped with its session).
    pub fn is_let_go(&self) -> bool {
        self.state.is_released()
    }

    /// The stream's sequence of the session's last message this owner knows of.
    pub(super) fn stored(&self) -> u64 {
        self.state.stored.load(Ordering::SeqCst)
    }

    /// This owner stored the session's message at stream sequence `sequence`.
    pub(super) fn set_stored(&self, sequence: u64) {
        self.state.stored.store(sequence, Ordering::SeqCst);
    }

    /// The stream refused this owner's event: the session has messages this
    /// owner did not write, so another worker owns it (as a renewal that
    /// finds the lease taken would say; told to the worker's `losses`).
    pub(super) fn refused(&self, losses: &Losses) {
        if self.state.set_lost() {
            losses.tell(self.state.fence.id().to_string());
            tracing::warn!(
                "session {}: the event stream refused this worker's event (another worker wrote the session \
                 since); its writes are now refused",
                self.state.fence.id()
            );
        }
    }

    /// The owner's fencing epoch (names its messages on the event stream).
    pub(super) fn epoch(&self) -> u64 {
        self.state.fence.epoch()
    }

    /// A key telling leases apart (the same for every watch of one lease).
    pub(super) fn key(&self) -> usize {
        self.state.key()
    }
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
    /// in `session_dir`; with the worker whose expired lease it took over, if any.
    pub async fn acquire(
        cluster: &Cluster,
        session_dir: &Path,
        id: &str,
    ) -> Result<(Lease, Option<String>), LeaseError> {
        let bus = |detail: String| LeaseError::Bus { id: id.to_string(), detail };
        let worker = &cluster.options.worker;
        let mut taken_from = None;
        let renewals = cluster.keeper.renewals.clone();
        // Through the keeper's connection: see `Renewals::bucket`.
        let leases = renewals.bucket();
        let turn = renewals.creating().await;
        let asked = clock_ms();
        // A plain request first (see `lease_write`); a lease that is there,
        // or was released (its delete marker is the key's last revision), is
        // looked at through the KV client.
        let value = owner_value(worker);
        let created = match renewals.writer().write(id, value.clone(), 0).await {
            Written::At(revision) => Ok(revision),
            Written::WrongLast => leases.create(id, value).await,
            Written::Failed(e) => return Err(bus(e)),
        };
        let epoch = match created {
            Ok(revision) => revision,
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let entry = leases.entry(id).await.ok().flatten();
                let owner = entry.as_ref().map_or_else(|| "another worker".to_string(), |e| owner_of(&e.value));
                match entry {
                    // Its owner stopped renewing: take it over (compare-and-set on that revision).
                    Some(entry) if is_stale(&entry.value, cluster.options.lease_ttl) => {
                        match leases.update(id, owner_value(worker), entry.revision).await {
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
        drop(turn);
        let state =
            Arc::new(State::new(EpochFence::new(session_dir, id, epoch), epoch, asked + millis(renewals.ttl())));
        // Renewed from now on: claiming the epoch (an fsync) may take a while on a busy disk.
        renewals.hold(state.clone());
        let lease = Lease { state, renewals };
        let dir = session_dir.to_path_buf();
        let session = id.to_string();
        // On the claim threads: a burst of new sessions does not grow the blocking pool.
        match cluster.claims.run(move || claim(&dir, &session, epoch)).await {
            Ok(Ok(())) => {}
            // Dropping the lease releases it.
            Ok(Err(e)) => return Err(bus(e.to_string())),
            Err(e) => return Err(bus(e)),
        }
        tracing::debug!("session {id}: lease taken (epoch {epoch})");
        Ok((lease, taken_from))
    }

    /// The fencing epoch this owner writes under (moved when it takes its expired lease again).
    pub fn epoch(&self) -> u64 {
        self.state.fence.epoch()
    }

    /// True once another worker holds the session (renewal lost).
    pub fn is_lost(&self) -> bool {
        self.state.is_lost()
    }

    /// The fence the session's writes go through.
    pub fn fence(&self) -> pi_core::session::SharedFence {
        self.state.clone()
    }

    /// Where the session's event stream stands for this owner: the stream
    /// sequence of its last message when this owner took the session (see
    /// the event log's `mark`).
    pub fn chain_from(&self, sequence: u64) {
        self.state.stored.store(sequence, Ordering::SeqCst);
    }

    /// The lease's state, for the session's pump.
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch { state: self.state.clone() }
    }

    /// No more renewals (the renewals' next pass drops it); true when this
    /// call let the lease go (not before).
    fn let_go(&self) -> bool {
        self.state.set_released()
    }

    /// Let go of the lease now, rather than in the background once dropped:
    /// a load that follows at once (creating the session it did not find)
    /// then finds it free.
    pub async fn release(self) {
        if !self.let_go() || self.is_lost() {
            return;
        }
        let (id, last) = (self.state.fence.id(), self.state.revision.load(Ordering::SeqCst));
        if let Err(e) = self.renewals.here().delete_expect_revision(&*id, Some(last)).await {
            tracing::debug!("session {id}: lease release: {e}");
        }
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

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.let_go() || self.is_lost() {
            return;
        }
        let (leases, last) = (self.renewals.here().clone(), self.state.revision.load(Ordering::SeqCst));
        let id = self.state.fence.id().to_string();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = leases.delete_expect_revision(&id, Some(last)).await {
                    tracing::debug!("session {id}: lease release: {e}");
                }
            });
        }
    }
}
