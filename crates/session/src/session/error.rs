//! `SessionError`: everything the session store can fail with, worded like pi where pi has a text.

use std::path::PathBuf;

use crate::error::{CoreError, ErrorKind};

/// An error of the session store.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading or writing a session file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not empty but its first readable line is not a session header.
    #[error("Session file is not a valid pi session: {}", .0.display())]
    NotASession(PathBuf),
    /// `get_entries` cursor that names no entry (pi's RPC text).
    #[error("Entry not found: {0}")]
    CursorNotFound(String),
    /// An entry id that does not exist (pi's `SessionManager` text).
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    /// `fork` on an entry that is not a user message.
    #[error("Invalid entry ID for forking")]
    InvalidForkEntry,
    /// `fork`/`clone` of a persisted session whose file was never written.
    #[error("This session has not been saved yet. Send a message before cloning or forking it.")]
    NotSaved,
    /// `clone` with no current leaf.
    #[error("Cannot clone session: no current entry selected")]
    NoLeaf,
    /// A context edit that pi would refuse.
    #[error("{0}")]
    InvalidContextEdit(String),
    /// No session matches a `--session`/resume reference.
    #[error("No session found matching '{0}'")]
    NoSessionFound(String),
    /// A session id prefix matches several sessions.
    #[error("Session id prefix '{reference}' is ambiguous: {}", candidates.join(", "))]
    AmbiguousSession {
        reference: String,
        /// `"<id> (<path>)"` for each match.
        candidates: Vec<String>,
    },
    /// An entry could not be serialized (should not happen for valid JSON values).
    #[error("cannot serialize session entry: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl SessionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SessionError::Io { path: path.into(), source }
    }

    /// Protocol-neutral classification.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::CursorNotFound(_) | SessionError::EntryNotFound(_) | SessionError::NoSessionFound(_) => {
                ErrorKind::NotFound
            }
            SessionError::InvalidForkEntry
            | SessionError::NotSaved
            | SessionError::NoLeaf
            | SessionError::InvalidContextEdit(_)
            | SessionError::AmbiguousSession { .. }
            | SessionError::NotASession(_) => ErrorKind::InvalidParams,
            SessionError::Io { .. } | SessionError::Serialize(_) => ErrorKind::Internal,
        }
    }
}

impl From<SessionError> for CoreError {
    fn from(e: SessionError) -> Self {
        let field = match &e {
            SessionError::CursorNotFound(_) => Some("since"),
            SessionError::InvalidForkEntry => Some("entryId"),
            _ => None,
        };
        let mut core = CoreError::new(e.kind(), e.to_string());
        core.field = field.map(str::to_string);
        core
    }
}
