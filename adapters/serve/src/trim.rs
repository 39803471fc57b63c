//! Giving the memory of unloaded sessions back to the system.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for
//! later use: after a burst of sessions is unloaded, their pages stay
//! resident (under connection churn with 8 sessions at a time, the
//! server's anonymous memory went from ~5 to ~12 MiB and stayed there).
//! After a session is unloaded, the registry asks for a trim: once the
//! session's last parts have been dropped (a short delay), `malloc_trim`
//! returns every free page of every arena. Trims are coalesced: at most one
//! is waiting at any time, so churn costs a few trims a second at most.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long after an unload the trim runs: the session's actor, queues and
/// buffers are dropped by their own tasks shortly after it is forgotten.
const SETTLE: Duration = Duration::from_millis(100);

/// Coalesces trim requests into one delayed trim.
#[derive(Clone, Default)]
pub(crate) struct Trimmer {
    waiting: Arc<AtomicBool>,
}

impl Trimmer {
    /// A session was unloaded: trim soon, unless a trim is already waiting
    /// (outside a Tokio runtime, nothing is done).
    pub(crate) fn request(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if self.waiting.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiting = self.waiting.clone();
        runtime.spawn(async move {
            tokio::time::sleep(SETTLE).await;
            waiting.store(false, Ordering::Release);
            release_free_memory();
        });
    }
}

/// Return the allocator's free pages to the system (glibc; elsewhere a no-op).
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` takes no pointer and only works on glibc's own
    // arenas, under their locks; it is safe to call from any thread at any time.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_while_one_waits_are_one_trim() {
        let trimmer = Trimmer::default();
        trimmer.request();
        assert!(trimmer.waiting.load(Ordering::Acquire));
        trimmer.request();
        trimmer.request();
        tokio::time::sleep(SETTLE * 2).await;
        assert!(!trimmer.waiting.load(Ordering::Acquire), "the trim ran and a new one may be asked for");
        trimmer.request();
        assert!(trimmer.waiting.load(Ordering::Acquire));
    }

    #[test]
    fn outside_a_runtime_nothing_waits() {
        let trimmer = Trimmer::default();
        trimmer.request();
        assert!(!trimmer.waiting.load(Ordering::Acquire));
    }
}
