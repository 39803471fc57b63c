//! Where fencing epochs are claimed (a write and an fsync of the session's
//! epoch file, [`super::fence::claim`]): a few threads of their own, started
//! with the worker's cluster connection.
//!
//! Tokio's blocking pool would do, but it starts a thread for each claim
//! waiting when all of its threads are busy, so a burst of new sessions
//! leaves the worker with that many more thread stacks and allocator arenas
//! until they retire; here the number of threads is fixed, and a burst waits
//! its turn (as many claims at once as there are threads).

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

/// Claims made at once.
const THREADS: usize = 4;

/// A claim's thread stack: a claim opens, locks, reads and writes one small file.
const STACK: usize = 128 * 1024;

type Job = Box<dyn FnOnce() + Send>;

/// The claim threads (cloned handles share them).
#[derive(Clone)]
pub struct Claims {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Claims")
    }
}

impl Claims {
    /// Start the threads (they end when every handle is dropped).
    pub fn start() -> Result<Claims, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..THREADS {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("pi-epoch-claim-{n}"))
                .stack_size(STACK)
                .spawn(move || {
                    loop {
                        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                })
                .map_err(|e| format!("the epoch claim threads: {e}"))?;
        }
        Ok(Claims { jobs })
    }

    /// Run `work` on a claim thread and wait for its result.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(work());
        });
        self.jobs.send(job).map_err(|_| "the epoch claim threads ended".to_string())?;
        result.await.map_err(|_| "an epoch claim ended without an answer".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_on_the_claim_threads_and_more_claims_than_threads_all_finish() {
        let claims = Claims::start().unwrap();
        let names = futures::future::join_all(
            (0..THREADS * 3)
                .map(|_| claims.run(|| std::thread::current().name().map(str::to_owned).unwrap_or_default())),
        )
        .await;
        assert_eq!(names.len(), THREADS * 3);
        for name in names {
            assert!(name.unwrap().starts_with("pi-epoch-claim-"));
        }
    }
}
