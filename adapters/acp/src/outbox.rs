//! The way out of one ACP connection, shared by the connection and its
//! session tasks: messages go to the writer within a byte budget, and our
//! requests to the client wait in a table for the client's responses.

use std::sync::{Arc, Mutex};

use pi_transport::Outbound;
use tokio::sync::{Semaphore, mpsc};

use crate::requests::Sent;

/// Bytes waiting for the client to read them (a bigger message waits for
/// the way out to empty, then goes alone).
pub(crate) const OUT_BYTES: usize = 16 * 1024 * 1024;

/// What the connection and its session tasks share: the way out and the
/// table of our requests awaiting the client's response.
pub struct Shared {
    out: mpsc::Sender<(Vec<u8>, u32)>,
    room: Arc<Semaphore>,
    sent: Mutex<Outbound<Sent>>,
}

impl Shared {
    /// A way out through `out`, with `room` bytes the client may have left to read.
    pub(crate) fn new(out: mpsc::Sender<(Vec<u8>, u32)>, room: Arc<Semaphore>) -> Self {
        Shared { out, room, sent: Mutex::new(Outbound::default()) }
    }

    /// Our requests awaiting the client's response.
    pub(crate) fn table(&self) -> std::sync::MutexGuard<'_, Outbound<Sent>> {
        self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Send one message (dropped once the output is closed), waiting while
    /// the client has more than the budget left to read.
    pub async fn send(&self, bytes: Vec<u8>) {
        let cost = u32::try_from(bytes.len().clamp(1, OUT_BYTES)).unwrap_or(u32::MAX);
        let Ok(permit) = self.room.clone().acquire_many_owned(cost).await else { return };
        permit.forget();
        if self.out.send((bytes, cost)).await.is_err() {
            self.room.add_permits(cost as usize);
        }
    }

    /// Record a request to the client; returns its wire id.
    pub fn outbound(&self, sent: Sent) -> u64 {
        self.table().insert(sent)
    }

    /// The core stopped waiting for request `core_id`: forget it, returning its wire id.
    pub fn forget(&self, core_id: &str) -> Option<u64> {
        self.table().take_where(|s| s.core_id == core_id).map(|(id, _)| id)
    }
}
