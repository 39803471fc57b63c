//! The ACP sessions of a stdio connection: each `session/new`,
//! `session/load`, `session/resume` or `session/fork` starts its own agent in
//! this process, configured from the command line and the settings of the
//! session's `cwd`. A new session's file is written at once (header only), so
//! that it can be loaded before its first prompt; `session/delete` removes
//! the file. `PI_ACP_MAX_SESSIONS` and `PI_ACP_IDLE_SECONDS` change how many
//! agents one connection runs and how long an idle one lives.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_acp_agent::host::{DEFAULT_IDLE_SLEEP, DEFAULT_MAX_LIVE_SESSIONS};
use pi_acp_agent::{OpenError, Opened, SessionHost, SessionSpec, SessionStart, StoredSession, stored_in};
use pi_core::agent::SessionStart as CoreStart;
use pi_core::auth::catalog_refreshes::CatalogRefreshes;
use pi_core::client::ApprovalPolicy;
use pi_core::config::{Settings, default_agent_dir};
use pi_core::session::{Session, find_by_id, session_dirs};

use crate::args::Args;
use crate::setup::{build_agent_config_in, session_dir_in};

/// Starts one agent per ACP session, from the command line's flags.
pub struct StdioHost {
    args: Arc<Args>,
    /// The process's catalog refreshes, asked by each session once its extensions loaded.
    catalogs: Option<Arc<CatalogRefreshes>>,
}

impl StdioHost {
    pub fn new(args: Arc<Args>, catalogs: Option<Arc<CatalogRefreshes>>) -> Self {
        StdioHost { args, catalogs }
    }
}

/// The stored session file with this id: in the session directory of `cwd` first, then in every project's.
fn find_stored(session_dir: &Path, id: &str) -> Option<PathBuf> {
    find_by_id(session_dir, id).or_else(|| session_dirs(&default_agent_dir()).iter().find_map(|d| find_by_id(d, id)))
}

impl SessionHost for StdioHost {
    fn open(&mut self, spec: SessionSpec) -> impl std::future::Future<Output = Result<Opened, OpenError>> + Send {
        let (args, catalogs) = (self.args.clone(), self.catalogs.clone());
        async move {
            let mut config =
                build_agent_config_in(&args, spec.cwd.clone()).map_err(|e| OpenError::Invalid(format!("{e:#}")))?;
            let not_found = |id: &str| OpenError::NotFound(format!("no stored session has the id {id}"));
            config.session = match spec.start {
                SessionStart::New { .. } if args.no_session => CoreStart::InMemory,
                SessionStart::New { session_id } => {
                    let written = Session::write_empty(&config.session_dir, &spec.cwd, &session_id);
                    CoreStart::Open(written.map_err(|e| OpenError::Failed(e.to_string()))?)
                }
                SessionStart::Load { session_id } => match find_stored(&config.session_dir, &session_id) {
                    Some(path) => CoreStart::Open(path),
                    None => return Err(not_found(&session_id)),
                },
                SessionStart::Fork { .. } if args.no_session => {
                    return Err(OpenError::Invalid("sessions are not stored (--no-session): nothing to fork".into()));
                }
                SessionStart::Fork { source, session_id } => {
                    let from = find_stored(&config.session_dir, &source).ok_or_else(|| not_found(&source))?;
                    let forked = Session::fork_file(&from, &config.session_dir, &spec.cwd, Some(&session_id))
                        .map_err(|e| OpenError::Failed(e.to_string()))?;
                    match forked.0.file_path() {
                        Some(path) => CoreStart::Open(path.to_path_buf()),
                        None => return Err(OpenError::Failed("the forked session has no file".into())),
                    }
                }
            };
            config.mcp.config.servers.extend(spec.mcp_servers);
            config.client = spec.client;
            config.catalog_refreshes = catalogs;
            let (handle, outputs) = pi_core::agent::spawn(config).map_err(|e| OpenError::Failed(e.to_string()))?;
            Ok(Opened { handle, outputs })
        }
    }

    fn stored(&self, cwd: Option<&Path>) -> Vec<StoredSession> {
        let dirs = match cwd {
            Some(cwd) => vec![session_dir_in(&self.args, cwd).0],
            None => match std::env::current_dir().map(|here| session_dir_in(&self.args, &here)) {
                Ok((chosen, true)) => vec![chosen],
                _ => session_dirs(&default_agent_dir()),
            },
        };
        stored_in(&dirs, cwd)
    }

    fn forks_and_deletes(&self) -> bool {
        true
    }

    fn delete(&mut self, session_id: &str) -> Result<(), OpenError> {
        let here = std::env::current_dir().map(|cwd| session_dir_in(&self.args, &cwd).0).unwrap_or_default();
        let path = find_stored(&here, session_id)
            .ok_or_else(|| OpenError::NotFound(format!("no stored session has the id {session_id}")))?;
        std::fs::remove_file(&path).map_err(|e| OpenError::Failed(format!("cannot delete {}: {e}", path.display())))
    }

    fn max_live_sessions(&self) -> usize {
        env_number("PI_ACP_MAX_SESSIONS").map_or(DEFAULT_MAX_LIVE_SESSIONS, |n| n as usize)
    }

    fn idle_sleep(&self) -> Option<std::time::Duration> {
        match env_number("PI_ACP_IDLE_SECONDS") {
            Some(0) => None,
            Some(n) => Some(std::time::Duration::from_secs(n)),
            None => Some(DEFAULT_IDLE_SLEEP),
        }
    }

    fn approval_policy(&self, cwd: &Path) -> ApprovalPolicy {
        // ACP asks before changes unless `toolApproval` says otherwise.
        match Settings::load(&default_agent_dir(), cwd) {
            Ok(settings) => settings.tool_approval.policy(true),
            Err(_) => ApprovalPolicy::ask_before_changes(),
        }
    }
}

/// A whole number from the environment.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}
