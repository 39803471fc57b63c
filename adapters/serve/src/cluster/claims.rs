//! Where fencing epochs are claimed (a write and an fsync of the session's
//! epoch file, [`super::fence::claim`]), and other small blocking work on
//! epoch files: the blocking pool of the lease keeper's runtime (the
//! keeper module starts it), at most [`THREADS`] thread(s) that end once idle for
//! [`IDLE`].
//!
//! * Bounded: the worker's own blocking pool starts a thread for each claim
//!   waiting when all of its threads are busy, so a burst of new sessions
//!   would leave that many more thread stacks and allocator arenas; here a
//!   burst waits its turn (as many claims at once as there are threads).
//! * Gone when idle: a thread that lived on would keep, in its allocator
//!   cache (glibc's per-thread tcache, which only the thread's end gives
//!   back), up to seven chunks of each small size it freed, most of them
//!   allocated by the sessions' threads (the claim's paths and closure):
//!   ~11 KiB per thread after a thousand new sessions, a fixed cost that
//!   appeared only once sessions came. An idle worker has no claim thread.

use std::time::Duration;

/// Claims made at once: one. Each claim thread that ever ran leaves its
/// stack's top pages (glibc caches an ended thread's stack) and an
/// allocator arena of its own, memory a worker without `--cluster` never
/// has: over a worker's first thousand sessions (debug build, gdb) four
/// left +48 KiB of cached stacks and +12 to +176 KiB of arenas, one +12
/// and +32. A claim is an fsync of a small file (about 6 ms on this
/// project's loaded test machine): a burst of a hundred new sessions waits
/// up to about 0.6 s for its claims.
pub const THREADS: usize = 1;

/// A claim's thread stack: a claim opens, locks, reads and writes one small file.
const STACK: usize = 128 * 1024;

/// How long an idle claim thread waits for more work before it ends.
const IDLE: Duration = Duration::from_millis(250);

/// The claim threads' name.
pub const NAME: &str = "pi-epoch-claim";

/// Set up `builder`'s blocking pool as the claim threads (the lease keeper's runtime).
pub fn configure(builder: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
    builder.max_blocking_threads(THREADS).thread_keep_alive(IDLE).thread_stack_size(STACK).thread_name(NAME)
}

/// The claim threads: the blocking pool of a runtime set up by [`configure`]
/// (cloned handles share it).
#[derive(Clone)]
pub struct Claims {
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Claims")
    }
}

impl Claims {
    /// The claim threads of `runtime` (set up by [`configure`]).
    pub fn on(runtime: tokio::runtime::Handle) -> Claims {
        Claims { runtime }
    }

    /// Run `work` on a claim thread and wait for its result.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        self.runtime.spawn_blocking(work).await.map_err(|e| format!("an epoch claim ended without an answer: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> tokio::runtime::Runtime {
        configure(&mut tokio::runtime::Builder::new_current_thread()).enable_all().build().unwrap()
    }

    #[tokio::test]
    async fn more_claims_than_threads_all_finish_on_at_most_that_many_claim_threads() {
        let runtime = pool();
        let claims = Claims::on(runtime.handle().clone());
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let names = futures::future::join_all((0..THREADS * 3).map(|_| {
            let (running, most) = (running.clone(), most.clone());
            claims.run(move || {
                use std::sync::atomic::Ordering::SeqCst;
                most.fetch_max(running.fetch_add(1, SeqCst) + 1, SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, SeqCst);
                std::thread::current().name().map(str::to_owned).unwrap_or_default()
            })
        }))
        .await;
        assert_eq!(names.len(), THREADS * 3);
        for name in names {
            assert_eq!(name.unwrap(), NAME);
        }
        let most = most.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=THREADS).contains(&most), "{most} claims ran at once");
        runtime.shutdown_background();
    }
}
