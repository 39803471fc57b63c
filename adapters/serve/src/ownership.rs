//! What lets this worker serve a session: alone, the OS file lock of
//! [`crate::lock`]; in a cluster, the session's lease ([`crate::cluster::lease`]),
//! whose fencing epoch guards every write of the session file.

use pi_core::error::{CoreError, ErrorKind};
use pi_core::session::SharedFence;

use crate::cluster::lease::{Lease, LeaseError};
use crate::lock::{LockError, OwnerLock};

/// Held for as long as the session is loaded; dropping it lets go.
#[derive(Debug)]
pub enum Ownership {
    Local(OwnerLock),
    // Two pointers: no larger than the lock.
    Leased(Lease),
}

impl Ownership {
    /// The fence of the session's writes (a lease's epoch; none alone).
    pub fn fence(&self) -> Option<SharedFence> {
        match self {
            Ownership::Local(_) => None,
            Ownership::Leased(lease) => Some(lease.fence()),
        }
    }
}

/// "Owned elsewhere" is retryable: the owner lets go, or its lease expires.
pub fn lock_error(e: LockError) -> CoreError {
    match e {
        LockError::OwnedElsewhere { .. } => CoreError::new(ErrorKind::Busy, e.to_string()).with_retryable(true),
        LockError::Io { .. } => CoreError::internal(e.to_string()),
    }
}

pub fn lease_error(e: LeaseError) -> CoreError {
    match e {
        LeaseError::OwnedElsewhere { .. } => CoreError::new(ErrorKind::Busy, e.to_string()).with_retryable(true),
        LeaseError::Bus { .. } => CoreError::new(ErrorKind::Busy, e.to_string()).with_retryable(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_inline_and_takes_no_more_room_than_the_lock() {
        assert!(std::mem::size_of::<Lease>() <= std::mem::size_of::<OwnerLock>());
        assert_eq!(std::mem::size_of::<Ownership>(), std::mem::size_of::<Option<Ownership>>());
    }
}
