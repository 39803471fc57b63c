//! Where leases are renewed (and new ones created, see
//! `Renewals::bucket`): a thread of its own, with its own small runtime
//! (whose blocking pool is the epoch claims' threads, [`super::claims`])
//! and its own connection to the bus, so renewals stay on time whatever the
//! worker's runtime is busy with (a hundred sessions loading at once keeps
//! both of its threads busy, and a renewal late by more than two thirds of
//! the TTL loses its lease). The renewals run there in one loop
//! ([`super::renew`]).

use std::sync::Arc;

use async_nats::jetstream::kv;

use super::claims::{self, Claims};
use super::lease_write::LeaseWriter;
use super::losses::Losses;
use super::renew::Renewals;
use super::{ClusterOptions, LEASE_BUCKET, connect_client};

/// The read buffer of the keeper's connection: it reads only the answers to
/// renewals and to new leases' creates, a hundred bytes or so each. (With the default 64 KiB, a round
/// of renewals left a few such buffers per round in the keeper's allocator
/// arena, some hundred kilobytes for a thousand leases.)
const READ_BUFFER: u16 = 4096;

/// Connect the keeper's thread to the bus and open the lease bucket there
/// (on the keeper's runtime, whose blocking pool the claims get).
async fn open(options: ClusterOptions, here: Arc<kv::Store>, losses: Arc<Losses>) -> Result<Keeper, String> {
    let client = connect_client(&options, "leases", READ_BUFFER).await?;
    let writer = LeaseWriter::new(client.clone());
    let jetstream = async_nats::jetstream::new(client);
    let leases = jetstream
        .get_key_value(LEASE_BUCKET)
        .await
        .map_err(|e| format!("--cluster: cannot open the lease bucket {LEASE_BUCKET}: {e}"))?;
    Ok(Keeper {
        renewals: Arc::new(Renewals::new(
            Arc::new(leases),
            writer,
            here,
            losses,
            options.worker.clone(),
            options.lease_ttl,
        )),
        claims: Claims::on(tokio::runtime::Handle::current()),
    })
}

/// The renewals' thread, and the leases it renews.
#[derive(Clone)]
pub struct Keeper {
    /// Every lease of the worker (their bucket through the keeper's own connection).
    pub renewals: Arc<Renewals>,
    /// The claim threads (the keeper's runtime's blocking pool).
    pub claims: Claims,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keeper")
    }
}

impl Keeper {
    /// Start the thread and connect it (the lease bucket exists already).
    /// `here`: the lease bucket through the worker's own connection;
    /// `losses`: where the leases lost are told.
    pub async fn start(options: &ClusterOptions, here: Arc<kv::Store>, losses: Arc<Losses>) -> Result<Keeper, String> {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let options = options.clone();
        let started = std::thread::Builder::new().name("pi-lease-keeper".to_string()).spawn(move || {
            let runtime =
                match claims::configure(&mut tokio::runtime::Builder::new_current_thread()).enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("the lease keeper's runtime: {e}")));
                        return;
                    }
                };
            // Opened in a future of its own on the heap (the connection's and the
            // bucket's are large): on this thread's stack, its pages would stay
            // resident for as long as the worker runs; on the heap, the renewals
            // reuse them once it is done.
            let keeper = runtime.block_on(Box::pin(open(options, here, losses)));
            let renewals = match &keeper {
                Ok(keeper) => keeper.renewals.clone(),
                Err(_) => {
                    let _ = ready_tx.send(keeper);
                    return;
                }
            };
            if ready_tx.send(keeper).is_err() {
                return;
            }
            // Runs the renewals until the process ends.
            runtime.block_on(renewals.run());
        });
        started.map_err(|e| format!("the lease keeper's thread: {e}"))?;
        ready_rx.await.map_err(|_| "the lease keeper's thread ended".to_string())?
    }
}
