//! The renewals of every lease a worker holds: one loop on the lease
//! keeper's thread (the keeper module runs it) over a map of the held leases.
//!
//! * Each lease is due a period (a third of the TTL) after its last renewal
//!   was sent. The loop wakes when the next one is due (at most every
//!   eighth of a period) or when a renewal ends, queues every lease that is
//!   due, and keeps [`AT_ONCE`] renewals in flight from that queue, oldest
//!   first: one that waits on the bus holds none of the others back, and
//!   however many leases are due, the keeper's thread has that many
//!   requests, answers and futures alive at once, all in the loop's own
//!   task (no task per round, no rounds side by side; the queue's room is
//!   reused round after round). An idle lease costs its entry in the list,
//!   nothing more: after a large round the allocator gives back what the
//!   round took (glibc keeps a thread's freed memory in that thread's
//!   arena, and no other part of the worker allocates on the keeper's thread
//!   to reuse it).
//! * The held leases are a list (a pointer each: a map keyed by lease took
//!   twice to four times that). A lease let go (`Lease::release`, or
//!   dropped) or lost is marked so and leaves the list at the loop's next
//!   pass; a renewal of it already in flight sees it let go and deletes the
//!   lease it may have renewed meanwhile.
//! * What a renewal finds (renewed, lost to another worker, the bus away)
//!   is told to the lease's state (`LeaseWatch`); a loss also to the
//!   worker's [`super::losses`], for the session's hub.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::lease_state::{State, clock_ms, millis, owner_of, owner_value};
use super::lease_write::{LeaseWriter, Written};
use super::losses::Losses;

/// Renewals in flight at once, whatever the number of leases due (and new
/// leases' creates, see [`Renewals::creating`]): every lease of the worker
/// at once would leave the keeper's heap (and its connection's write
/// buffer) at that peak, a kilobyte or so per lease, after the round ends.
/// (Over the first rounds of 1,000 leases the keeper's arena grew by about
/// 300 KiB with 64 and 140 KiB with 16 on a release build; on a debug build
/// by 176 KiB with 16 and 96 KiB with 4, when each round was a task of its
/// own and rounds ran side by side.)
const AT_ONCE: usize = 4;

/// A run of at least this many renewals (from an idle loop to an idle
/// loop) is followed by a trim (see [`Renewals::run`]).
const LARGE: usize = 16;

/// Every lease the worker holds, and how to renew them.
pub struct Renewals {
    /// The lease bucket, through the keeper's own connection.
    leases: Arc<kv::Store>,
    /// Renewals and creates, through the keeper's own connection (plain requests).
    writer: LeaseWriter,
    /// The lease bucket, through the worker's connection (releases from its runtime).
    here: Arc<kv::Store>,
    /// Where the leases lost are told.
    losses: Arc<Losses>,
    worker: String,
    ttl: Duration,
    /// Every lease held, and (until the loop's next pass) those let go or lost.
    held: Mutex<Vec<Arc<State>>>,
    /// New leases' creates in flight at once (see [`Renewals::creating`]).
    creates: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Renewals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renewals").field("worker", &self.worker).field("ttl", &self.ttl).finish()
    }
}

/// Queue the leases of `held` to renew at `now` in `due` (marked as being
/// renewed), and say when the next one is due; the ones let go or lost
/// leave the list.
fn take_due(
    held: &mut Vec<Arc<State>>,
    due: &mut VecDeque<Arc<State>>,
    now: u64,
    ttl: Duration,
    period: Duration,
) -> u64 {
    let mut next = now + millis(period);
    held.retain(|state| {
        if state.is_released() || state.is_lost() {
            return false;
        }
        // Only this loop sets `renewing`, and only the renewal it starts clears it.
        if !state.is_renewing() {
            match state.due(ttl, period) {
                at if at <= now => {
                    state.set_renewing(true);
                    due.push_back(state.clone());
                }
                at => next = next.min(at),
            }
        }
        true
    });
    // An unload wave would otherwise keep the list at its longest.
    if held.capacity() > 64 && held.len() < held.capacity() / 4 {
        held.shrink_to_fit();
    }
    next
}

/// What one renewal concluded.
enum Renewed {
    /// Renewed (or taken again): not in doubt until a TTL after it was sent.
    Yes,
    /// Not concluded (the bus is away, or could not tell): again at the next period.
    Again,
    /// The lease is lost or let go: no more renewals.
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

impl Renewals {
    pub(super) fn new(
        leases: Arc<kv::Store>,
        writer: LeaseWriter,
        here: Arc<kv::Store>,
        losses: Arc<Losses>,
        worker: String,
        ttl: Duration,
    ) -> Renewals {
        Renewals {
            leases,
            writer,
            here,
            losses,
            worker,
            ttl,
            held: Mutex::new(Vec::new()),
            creates: tokio::sync::Semaphore::new(AT_ONCE),
        }
    }

