//! The state a held lease shares with its session's pump and the worker's
//! renewals, the leases' monotonic clock, and the lease value's format
//! (owner and last renewal). A leaf: the lease and the renewals both use it.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;

use pi_core::session::{FenceGuard, WriteFence};

use super::fence::EpochFence;

/// What a lease, its session's pump and the worker's renewals share.
///
/// Every session of a worker in a cluster holds one, so it is kept small
/// (56 bytes: with the Arc's counts, the same 80-byte allocator chunk as a
/// lone worker's lock path): its session's id is inline and its session
/// directory an index beside it (see `fence`), the next renewal's time is
/// derived from the last one that concluded, and its three flags share a
/// word with its validity. It has no waker: the session's pump looks at it
/// when it wakes, every so often while the lease is in doubt, and when told
/// of a loss through the worker's [`super::losses`].
#[derive(Debug)]
pub(super) struct State {
    /// The session's fence (it names the session); the session's writes
    /// enter it through this state (`Lease::fence`).
    pub(super) fence: EpochFence,
    pub(super) revision: AtomicU64,
    /// Until when the lease is surely this worker's ([`clock_ms`]; moved by
    /// each renewal to a TTL after it was sent), in the low 61 bits; the
    /// flags [`LOST`], [`RELEASED`] and [`RENEWING`] above.
    word: AtomicU64,
    /// The event stream's sequence of the session's last message this owner
    /// knows of (its takeover mark, then each event it stored): its next
    /// event is stored only if the session's last message is still that one.
    pub(super) stored: AtomicU64,
}

/// Another worker took the session (renewal lost, or an event refused).
const LOST: u64 = 1 << 63;
/// Let go (released or dropped): renewals end.
const RELEASED: u64 = 1 << 62;
/// A renewal of it is on its way (set by the renewals' loop, cleared by the
/// renewal once it concluded).
const RENEWING: u64 = 1 << 61;
/// The validity's bits (2^61 ms: 73 million years of the leases' clock).
const VALID: u64 = RENEWING - 1;

impl State {
    /// The state of a lease taken at `asked` ([`clock_ms`]) under `epoch`:
    /// surely this worker's for a TTL from then.
    pub(super) fn new(fence: EpochFence, epoch: u64, valid_until: u64) -> State {
        State {
            fence,
            revision: AtomicU64::new(epoch),
            word: AtomicU64::new(valid_until.min(VALID)),
            stored: AtomicU64::new(0),
        }
    }

    /// Until when the lease is surely this worker's ([`clock_ms`]).
    pub(super) fn valid_until(&self) -> u64 {
        self.word.load(Ordering::SeqCst) & VALID
    }

    fn has(&self, flag: u64) -> bool {
        self.word.load(Ordering::SeqCst) & flag != 0
    }

    /// Set `flag`: true when this call set it.
    fn set(&self, flag: u64) -> bool {
        self.word.fetch_or(flag, Ordering::SeqCst) & flag == 0
    }

    /// Clear `flag`: true when it was set.
    fn clear(&self, flag: u64) -> bool {
        self.word.fetch_and(!flag, Ordering::SeqCst) & flag != 0
    }

    /// True once the lease was let go (released, or dropped with its session).
    pub(super) fn is_released(&self) -> bool {
        self.has(RELEASED)
    }

    /// Let go: true when this call let it go (not before).
    pub(super) fn set_released(&self) -> bool {
        self.set(RELEASED)
    }

    /// A renewal of it is on its way.
    pub(super) fn is_renewing(&self) -> bool {
        self.has(RENEWING)
    }

    /// A renewal of it starts (`true`: the renewals' loop) or ended (`false`: the renewal).
    pub(super) fn set_renewing(&self, renewing: bool) {
        if renewing {
            self.set(RENEWING);
        } else {
            self.clear(RENEWING);
        }
    }

    pub(super) fn in_doubt(&self) -> bool {
        clock_ms() > self.valid_until()
    }

    /// When its next renewal is due: a `period` after the last one that
    /// concluded was sent (a TTL before its validity ends).
    pub(super) fn due(&self, ttl: Duration, period: Duration) -> u64 {
        self.valid_until().saturating_sub(millis(ttl)) + millis(period)
    }

