//! The lock pi takes on `auth.json`, taken the same way so that pi and
//! pi-rpc exclude each other: pi 1.6.0 uses `proper-lockfile`, whose lock is
//! a directory `<real path of the file>.lock` made with `mkdir` (atomic).
//!
//! - The holder keeps the directory's mtime fresh while it holds the lock;
//!   a lock whose mtime is older than the stale time is taken over (its
//!   holder died). pi waits up to 30 s for a lock it finds held, and treats
//!   one older than 30 s (10 s for its synchronous reads) as stale, so the
//!   holder here touches the mtime every [`TOUCH_EVERY`], well inside both.
//! - Waiting is a retry loop with a growing, jittered delay (as pi's), up to
//!   [`LockOptions::wait`].
//! - Release removes the directory. A lock found gone or taken over while
//!   held is "compromised": [`FileLock::check`] reports it, and the writer
//!   then refuses to write.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;

/// How often a held lock's mtime is refreshed.
pub const TOUCH_EVERY: Duration = Duration::from_secs(2);

/// How long to wait for a lock and when a lock counts as stale.
#[derive(Debug, Clone, Copy)]
pub struct LockOptions {
    /// Longest wait for a lock held by someone else.
    pub wait: Duration,
    /// A lock directory whose mtime is older than this is taken over.
    pub stale: Duration,
}

impl Default for LockOptions {
    /// pi's asynchronous lock: 30 s of waiting, stale after 30 s.
    fn default() -> Self {
        LockOptions { wait: Duration::from_secs(30), stale: Duration::from_secs(30) }
    }
}

/// Why a lock could not be taken (or was lost).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path} is locked by another process (lock {lock} held for more than {waited:?})")]
    Busy { path: PathBuf, lock: PathBuf, waited: Duration },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the lock on {path} was lost while held (removed or taken over)")]
    Compromised { path: PathBuf },
}

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
    file: PathBuf,
    dir: PathBuf,
    compromised: Arc<AtomicBool>,
    toucher: Option<JoinHandle<()>>,
}

/// The lock directory of `file` (`<real path>.lock`); the file must exist.
pub fn lock_dir(file: &Path) -> std::io::Result<PathBuf> {
    let real = std::fs::canonicalize(file)?;
    let mut name = real.into_os_string();
    name.push(".lock");
    Ok(PathBuf::from(name))
}

fn mtime_of(path: &Path) -> std::io::Result<SystemTime> {
    std::fs::metadata(path)?.modified()
}

/// Set the lock directory's mtime (and atime) to now; returns what was set.
fn touch(dir: &Path) -> std::io::Result<SystemTime> {
    let now = SystemTime::now();
    let file = std::fs::File::open(dir)?;
    file.set_times(std::fs::FileTimes::new().set_accessed(now).set_modified(now))?;
    // What the file system kept (its precision may be coarser than `now`).
    mtime_of(dir)
}

impl FileLock {
    /// Take the lock on `file` (which must exist), waiting as pi does.
    pub async fn acquire(file: &Path, options: LockOptions) -> Result<FileLock, LockError> {
        let dir = lock_dir(file).map_err(|source| LockError::Io { path: file.to_path_buf(), source })?;
        FileLock::acquire_dir(file, dir, options).await
    }