    /// The lease bucket through the keeper's connection: renewals, and the
    /// creates (and the reads and takeovers that follow a refused create) of
    /// new leases. Their answers are read into that connection's small
    /// buffer, on the keeper's thread: through the worker's connection, a
    /// burst of creates had its answers read into that connection's 64 KiB
    /// buffers, a new one for each refill while earlier answers were alive,
    /// on the worker's threads, whose allocator arenas the sessions share
    /// (idle sessions with `--cluster` then took 0.2 to 0.4 KiB more each
    /// than without).
    pub(super) fn bucket(&self) -> &Arc<kv::Store> {
        &self.leases
    }

    /// Compare-and-set writes of leases through the keeper's connection
    /// (renewals, and new leases' creates: see [`Renewals::bucket`]).
    pub(super) fn writer(&self) -> &LeaseWriter {
        &self.writer
    }

    /// A turn to create a lease through [`Renewals::bucket`] (held until the
    /// create, and the read and takeover that may follow, are answered):
    /// [`AT_ONCE`] at a time, as renewals. Unbounded, a burst of a hundred new
    /// sessions queued a hundred creates at once on the keeper's connection,
    /// whose write buffer and pending-request map then kept that size (about
    /// 35 KiB), and whose command queue kept its extra blocks.
    pub(super) async fn creating(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.creates.acquire().await.ok()
    }

    /// The lease bucket through the worker's own connection.
    pub(super) fn here(&self) -> &Arc<kv::Store> {
        &self.here
    }

    /// How often a lease is renewed.
    pub(super) fn period(&self) -> Duration {
        (self.ttl / 3).max(Duration::from_millis(100))
    }

    pub(super) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Renew this lease from now on (first when its `due` comes), until it
    /// is let go or lost.
    pub(super) fn hold(&self, state: Arc<State>) {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).push(state);
    }

    /// Queue the leases to renew now; when the next one is due (see [`take_due`]).
    fn due(&self, now: u64, due: &mut VecDeque<Arc<State>>) -> u64 {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        take_due(&mut held, due, now, self.ttl, self.period())
    }

    /// The loop: renew every lease when it is due, [`AT_ONCE`] at a time,
    /// until the process ends.
    pub(super) async fn run(self: Arc<Self>) {
        let tick = millis((self.period() / 8).clamp(Duration::from_millis(10), Duration::from_millis(250)));
        // Due, not sent yet (oldest first), and in flight.
        let mut due = VecDeque::new();
        let mut running = FuturesUnordered::new();
        // Renewals sent since the loop was last idle.
        let mut run_length = 0usize;
        // When the list is looked through next (not after every renewal:
        // that would be a pass over every lease for each one renewed).
        let mut look = 0;
        loop {
            let now = clock_ms();
            if now >= look {
                look = self.due(now, &mut due).max(now + tick);
            }
            while running.len() < AT_ONCE {
                let Some(state) = due.pop_front() else { break };
                running.push(self.renew_one(state));
                run_length += 1;
            }
            if running.is_empty() {
                if run_length >= LARGE {
                    // What the run's requests and answers took stays in this
                    // thread's allocator arena, which nothing else of the worker
                    // reuses: given back (a few hundred bytes per lease).
                    crate::trim::release_free_memory();
                }
                run_length = 0;
            }
            let sleep = tokio::time::sleep(Duration::from_millis(look.saturating_sub(now)));
            if running.is_empty() {
                sleep.await;
            } else {
                // A renewal ended (its room goes to the next one due), or the list is due a look.
                tokio::select! {
                    _ = running.next() => {}
                    () = sleep => {}
                }
            }
        }
    }

    /// Renew one lease and record what came of it.
    async fn renew_one(&self, state: Arc<State>) {
        if state.is_released() {
            return;
        }
        let period = self.period();
        let sent = clock_ms();
        // Since the last renewal that concluded (a TTL before the lease's validity ends).
        let last = state.valid_until().saturating_sub(millis(self.ttl));
        let since = Duration::from_millis(sent.saturating_sub(last));
        if since > period * 2 {
            tracing::warn!(
                "session {}: lease renewal late: {since:?} since the last one (every {period:?}, TTL {:?})",
                state.fence.id(),
                self.ttl
            );
        }
        match self.renew(&state, since).await {
            Renewed::Yes | Renewed::Again => {
                self.concluded(&state, sent);
                state.set_renewing(false);
            }
            // Let go or lost: it leaves the list at the next pass (still
            // marked as being renewed, it is not renewed again meanwhile).
            Renewed::End => {}
        }
    }

