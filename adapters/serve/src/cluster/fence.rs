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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

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

/// The session directories of the process's fences, each kept once for as
/// long as the process runs (a worker has one; a test process a few
/// hundred): a fence names its directory by its index here, in its id's
/// spare room, rather than by a pointer of its own.
static SESSION_DIRS: RwLock<Vec<&'static Path>> = RwLock::new(Vec::new());

/// The index of `dir` among [`SESSION_DIRS`] (added when new).
fn dir_index(dir: &Path) -> u32 {
    let known = |dirs: &[&'static Path]| dirs.iter().position(|d| *d == dir);
    let found = known(&SESSION_DIRS.read().unwrap_or_else(PoisonError::into_inner));
    let at = found.unwrap_or_else(|| {
        let mut dirs = SESSION_DIRS.write().unwrap_or_else(PoisonError::into_inner);
        known(&dirs).unwrap_or_else(|| {
            dirs.push(Box::leak(dir.to_path_buf().into_boxed_path()));
            dirs.len() - 1
        })
    });
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// The session directory at `index` among [`SESSION_DIRS`].
fn dir_at(index: u32) -> &'static Path {
    let dirs = SESSION_DIRS.read().unwrap_or_else(PoisonError::into_inner);
    usize::try_from(index).ok().and_then(|at| dirs.get(at).copied()).unwrap_or(Path::new("."))
}

/// The fence of one owner of one session (held by every leased session, so
/// kept small: 32 bytes; its epoch file's path is made when it is used, its
/// id is held inline when it is a UUID, and its session directory is an
/// index beside the id).
#[derive(Debug)]
pub struct EpochFence {
    /// The session's id, and the index of its directory among [`SESSION_DIRS`].
    id: CompactId,
    epoch: AtomicU64,
}

impl EpochFence {
    /// The fence of session `id` in `session_dir` under `epoch`.
    pub fn new(session_dir: &Path, id: &str, epoch: u64) -> EpochFence {
        EpochFence { id: CompactId::new(id, dir_index(session_dir)), epoch: AtomicU64::new(epoch) }
    }

    fn path(&self) -> PathBuf {
        epoch_path(dir_at(self.id.beside()), &self.id())
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
    fn a_fence_is_32_bytes_and_finds_its_own_directory_among_several() {
        assert!(std::mem::size_of::<EpochFence>() <= 32, "{} bytes", std::mem::size_of::<EpochFence>());
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        claim(one.path(), "s1", 4).unwrap();
        claim(two.path(), "s1", 6).unwrap();
        let (in_one, in_two) = (EpochFence::new(one.path(), "s1", 4), EpochFence::new(two.path(), "s1", 6));
        assert_eq!((in_one.path(), in_two.path()), (epoch_path(one.path(), "s1"), epoch_path(two.path(), "s1")));
        assert!(in_one.is_current().unwrap() && in_two.is_current().unwrap());
        // A directory is kept once, whichever fence named it first.
        let same = PathBuf::from(one.path().to_string_lossy().as_ref());
        assert_eq!(dir_index(one.path()), dir_index(&same));
        assert_ne!(dir_index(one.path()), dir_index(two.path()));
    }

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
