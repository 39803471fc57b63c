//! The fencing epoch of a session on shared storage: a small file beside the
//! session files (`<session dir>/.owners/<id>.epoch`) holding the epoch of
//! the session's current owner, written by each new owner when it takes the
//! lease. Every write to the session file first takes a shared `flock` on it
//! and compares: an owner whose epoch is below the file's (paused past its
//! lease, then resumed) is refused, and a takeover (exclusive lock) waits for
//! a write in progress to end, so two workers never both write one file.
//!
//! An owner whose lease expired while nobody else took it (its renewals ran
//! late) takes the lease again under a new epoch and moves its fence along
//! ([`EpochFence::move_to`]): only when the file still holds its old epoch,
//! i.e. no other worker owned the session meanwhile.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::{Flock, FlockArg};
use pi_core::session::{FenceGuard, WriteFence};

use super::compact_id::{CompactId, IdText};
use crate::lock::OWNERS_DIR;

/// The epoch file of session `id`.
pub fn epoch_path(session_dir: &Path, id: &str) -> PathBuf {
    session_dir.join(OWNERS_DIR).join(format!("{id}.epoch"))
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

fn read_epoch(file: &mut File) -> std::io::Result<u64> {
    let mut text = String::new();
    file.rewind()?;
    file.read_to_string(&mut text)?;
    Ok(text.trim().parse().unwrap_or(0))
}

/// Record `epoch` as the session's current owner's (never lowering it).
pub fn claim(session_dir: &Path, id: &str, epoch: u64) -> std::io::Result<()> {
    let path = epoch_path(session_dir, id);
    let file = open(&path)?;
    let mut locked = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
    let current = read_epoch(&mut locked)?;
    if current > epoch {
        return Err(std::io::Error::other(format!(
            "session {id} already has a newer owner (epoch {current} > {epoch})"
        )));
    }
    locked.set_len(0)?;
    locked.rewind()?;
    locked.write_all(epoch.to_string().as_bytes())?;
    locked.sync_data()?;
    Ok(())
}

/// The fence of one owner of one session (held by every leased session, so
/// kept small: its epoch file's path is made when it is used, and its id is
/// held inline when it is a UUID).
#[derive(Debug)]
pub struct EpochFence {
    /// The session directory (shared by the worker's fences; a thin pointer).
    session_dir: Arc<PathBuf>,
    id: CompactId,
    epoch: AtomicU64,
}

impl EpochFence {
    pub fn new(session_dir: &Path, id: &str, epoch: u64) -> EpochFence {
        EpochFence::in_dir(Arc::new(session_dir.to_path_buf()), id, epoch)
    }

    /// The fence of session `id` in a shared `session_dir`.
    pub fn in_dir(session_dir: Arc<PathBuf>, id: &str, epoch: u64) -> EpochFence {
        EpochFence { session_dir, id: CompactId::new(id), epoch: AtomicU64::new(epoch) }
    }

    fn path(&self) -> PathBuf {
        epoch_path(&self.session_dir, &self.id())
    }

    /// The session it guards.
    pub(super) fn id(&self) -> IdText<'_> {
        self.id.text()
    }

    /// The epoch this owner writes under.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// True while the file holds this owner's epoch (no newer owner).
    pub fn is_current(&self) -> std::io::Result<bool> {
        let file = open(&self.path())?;
        let mut locked = Flock::lock(file, FlockArg::LockShared).map_err(|(_, e)| std::io::Error::from(e))?;
        Ok(read_epoch(&mut locked)? == self.epoch())
    }

    /// Move this owner to epoch `to` (its lease taken again): true when done,
    /// false when the file no longer holds this owner's epoch (another worker
    /// owned the session meanwhile: this owner keeps its old epoch, refused).
    pub fn move_to(&self, to: u64) -> std::io::Result<bool> {
        let file = open(&self.path())?;
        let mut locked = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
        let (current, from) = (read_epoch(&mut locked)?, self.epoch());
        if current != from || to <= from {
            return Ok(false);
        }
        locked.set_len(0)?;
        locked.rewind()?;
        locked.write_all(to.to_string().as_bytes())?;
        locked.sync_data()?;
        self.epoch.store(to, Ordering::SeqCst);
        Ok(true)
    }
}

impl WriteFence for EpochFence {
    fn enter(&self) -> Result<FenceGuard, String> {
        let path = self.path();
        let file = open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut locked =
            Flock::lock(file, FlockArg::LockShared).map_err(|(_, e)| format!("{}: {e}", path.display()))?;
        let current = read_epoch(&mut locked).map_err(|e| format!("{}: {e}", path.display()))?;
        let epoch = self.epoch();
        if current > epoch {
            return Err(format!(
                "session {} was taken over by another worker (fencing epoch {current} > this worker's {epoch}): this worker may no longer write it",
                self.id()
            ));
        }
        Ok(FenceGuard::holding(locked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_owner_is_refused_once_a_newer_one_claims() {
        let dir = tempfile::tempdir().unwrap();
        claim(dir.path(), "s1", 5).unwrap();
        let old = EpochFence::new(dir.path(), "s1", 5);
        assert!(old.enter().is_ok());
        claim(dir.path(), "s1", 9).unwrap();
        let refused = old.enter().unwrap_err();
        assert!(refused.contains("taken over") && refused.contains("9 > this worker's 5"), "{refused}");
        assert!(EpochFence::new(dir.path(), "s1", 9).enter().is_ok());
        // An epoch never goes back.
        assert!(claim(dir.path(), "s1", 7).is_err());
    }

    #[test]
    fn an_owner_taking_its_lease_again_moves_its_epoch_and_a_stale_owner_stays_refused() {
        let dir = tempfile::tempdir().unwrap();
        claim(dir.path(), "s1", 3).unwrap();
        let stale = EpochFence::new(dir.path(), "s1", 3);
        claim(dir.path(), "s1", 5).unwrap();
        let owner = EpochFence::new(dir.path(), "s1", 5);
        // Its lease expired with nobody else there: taken again under 8.
        assert!(owner.move_to(8).unwrap());
        assert_eq!((owner.epoch(), std::fs::read_to_string(epoch_path(dir.path(), "s1")).unwrap()), (8, "8".into()));
        assert!(owner.enter().is_ok() && owner.is_current().unwrap() && !stale.is_current().unwrap());
        assert!(stale.enter().unwrap_err().contains("8 > this worker's 3"));
        // The stale owner cannot move itself past the current owner.
        assert!(!stale.move_to(9).unwrap());
        assert_eq!(stale.epoch(), 3);
        // Another worker owned the session meanwhile (epoch 11): this owner is not moved.
        claim(dir.path(), "s1", 11).unwrap();
        assert!(!owner.move_to(12).unwrap());
        assert!(owner.enter().unwrap_err().contains("11 > this worker's 8"));
    }
}
