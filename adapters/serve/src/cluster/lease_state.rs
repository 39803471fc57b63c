//! The state a held lease shares with its session's pump and the worker's
//! renewals, the leases' monotonic clock, and the lease value's format
//! (owner and last renewal). A leaf: the lease and the renewals both use it.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::task::AtomicWaker;

use pi_core::session::{FenceGuard, WriteFence};

use super::fence::EpochFence;

/// What a lease, its session's pump and the worker's renewals share.
///
/// Every session of a worker in a cluster holds one, so it is kept small
/// (104 bytes, its session's id inline): the next renewal's time is derived
/// from the last one that concluded, and the one task that waits on the
/// lease (the session's pump) is woken through a single waker rather than a
/// queue of waiters.
#[derive(Debug)]
pub(super) struct State {
    /// The session's fence (it names the session); the session's writes
    /// enter it through this state (`Lease::fence`).
    pub(super) fence: EpochFence,
    pub(super) revision: AtomicU64,
    /// Another worker took the session (renewal lost, or an event refused).
    lost: AtomicBool,
    /// Let go (released or dropped): renewals end.
    pub(super) released: AtomicBool,
    /// A renewal of it is on its way (set by the renewals' loop, cleared by
    /// the renewal once it concluded).
    pub(super) renewing: AtomicBool,
    /// A renewal concluded since the watcher last looked.
    concluded: AtomicBool,
    /// Until when the lease is surely this worker's ([`clock_ms`]; moved by
    /// each renewal to a TTL after it was sent).
    pub(super) valid_until: AtomicU64,
    /// The event stream's sequence of the session's last message this owner
    /// knows of (its takeover mark, then each event it stored): its next
    /// event is stored only if the session's last message is still that one.
    pub(super) stored: AtomicU64,
    /// The task watching the lease (the session's pump; one task), woken
    /// when a renewal concludes or the lease is lost.
    watcher: AtomicWaker,
}

impl State {
    /// The state of a lease taken at `asked` ([`clock_ms`]) under `epoch`:
    /// surely this worker's for a TTL from then.
    pub(super) fn new(fence: EpochFence, epoch: u64, valid_until: u64) -> State {
        State {
            fence,
            revision: AtomicU64::new(epoch),
            lost: AtomicBool::new(false),
            released: AtomicBool::new(false),
            renewing: AtomicBool::new(false),
            concluded: AtomicBool::new(false),
            valid_until: AtomicU64::new(valid_until),
            stored: AtomicU64::new(0),
            watcher: AtomicWaker::new(),
        }
    }

    pub(super) fn in_doubt(&self) -> bool {
        clock_ms() > self.valid_until.load(Ordering::SeqCst)
    }

    /// When its next renewal is due: a `period` after the last one that
    /// concluded was sent (a TTL before its validity ends).
    pub(super) fn due(&self, ttl: Duration, period: Duration) -> u64 {
        self.valid_until.load(Ordering::SeqCst).saturating_sub(millis(ttl)) + millis(period)
    }

    /// A renewal sent at `sent` ([`clock_ms`]) concluded without losing the
    /// lease: surely this worker's until a TTL later; the watcher is told
    /// (and told later, when it is not waiting now).
    pub(super) fn renewed(&self, sent: u64, ttl: Duration) {
        self.valid_until.store(sent + millis(ttl), Ordering::SeqCst);
        self.concluded.store(true, Ordering::SeqCst);
        self.watcher.wake();
    }

    /// True once another worker holds the session.
    pub(super) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Another worker holds the session: true when this call said so first
    /// (the watcher is woken).
    pub(super) fn set_lost(&self) -> bool {
        let first = !self.lost.swap(true, Ordering::SeqCst);
        self.watcher.wake();
        first
    }

    /// Ready once a renewal concluded since the last time it was ready.
    pub(super) fn poll_concluded(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.watcher.register(cx.waker());
        if self.concluded.swap(false, Ordering::SeqCst) { Poll::Ready(()) } else { Poll::Pending }
    }

    /// Ready once the lease is lost.
    pub(super) fn poll_lost(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.watcher.register(cx.waker());
        if self.is_lost() { Poll::Ready(()) } else { Poll::Pending }
    }

    /// Its key among the worker's renewals (where it is: the renewals hold it).
    pub(super) fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

impl WriteFence for State {
    fn enter(&self) -> Result<FenceGuard, String> {
        self.fence.enter()
    }
}

/// Milliseconds since the worker's leases' clock started (monotonic).
pub(super) fn clock_ms() -> u64 {
    static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);
    millis(ORIGIN.elapsed())
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn now_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

/// A lease's value: its owner and when it last renewed (wall clock, ms).
pub(super) fn owner_value(worker: &str) -> Bytes {
    Bytes::from(serde_json::json!({ "owner": worker, "renewed": now_ms() }).to_string())
}

/// The owner named by a lease's value.
pub fn owner_of(value: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v.get("owner").and_then(|o| o.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "another worker".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leases_state_is_one_allocation_of_at_most_120_bytes() {
        // Held by every session of a worker in a cluster (idle sessions per
        // GiB): with the Arc's counts, 120 bytes at most (a 128-byte chunk of
        // glibc's allocator), the session's id inline (a UUID) rather than
        // in an allocation of its own.
        assert!(std::mem::size_of::<State>() <= 104, "{} bytes", std::mem::size_of::<State>());
    }

    #[tokio::test]
    async fn the_watcher_sees_a_renewal_that_concluded_while_it_was_not_waiting_and_a_loss() {
        let dir = tempfile::tempdir().unwrap();
        let (ttl, period) = (Duration::from_secs(9), Duration::from_secs(3));
        // Taken at 1 s: valid until 10 s, renewed at 4 s.
        let state = State::new(EpochFence::new(dir.path(), "s1", 3), 3, 10_000);
        assert_eq!(state.due(ttl, period), 4_000);
        state.renewed(4_100, ttl);
        assert_eq!((state.valid_until.load(Ordering::SeqCst), state.due(ttl, period)), (13_100, 7_100));
        // Kept for the watcher, once.
        std::future::poll_fn(|cx| state.poll_concluded(cx)).await;
        let again = futures::FutureExt::now_or_never(std::future::poll_fn(|cx| state.poll_concluded(cx)));
        assert!(again.is_none(), "one conclusion is seen once");
        assert!(futures::FutureExt::now_or_never(std::future::poll_fn(|cx| state.poll_lost(cx))).is_none());
        assert!(state.set_lost() && !state.set_lost());
        std::future::poll_fn(|cx| state.poll_lost(cx)).await;
    }
}
