//! Write fencing: a session file shared by several processes (the workers of
//! a `pi serve` cluster) is written by its current owner only. The front end
//! hands the session a [`WriteFence`]; every write of the file first enters
//! it, and a refusal fails the write (memory is rolled back as for any
//! failed write), so an owner that lost the session cannot append to it.

use std::sync::Arc;

/// Decides whether this process may still write a session's file.
pub trait WriteFence: Send + Sync + std::fmt::Debug {
    /// Called before each write; the guard is held until the write is done.
    /// An error (why the write is refused) fails the write.
    fn enter(&self) -> Result<FenceGuard, String>;
}

/// Held while a session file is written (a lock, or nothing).
pub struct FenceGuard(#[allow(dead_code)] Option<Box<dyn Send>>);

impl std::fmt::Debug for FenceGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "FenceGuard(held)" } else { "FenceGuard(open)" })
    }
}

impl FenceGuard {
    /// A guard that holds nothing.
    pub fn open() -> FenceGuard {
        FenceGuard(None)
    }

    /// A guard holding `held` (e.g. a file lock) until the write is done.
    pub fn holding(held: impl Send + 'static) -> FenceGuard {
        FenceGuard(Some(Box::new(held)))
    }
}

/// The fence of a session, shared with its front end.
pub type SharedFence = Arc<dyn WriteFence>;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::session::Session;
    use crate::session::tests::{assistant, user};

    #[derive(Debug, Default)]
    struct Switch(AtomicBool);

    impl WriteFence for Switch {
        fn enter(&self) -> Result<FenceGuard, String> {
            if self.0.load(Ordering::SeqCst) { Err("taken over".into()) } else { Ok(FenceGuard::open()) }
        }
    }

    #[test]
    fn a_refused_write_fails_and_leaves_memory_and_file_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create_with_id(dir.path(), dir.path(), "fenced").unwrap();
        let fence = Arc::new(Switch::default());
        session.set_fence(Some(fence.clone()));
        session.append_message(user("first")).unwrap();
        session.append_message(assistant("reply")).unwrap();
        let path = session.file_path().unwrap().to_path_buf();
        let written = std::fs::read_to_string(&path).unwrap();
        fence.0.store(true, Ordering::SeqCst);
        let refused = session.append_message(user("second")).unwrap_err();
        assert!(refused.to_string().contains("taken over"), "{refused}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
        assert_eq!(session.context().messages.len(), 2);
    }
}
