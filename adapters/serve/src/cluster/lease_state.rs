//! The state a held lease shares with its session's pump and the worker's
//! renewals, the leases' monotonic clock, and the lease value's format
//! (owner and last renewal). A leaf: the lease and the renewals both use it.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use pi_core::session::{FenceGuard, WriteFence};

use super::fence::EpochFence;

/// What a lease, its session's pump and the worker's renewals share.
#[derive(Debug)]
pub(super) struct State {
    /// The session's fence (it names the session); the session's writes
    /// enter it through this state (`Lease::fence`).
    pub(super) fence: EpochFence,
    pub(super) revision: AtomicU64,
    pub(super) lost: AtomicBool,
    /// Let go (released or dropped): renewals end.
    pub(super) released: AtomicBool,
    /// Until when the lease is surely this worker's ([`clock_ms`]; moved by each renewal).
    pub(super) valid_until: AtomicU64,
    /// When the next renewal is due ([`clock_ms`]).
    pub(super) due: AtomicU64,
    /// The event stream's sequence of the session's last message this owner
    /// knows of (its takeover mark, then each event it stored): its next
    /// event is stored only if the session's last message is still that one.
    pub(super) stored: AtomicU64,
    /// A renewal concluded (the pump holding output looks again).
    pub(super) concluded: Notify,
    /// Another worker took the session (renewal lost).
    pub(super) lost_signal: Notify,
}

impl State {
    pub(super) fn in_doubt(&self) -> bool {
        clock_ms() > self.valid_until.load(Ordering::SeqCst)
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