    /// A renewal sent at `sent` ([`clock_ms`]) concluded without losing the
    /// lease: surely this worker's until a TTL later.
    pub(super) fn renewed(&self, sent: u64, ttl: Duration) {
        let valid = (sent + millis(ttl)).min(VALID);
        // The flags kept, the validity replaced.
        let _ = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| Some((word & !VALID) | valid));
    }

    /// True once another worker holds the session.
    pub(super) fn is_lost(&self) -> bool {
        self.has(LOST)
    }

    /// Another worker holds the session: true when this call said so first
    /// (the caller then tells the worker's [`super::losses`]).
    pub(super) fn set_lost(&self) -> bool {
        self.set(LOST)
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

/// A lease's value: its owner and when it last renewed (wall clock, ms),
/// `{"owner":…,"renewed":…}`, written in one buffer (it is made for every
/// create and renewal: through a `serde_json::Value`, ten allocations).
pub(super) fn owner_value(worker: &str) -> Bytes {
    owner_value_at(worker, now_ms())
}

fn owner_value_at(worker: &str, renewed: u64) -> Bytes {
    const OWNER: &[u8] = b"{\"owner\":";
    const RENEWED: &[u8] = b",\"renewed\":";
    let mut length = Count(OWNER.len() + RENEWED.len() + 1);
    let _ = serde_json::to_writer(&mut length, worker);
    let _ = serde_json::to_writer(&mut length, &renewed);
    let mut value = Vec::with_capacity(length.0);
    value.extend_from_slice(OWNER);
    // A string and a number always serialise (into a Vec, without failing).
    let _ = serde_json::to_writer(&mut value, worker);
    value.extend_from_slice(RENEWED);
    let _ = serde_json::to_writer(&mut value, &renewed);
    value.push(b'}');
    // Its length is its capacity: it becomes `Bytes` as it is (a `Vec` with
    // room to spare would take a second allocation, a shared buffer's header).
    Bytes::from(value)
}

/// Counts what is written (the length of a lease value, before it is made).
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
    fn a_lease_value_is_the_json_of_its_owner_and_renewal_time() {
        for worker in ["wA", "w \"quoted\" \\ é", ""] {
            let value = owner_value_at(worker, 1_733_000_000_123);
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&value).unwrap(),
                serde_json::json!({ "owner": worker, "renewed": 1_733_000_000_123u64 })
            );
            assert_eq!(owner_of(&value), worker);
            // The length counted before it was made is its length.
            assert_eq!(value.len(), 9 + serde_json::to_string(worker).unwrap().len() + 11 + 13 + 1);
        }
    }

    #[test]
    fn a_leases_state_takes_56_bytes() {
        // Held by every session of a worker in a cluster (idle sessions per
        // GiB): with the Arc's counts 72 bytes, an 80-byte chunk of glibc's
        // allocator, as a lone worker's lock path (and the session's id
        // inline when it is a UUID, rather than an allocation of its own).
        assert!(std::mem::size_of::<State>() <= 56, "{} bytes", std::mem::size_of::<State>());
    }

    #[test]
    fn the_flags_and_the_validity_share_a_word_without_touching_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::new(EpochFence::new(dir.path(), "s1", 3), 3, 10_000);
        assert!(!state.is_released() && !state.is_renewing() && !state.is_lost());
        state.set_renewing(true);
        assert!(state.set_released() && !state.set_released());
        assert_eq!(state.valid_until(), 10_000);
        state.renewed(20_000, Duration::from_secs(9));
        assert_eq!(state.valid_until(), 29_000);
        assert!(state.is_renewing() && state.is_released() && !state.is_lost());
        state.set_renewing(false);
        assert!(!state.is_renewing() && state.is_released());
        assert!(state.set_lost() && state.is_lost() && state.valid_until() == 29_000);
    }

    #[test]
    fn the_next_renewal_is_due_a_period_after_the_last_one_that_concluded_and_doubt_comes_a_ttl_after() {
        let dir = tempfile::tempdir().unwrap();
        let (ttl, period) = (Duration::from_secs(9), Duration::from_secs(3));
        // Taken at 1 s: valid until 10 s, renewed at 4 s.
        let state = State::new(EpochFence::new(dir.path(), "s1", 3), 3, 10_000);
        assert_eq!(state.due(ttl, period), 4_000);
        state.renewed(4_100, ttl);
        assert_eq!((state.valid_until(), state.due(ttl, period)), (13_100, 7_100));
        // Valid until the clock's start, now past: in doubt until a renewal concludes.
        let late = State::new(EpochFence::new(dir.path(), "s2", 3), 3, 0);
        let now = clock_ms();
        std::thread::sleep(Duration::from_millis(5));
        assert!(late.in_doubt());
        late.renewed(clock_ms(), ttl);
        assert!(!late.in_doubt() && late.valid_until() >= now + 9_000);
        // A loss is said once.
        assert!(late.set_lost() && !late.set_lost() && late.is_lost() && !late.in_doubt());
    }
}
