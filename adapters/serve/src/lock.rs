//! One owner per session across workers: an OS lock (`flock`) on a lock
//! file beside the session files, held for as long as the session is loaded.
//!
//! The lock file is per session id (`<session dir>/.owners/<id>.lock`)
//! rather than the session file itself, because a session's file is only
//! written once it holds a message while its id is taken from the start
//! (and a client may choose the id: two workers must not both create it).
//! The kernel releases the lock when the owning process dies, so a worker
//! killed mid-run hands its sessions over at once. The file holds the
//! owner's name, quoted in the "owned elsewhere" error.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Directory of the lock files, inside the session directory.
pub const OWNERS_DIR: &str = ".owners";

/// Why a session could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("session {id} is owned elsewhere (by {owner}); it is served by that worker until it lets go")]
    OwnedElsewhere { id: String, owner: String },
    #[error("cannot lock session {id}: {source}")]
    Io { id: String, source: std::io::Error },
}

/// The lock of one session, released on drop (the lock file is removed).
#[derive(Debug)]
pub struct OwnerLock {
    path: PathBuf,
    file: Option<Flock<File>>,
}

/// True for ids that can name a file: 1 to 128 of `[A-Za-z0-9._-]`, not starting with a dot.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl OwnerLock {
    /// Take the lock of session `id` in `session_dir` for `owner`, without waiting.
    pub fn acquire(session_dir: &Path, id: &str, owner: &str) -> Result<OwnerLock, LockError> {
        let io = |source| LockError::Io { id: id.to_string(), source };
        if !valid_session_id(id) {
            return Err(io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a valid session id")));
        }
        let dir = session_dir.join(OWNERS_DIR);
        std::fs::create_dir_all(&dir).map_err(io)?;
        let path = dir.join(format!("{id}.lock"));
        // A previous owner removes the file when it lets go: if it did so
        // between our open and our lock, we hold a lock on a deleted file. Retry.
        for _ in 0..8 {
            let file =
                OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
            let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => locked,
                Err((mut file, Errno::EWOULDBLOCK)) => {
                    let mut owner = String::new();
                    let _ = file.read_to_string(&mut owner);
                    let owner = owner.trim();
                    let owner = if owner.is_empty() { "another worker" } else { owner };
                    return Err(LockError::OwnedElsewhere { id: id.to_string(), owner: owner.to_string() });
                }
                Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
            };
            let same = match (std::fs::metadata(&path), locked.metadata()) {
                (Ok(on_disk), Ok(held)) => on_disk.ino() == held.ino() && on_disk.dev() == held.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            locked.set_len(0).map_err(io)?;
            locked.rewind().map_err(io)?;
            locked.write_all(owner.as_bytes()).map_err(io)?;
            return Ok(OwnerLock { path, file: Some(locked) });
        }
        Err(io(std::io::Error::other("the lock file keeps being replaced")))
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        // Remove the file while still holding the lock, then let go.
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_owner_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = OwnerLock::acquire(dir.path(), "abc", "worker-a").unwrap();
        match OwnerLock::acquire(dir.path(), "abc", "worker-b") {
            Err(LockError::OwnedElsewhere { owner, .. }) => assert_eq!(owner, "worker-a"),
            other => panic!("{other:?}"),
        }
        let other = OwnerLock::acquire(dir.path(), "other", "worker-b").unwrap();
        drop(first);
        assert!(!dir.path().join(OWNERS_DIR).join("abc.lock").exists());
        let again = OwnerLock::acquire(dir.path(), "abc", "worker-b").unwrap();
        drop((again, other));
    }

    #[test]
    fn ids_that_cannot_name_a_file_are_refused() {
        for id in ["", "../x", ".hidden", "a/b", "a b", &"x".repeat(129)] {
            assert!(!valid_session_id(id), "{id}");
        }
        assert!(valid_session_id("0190e2a4-7b1c-7def-8000-0123456789ab"));
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(OwnerLock::acquire(dir.path(), "../x", "w"), Err(LockError::Io { .. })));
    }
}
