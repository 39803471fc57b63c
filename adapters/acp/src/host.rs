//! Where an ACP connection's sessions come from: a [`SessionHost`] creates
//! a session or looks one up by id (`session/new`, `session/load`), lists the
//! stored ones (`session/list`) and hears when the connection is done with
//! one (`session/close`, the connection's end). On stdio the host spawns one
//! agent per session in this process; a registry serving many connections
//! (`pi serve`) can implement the same interface, attaching a connection to
//! a session that is already live.

use std::path::PathBuf;

use pi_core::agent::{AgentHandle, Output};
use pi_core::client::ClientSetup;
use pi_core::mcp::ServerConfig;
use tokio::sync::mpsc;

/// Which session to start.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStart {
    /// A new session with this id.
    New { session_id: String },
    /// The stored session with this id (`session/load`).
    Load { session_id: String },
}

/// What `session/new` or `session/load` asks for.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub start: SessionStart,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// MCP servers the client hands over for this session.
    pub mcp_servers: Vec<ServerConfig>,
    /// What the client offers (files, terminals) and the approval policy.
    pub client: ClientSetup,
}

/// A running session's agent.
pub struct Opened {
    pub handle: AgentHandle,
    pub outputs: mpsc::Receiver<Output>,
}

/// A stored session (`session/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    pub session_id: String,
    pub cwd: PathBuf,
    pub title: Option<String>,
    /// ISO 8601 time of the last change.
    pub updated_at: Option<String>,
}

/// Why a session could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// No stored session has this id.
    NotFound(String),
    /// The request cannot be served as given (a bad cwd, an MCP server entry).
    Invalid(String),
    /// Something failed while starting the agent.
    Failed(String),
}

/// Starts sessions and knows the stored ones.
pub trait SessionHost: Send + 'static {
    /// Create a session, or look up a stored (or live) one by id, and give
    /// the connection its agent (MCP servers connect in the background).
    fn open(&mut self, spec: SessionSpec) -> impl std::future::Future<Output = Result<Opened, OpenError>> + Send;

    /// Stored sessions, newest first, of `cwd` (or of every project).
    fn stored(&self, cwd: Option<&std::path::Path>) -> Vec<StoredSession>;

    /// The connection is done with this session (closed, or the connection
    /// ended). The session's task has already asked its agent to shut down;
    /// a host that shares agents between connections detaches instead.
    fn closed(&mut self, session_id: &str) {
        let _ = session_id;
    }

    /// The policy ACP sessions start with: asking before `write`, `edit`
    /// and `bash`, unless the settings say otherwise.
    fn approval_policy(&self, cwd: &std::path::Path) -> pi_core::client::ApprovalPolicy {
        let _ = cwd;
        pi_core::client::ApprovalPolicy::ask_before_changes()
    }
}

/// The sessions stored in `dirs`, newest first, of `cwd` (or of any cwd):
/// what a host's [`SessionHost::stored`] lists.
pub fn stored_in(dirs: &[PathBuf], cwd: Option<&std::path::Path>) -> Vec<StoredSession> {
    let mut found: Vec<(std::time::SystemTime, StoredSession)> = Vec::new();
    for dir in dirs {
        let Ok(read) = std::fs::read_dir(dir) else { continue };
        for path in read.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
            let Some(header) = pi_core::session::read_session_header(&path) else { continue };
            if cwd.is_some_and(|c| std::path::Path::new(&header.cwd) != c) {
                continue;
            }
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            let updated_at =
                chrono::DateTime::<chrono::Utc>::from(modified).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let session = StoredSession {
                session_id: header.id,
                cwd: PathBuf::from(header.cwd),
                title: None,
                updated_at: Some(updated_at),
            };
            found.push((modified, session));
        }
    }
    found.sort_by_key(|s| std::cmp::Reverse(s.0));
    found.into_iter().map(|(_, s)| s).collect()
}