    /// One renewal, `since` after the last one that concluded.
    async fn renew(&self, state: &Arc<State>, since: Duration) -> Renewed {
        let text = state.fence.id();
        let id: &str = &text;
        let last = state.revision.load(Ordering::SeqCst);
        match self.writer.write(id, owner_value(&self.worker), last).await {
            Written::At(next) => {
                state.revision.store(next, Ordering::SeqCst);
                if state.is_released() {
                    // Let go while this renewal was on its way: the release
                    // named the older revision, so the lease goes now.
                    let _ = self.leases.delete_expect_revision(id, Some(next)).await;
                    return Renewed::End;
                }
                Renewed::Yes
            }
            // Let go meanwhile (the release deleted it): nothing to take again.
            Written::WrongLast if state.is_released() => Renewed::End,
            // Another worker took it, or the lease expired before this renewal
            // (late by more than the TTL): take it again if nobody else has.
            // (Boxed: rare, and it would make every renewal's future the size of its requests.)
            Written::WrongLast => match Box::pin(self.retake(state, last)).await {
                Retaken::Held(revision) if state.is_released() => {
                    let _ = self.leases.delete_expect_revision(id, Some(revision)).await;
                    Renewed::End
                }
                Retaken::Held(revision) => {
                    state.revision.store(revision, Ordering::SeqCst);
                    tracing::warn!(
                        "session {id}: its lease expired while this worker served it ({since:?} since the last \
                         renewal, TTL {:?}); taken again under fencing epoch {}",
                        self.ttl,
                        state.fence.epoch()
                    );
                    Renewed::Yes
                }
                Retaken::Lost(owner) => {
                    if state.set_lost() {
                        self.losses.tell(id.to_string());
                    }
                    tracing::warn!("session {id}: lease lost to another worker ({owner}); its writes are now refused");
                    Renewed::End
                }
                Retaken::Unknown(why) => {
                    tracing::warn!("session {id}: the lease is gone and cannot be taken again yet: {why}");
                    Renewed::Again
                }
            },
            // The bus is away: try again; past the TTL the lease expires and the fence takes over.
            Written::Failed(e) => {
                tracing::warn!("session {id}: cannot renew the lease: {e}");
                Renewed::Again
            }
        }
    }

    /// A renewal sent at `sent` concluded without losing the lease: it is not
    /// in doubt until a TTL later. (A bus that is away does not put it in
    /// doubt: no other worker can take it through the bus either, and the
    /// epoch fence still guards the session file.)
    fn concluded(&self, state: &State, sent: u64) {
        // Its next renewal is due a period after `sent`.
        state.renewed(sent, self.ttl);
    }

    /// The lease is no longer at revision `last`: take it again when it is
    /// free (expired or released) and the session had no other owner since.
    async fn retake(&self, state: &Arc<State>, last: u64) -> Retaken {
        let text = state.fence.id();
        let id: &str = &text;
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
            let held = state.clone();
            return match tokio::task::spawn_blocking(move || held.fence.is_current()).await {
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
        let held = state.clone();
        match tokio::task::spawn_blocking(move || held.fence.move_to(revision)).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::fence::EpochFence;

    #[test]
    fn due_leases_are_taken_once_and_let_go_or_lost_ones_leave_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let (ttl, period) = (Duration::from_secs(9), Duration::from_secs(3));
        // Taken at 1 s (due at 4 s), 2 s (due at 5 s), 3 s (due at 6 s).
        let lease = |id: &str, taken: u64| Arc::new(State::new(EpochFence::new(dir.path(), id, 1), 1, taken + 9_000));
        let (a, b, c) = (lease("a", 1_000), lease("b", 2_000), lease("c", 3_000));
        let mut held = vec![a.clone(), b.clone(), c.clone()];
        let mut due = VecDeque::new();
        let next = take_due(&mut held, &mut due, 4_500, ttl, period);
        assert_eq!((due.len(), next), (1, 5_000));
        assert!(Arc::ptr_eq(&due[0], &a) && a.is_renewing());
        due.clear();
        // Being renewed: not taken again; b is let go, c lost.
        b.set_released();
        assert!(c.set_lost());
        let next = take_due(&mut held, &mut due, 7_000, ttl, period);
        assert_eq!((due.len(), next), (0, 7_000 + 3_000));
        assert_eq!(held.len(), 1);
        assert!(Arc::ptr_eq(&held[0], &a));
        // Its renewal concluded at 4.5 s: due again at 7.5 s.
        a.renewed(4_500, ttl);
        a.set_renewing(false);
        let next = take_due(&mut held, &mut due, 7_000, ttl, period);
        assert_eq!((due.len(), next), (0, 7_500));
        take_due(&mut held, &mut due, 7_500, ttl, period);
        assert_eq!(due.len(), 1);
    }

    #[test]
    fn a_held_lease_costs_one_pointer_in_the_list_and_the_list_shrinks_after_an_unload_wave() {
        let dir = tempfile::tempdir().unwrap();
        let mut held: Vec<Arc<State>> = (0..1_000)
            .map(|n| Arc::new(State::new(EpochFence::new(dir.path(), &n.to_string(), 1), 1, u64::MAX / 2)))
            .collect();
        assert_eq!(std::mem::size_of_val(&held[0]), std::mem::size_of::<usize>());
        for state in &held[10..] {
            state.set_released();
        }
        take_due(&mut held, &mut VecDeque::new(), 0, Duration::from_secs(9), Duration::from_secs(3));
        assert_eq!(held.len(), 10);
        assert!(held.capacity() < 100, "{}", held.capacity());
    }
}
