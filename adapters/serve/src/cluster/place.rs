//! Where a session is served in a cluster: here (its lease is free, or
//! expired with its owner: this worker takes it and loads it from shared
//! storage) or by another worker (this worker opens a mirror of it). An
//! owner that does not answer is retried until its lease expires, within a
//! bound ([`open_wait`]); then the session is taken over.

use std::sync::Arc;
use std::time::Duration;

use pi_core::error::CoreError;
use tokio::time::Instant;

use super::Cluster;
use super::lease::{Lease, LeaseError};
use super::mirror::{self, OpenFailure};
use crate::hub::{Feed, Hub, Loaded};
use crate::ownership::Ownership;
use crate::registry::{Registry, Taken};
use crate::replay::ReplayBuffer;

/// How long opening a session may wait for an owner that does not answer
/// (its lease expires within the TTL), or for the bus.
pub fn open_wait(cluster: &Cluster) -> Duration {
    cluster.options.lease_ttl * 2 + Duration::from_secs(5)
}

pub(crate) fn draining() -> CoreError {
    CoreError::busy("this worker is shutting down (draining): connect again to reach another worker")
        .with_retryable(true)
}

fn unreachable(id: &str, why: &str) -> CoreError {
    CoreError::busy(format!("session {id} cannot be reached in the cluster right now: {why}")).with_retryable(true)
}

/// The lease is ours: where the session's events stand, and whether a run
/// of a lost worker was cut short. `generated`: the id was just made here
/// (a new session without a client-chosen id), so it has no events and no
/// earlier owner: the stream is not asked, and its first event expects none.
pub(crate) async fn taken(
    cluster: &Cluster,
    id: &str,
    (lease, taken_from): (Lease, Option<String>),
    capacity: usize,
    generated: bool,
) -> Result<Taken, CoreError> {
    // Its events are this owner's from here on (see `EventLog::mark`).
    let tail = if generated {
        None
    } else {
        let (tail, mark) = cluster.events.mark(id).await.map_err(|e| unreachable(id, &format!("its events: {e}")))?;
        lease.chain_from(mark);
        tail
    };
    let interrupted = match tail {
        // The previous owner was in a run and did not end it: it was lost.
        Some(tail) if tail.running => Some(taken_from.unwrap_or_else(|| "its previous worker".to_string())),
        _ => None,
    };
    let buffer = ReplayBuffer::chained(tail.map_or(0, |t| t.seq), capacity);
    Ok(Taken { ownership: Ownership::Leased(lease), buffer, interrupted })
}

/// Open session `id` in the cluster: here, or as a mirror of its owner's.
pub(crate) async fn open(registry: &Arc<Registry>, id: &str) -> Result<Arc<Hub>, CoreError> {
    let Some(cluster) = registry.cluster().cloned() else {
        return Err(CoreError::internal("not in a cluster"));
    };
    let me = cluster.options.worker.clone();
    let capacity = registry.options().hub.replay_events;
    let deadline = Instant::now() + open_wait(&cluster);
    let mut delay = Duration::from_millis(50);
    loop {
        let present = registry.hubs().get(id).cloned();
        match present {
            Some(hub) if !hub.is_closing() => return Ok(hub),
            Some(hub) => {
                hub.wait_closed().await;
                continue;
            }
            None => {}
        }
        let why = match acquire(registry, &cluster, id).await {
            Ok(lease) => {
                if registry.file_of(id).is_none() {
                    let (lease, _) = lease;
                    // Let go before answering: the caller may create the session next.
                    lease.release().await;
                    return Err(CoreError::not_found(format!("No session found with id '{id}'")));
                }
                let taken = match taken(&cluster, id, lease, capacity, false).await {
                    Ok(taken) => taken,
                    Err(e) => return Err(e),
                };
                let mut hubs = registry.hubs();
                if hubs.get(id).is_some_and(|h| !h.is_closing()) {
                    drop(taken);
                    continue;
                }
                return registry.load_file(&mut hubs, id, taken);
            }
            // Our own: a load in progress here, or a release not landed yet.
            Err(LeaseError::OwnedElsewhere { owner, .. }) if owner == me => {
                format!("it is being loaded or released by {me}")
            }
            Err(LeaseError::OwnedElsewhere { owner, .. }) => {
                match mirror::open(&cluster, id, &owner, registry.next_conn_id()).await {
                    Ok(opened) => {
                        let loaded = Loaded {
                            id: id.to_string(),
                            session_file: opened.session_file,
                            agent: opened.agent,
                            feed: Feed::Mirror { items: opened.items, ctl: opened.ctl },
                            ownership: None,
                            buffer: ReplayBuffer::mirrored(opened.last_seq, capacity),
                            log: Some(cluster.events.clone()),
                            interrupted: None,
                        };
                        match registry.adopt(id, loaded) {
                            Ok(hub) => return Ok(hub),
                            // Another connection opened it meanwhile: ours goes.
                            Err(loaded) => {
                                if let Feed::Mirror { ctl, .. } = loaded.feed {
                                    drop(ctl.finish(None));
                                }
                                continue;
                            }
                        }
                    }
                    Err(OpenFailure::NotThere(why) | OpenFailure::Bus(why)) => why,
                }
            }
            Err(LeaseError::Bus { detail, .. }) => detail,
        };
        if Instant::now() >= deadline {
            return Err(unreachable(id, &why));
        }
        tracing::debug!("session {id}: {why}; trying again in {delay:?}");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

/// Take the session's lease, unless this worker drains (then only find its holder).
async fn acquire(registry: &Registry, cluster: &Cluster, id: &str) -> Result<(Lease, Option<String>), LeaseError> {
    if !registry.is_draining() {
        return Lease::acquire(cluster, registry.session_dir(), id).await;
    }
    match Lease::holder(cluster, id).await? {
        Some(owner) if owner != cluster.options.worker => Err(LeaseError::OwnedElsewhere { id: id.to_string(), owner }),
        _ => Err(LeaseError::Bus { id: id.to_string(), detail: draining().message }),
    }
}