    /// Take the lock directory `dir` for `file` (which need not exist), as
    /// `proper-lockfile` does with `realpath: false` (pi's MCP refresh locks).
    pub async fn acquire_dir(file: &Path, dir: PathBuf, options: LockOptions) -> Result<FileLock, LockError> {
        let io = |source| LockError::Io { path: file.to_path_buf(), source };
        let started = std::time::Instant::now();
        let mut retry = 0u32;
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(FileLock::held(file, dir)),
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(e)),
                Err(_) => {}
            }
            match mtime_of(&dir) {
                // Removed meanwhile: try again at once.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(e)),
                Ok(mtime) if is_stale(mtime, options.stale) => {
                    tracing::warn!("taking over the stale lock {}", dir.display());
                    match std::fs::remove_dir(&dir) {
                        Ok(()) => continue,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io(e)),
                    }
                }
                Ok(_) => {}
            }
            let waited = started.elapsed();
            if waited >= options.wait {
                return Err(LockError::Busy { path: file.to_path_buf(), lock: dir, waited });
            }
            // pi's backoff: 10 ms doubling up to 1 s, times a random 1–2.
            let base = (10u64 << retry.min(7)).min(1_000);
            retry += 1;
            let delay = Duration::from_millis(base + jitter(base)).min(options.wait - waited);
            tokio::time::sleep(delay).await;
        }
    }

    fn held(file: &Path, dir: PathBuf) -> FileLock {
        let compromised = Arc::new(AtomicBool::new(false));
        let mut mine = touch(&dir).ok();
        let toucher = tokio::runtime::Handle::try_current().ok().map(|rt| {
            let (dir, flag) = (dir.clone(), compromised.clone());
            rt.spawn(async move {
                loop {
                    tokio::time::sleep(TOUCH_EVERY).await;
                    // Still ours only if its mtime is the one we set last.
                    let ours = match (mtime_of(&dir), mine) {
                        (Ok(seen), Some(set)) => seen == set,
                        (Ok(_), None) => true,
                        (Err(_), _) => false,
                    };
                    if !ours {
                        flag.store(true, Ordering::SeqCst);
                        return;
                    }
                    mine = touch(&dir).ok();
                }
            })
        });
        FileLock { file: file.to_path_buf(), dir, compromised, toucher }
    }

    /// Fails when the lock was lost while held.
    pub fn check(&self) -> Result<(), LockError> {
        let gone = !self.dir.is_dir();
        if gone || self.compromised.load(Ordering::SeqCst) {
            return Err(LockError::Compromised { path: self.file.clone() });
        }
        Ok(())
    }

    /// The lock directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let Some(t) = self.toucher.take() {
            t.abort();
        }
        // A lock taken over by someone else is theirs now: leave it.
        if !self.compromised.load(Ordering::SeqCst) {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

fn is_stale(mtime: SystemTime, stale: Duration) -> bool {
    SystemTime::now().duration_since(mtime).is_ok_and(|age| age > stale)
}

/// A random amount in `0..=max` milliseconds.
fn jitter(max: u64) -> u64 {
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    u64::from_le_bytes(bytes) % (max + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_in(dir: &tempfile::TempDir) -> PathBuf {
        let path = dir.path().join("auth.json");
        std::fs::write(&path, "{}").unwrap();
        path
    }

    #[tokio::test]
    async fn the_lock_is_a_directory_beside_the_real_file_and_excludes() {
        let tmp = tempfile::tempdir().unwrap();
        let file = file_in(&tmp);
        let link = tmp.path().join("alias.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let held = FileLock::acquire(&link, LockOptions::default()).await.unwrap();
        let real = std::fs::canonicalize(&file).unwrap();
        assert_eq!(held.dir(), PathBuf::from(format!("{}.lock", real.display())));
        assert!(held.dir().is_dir());
        let quick = LockOptions { wait: Duration::from_millis(150), ..LockOptions::default() };
        let err = FileLock::acquire(&file, quick).await.unwrap_err();
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
        drop(held);
        let again = FileLock::acquire(&file, quick).await.unwrap();
        again.check().unwrap();
    }

    #[tokio::test]
    async fn a_waiter_gets_the_lock_when_it_is_released() {
        let tmp = tempfile::tempdir().unwrap();
        let file = file_in(&tmp);
        let held = FileLock::acquire(&file, LockOptions::default()).await.unwrap();
        let waiter = tokio::spawn({
            let file = file.clone();
            async move { FileLock::acquire(&file, LockOptions::default()).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished());
        drop(held);
        waiter.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_stale_lock_is_taken_over_and_its_holder_sees_it() {
        let tmp = tempfile::tempdir().unwrap();
        let file = file_in(&tmp);
        let dir = lock_dir(&file).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::open(&dir).unwrap().set_times(std::fs::FileTimes::new().set_modified(old)).unwrap();
        let taken = FileLock::acquire(&file, LockOptions::default()).await.unwrap();
        taken.check().unwrap();
        std::fs::remove_dir(taken.dir()).unwrap();
        assert!(matches!(taken.check(), Err(LockError::Compromised { .. })));
    }

    #[tokio::test]
    async fn a_missing_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = FileLock::acquire(&tmp.path().join("nope.json"), LockOptions::default()).await.unwrap_err();
        assert!(err.to_string().contains("nope.json"), "{err}");
    }
}
