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
//!
//! A trim cannot take back what each thread keeps in its own cache (glibc's
//! tcache: up to 7 freed chunks of each size up to 1 KiB, given back only
//! when the thread ends). The runtime's worker threads live as long as the
//! server, and after a burst of connections their cached chunks lie all
//! over the grown heap, each holding a page the trim would otherwise give
//! back: under 10,000 connect/close cycles (8 at a time) RSS grew by
//! 1.1–1.9 MiB, all of it in these caches (with glibc's tcache off: +0.05
//! MiB). glibc sets the cache's size only from `GLIBC_TUNABLES` at exec, so
//! [`bound_thread_caches`] starts `pi serve` again with a smaller one
//! ([`TUNABLE`]) before any thread exists.

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

/// The thread-cache bound `pi serve` runs with: 2 chunks of each size
/// instead of glibc's 7.
pub const TUNABLE: &str = "glibc.malloc.tcache_count=2";

/// Run this program again with glibc's per-thread caches bounded
/// ([`TUNABLE`] in `GLIBC_TUNABLES`), same arguments, same process id, so
/// its threads (and the processes it starts) keep fewer freed chunks.
/// Call it before any thread is started. It returns only when nothing was
/// done: not glibc; `GLIBC_TUNABLES` already set (by the user, or by this
/// same step: an empty value keeps glibc's defaults); something preloaded
/// (`LD_PRELOAD`: another allocator, or a tool such as valgrind or
/// heaptrack, which would not follow the new program); or the exec failed.
pub fn bound_thread_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("GLIBC_TUNABLES").is_some() || std::env::var_os("LD_PRELOAD").is_some() {
            return;
        }
        let mut args = std::env::args_os();
        let Some(arg0) = args.next() else { return };
        // /proc/self/exe: this very program, even if its file was replaced since.
        let error =
            std::process::Command::new("/proc/self/exe").arg0(arg0).args(args).env("GLIBC_TUNABLES", TUNABLE).exec();
        tracing::debug!("pi serve: running on with glibc's default thread caches ({error})");
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
