//! Where an ACP connection's sessions come from: a [`SessionHost`] creates
//! a session, looks one up by id or copies one (`session/new`,
//! `session/load`, `session/resume`, `session/fork`), lists and deletes the
//! stored ones (`session/list`, `session/delete`) and hears when the
//! connection is done with one (`session/close`, the connection's end). On stdio the host spawns one
//! agent per session in this process; a registry serving many connections
//! (`pi serve`) can implement the same interface, attaching a connection to
//! a session that is already live.

use std::path::PathBuf;

use pi_core::agent::{AgentHandle, Output};
use pi_core::client::ClientSetup;
use pi_core::mcp::ServerConfig;
use tokio::sync::mpsc;

/// Agents one connection runs at once, unless the host says otherwise.
pub const DEFAULT_MAX_LIVE_SESSIONS: usize = 32;
/// How long a session stays idle before it sleeps, unless the host says otherwise.
pub const DEFAULT_IDLE_SLEEP: std::time::Duration = std::time::Duration::from_secs(600);

/// Which session to start.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStart {
    /// A new session with this id.
    New { session_id: String },
    /// The stored session with this id (`session/load`, `session/resume`).
    Load { session_id: String },
    /// A new session with this id holding a copy of the stored session
    /// `source`'s history (`session/fork`).
    Fork { source: String, session_id: String },
}

impl SessionStart {
    /// The id of the session this starts.
    pub fn session_id(&self) -> &str {
        match self {
            SessionStart::New { session_id }
            | SessionStart::Load { session_id }
            | SessionStart::Fork { session_id, .. } => session_id,
        }
    }
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

    /// Sessions whose agents one connection runs at once: a new session
    /// beyond it puts the least recently used idle one to sleep.
    fn max_live_sessions(&self) -> usize {
        DEFAULT_MAX_LIVE_SESSIONS
    }

    /// How long a session may stay idle before its agent is shut down (it
    /// wakes on the next request for it); None: never.
    fn idle_sleep(&self) -> Option<std::time::Duration> {
        Some(DEFAULT_IDLE_SLEEP)
    }

    /// Whether this host copies sessions ([`SessionStart::Fork`]) and
    /// deletes them ([`SessionHost::delete`]): announced at `initialize`.
    fn forks_and_deletes(&self) -> bool {
        false
    }

    /// Delete the stored session `session_id` (the connection has closed it
    /// first if it was open); `NotFound` when there is none.
    fn delete(&mut self, session_id: &str) -> Result<(), OpenError> {
        Err(OpenError::Invalid(format!("session {session_id} cannot be deleted here")))
    }

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
