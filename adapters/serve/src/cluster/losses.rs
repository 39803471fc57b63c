//! The sessions whose lease this worker has just lost (a renewal found the
//! lease taken, or the event stream refused the owner's event), on their way
//! to the sessions' hubs: the server reads them (`server.rs`,
//! `tell_hubs_of_lost_leases`) and has each such session's hub look at its
//! lease (its pump then hands its clients over to the new owner).
//!
//! A lease's state has no waker of its own (every session of a worker holds
//! one, and a waker took 24 of its bytes): a loss is rare, and told here,
//! once per worker, rather than by each lease.

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

/// The sessions whose lease was lost, not yet told to their hubs.
#[derive(Debug, Default)]
pub struct Losses {
    lost: Mutex<Vec<String>>,
    /// One reader (the registry's); a loss told while it is not waiting is kept for it.
    told: Notify,
}

impl Losses {
    /// Session `id`'s lease went to another worker.
    pub(super) fn tell(&self, id: String) {
        self.lost.lock().unwrap_or_else(PoisonError::into_inner).push(id);
        self.told.notify_one();
    }

    /// The sessions lost since the last call (waits for one).
    pub async fn next(&self) -> Vec<String> {
        loop {
            let lost = std::mem::take(&mut *self.lost.lock().unwrap_or_else(PoisonError::into_inner));
            if !lost.is_empty() {
                return lost;
            }
            self.told.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_loss_told_while_nobody_waits_is_kept_and_read_once() {
        let losses = Losses::default();
        losses.tell("s1".to_string());
        losses.tell("s2".to_string());
        assert_eq!(losses.next().await, ["s1", "s2"]);
        assert!(futures::FutureExt::now_or_never(losses.next()).is_none(), "read twice");
        let waiting = losses.next();
        tokio::pin!(waiting);
        assert!(futures::FutureExt::now_or_never(waiting.as_mut()).is_none());
        losses.tell("s3".to_string());
        assert_eq!(waiting.await, ["s3"]);
    }
}
