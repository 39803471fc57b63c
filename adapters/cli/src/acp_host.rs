//! The ACP sessions of a stdio connection: each `session/new` or
//! `session/load` starts its own agent in this process, configured from the
//! command line and the settings of the session's `cwd`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_acp_agent::{OpenError, Opened, SessionHost, SessionSpec, SessionStart, StoredSession, stored_in};
use pi_core::agent::SessionStart as CoreStart;
use pi_core::client::ApprovalPolicy;
use pi_core::config::{Settings, default_agent_dir};
use pi_core::session::{find_by_id, session_dirs};

use crate::args::Args;
use crate::setup::{build_agent_config_in, session_dir_in};

/// Starts one agent per ACP session, from the command line's flags.
pub struct StdioHost {
    args: Arc<Args>,
}

impl StdioHost {
    pub fn new(args: Arc<Args>) -> Self {
        StdioHost { args }
    }
}

/// The stored session file with this id: in the session directory of `cwd` first, then in every project's.
fn find_stored(session_dir: &Path, id: &str) -> Option<PathBuf> {
    find_by_id(session_dir, id).or_else(|| session_dirs(&default_agent_dir()).iter().find_map(|d| find_by_id(d, id)))
}

impl SessionHost for StdioHost {
    fn open(&mut self, spec: SessionSpec) -> impl std::future::Future<Output = Result<Opened, OpenError>> + Send {
        let args = self.args.clone();
        async move {
            let mut config =
                build_agent_config_in(&args, spec.cwd.clone()).map_err(|e| OpenError::Invalid(format!("{e:#}")))?;
            config.session = match spec.start {
                SessionStart::New { .. } if args.no_session => CoreStart::InMemory,
                SessionStart::New { session_id } => CoreStart::WithId(session_id),
                SessionStart::Load { session_id } => match find_stored(&config.session_dir, &session_id) {
                    Some(path) => CoreStart::Open(path),
                    None => return Err(OpenError::NotFound(format!("no stored session has the id {session_id}"))),
                },
            };
            config.mcp.config.servers.extend(spec.mcp_servers);
            config.client = spec.client;
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

    fn approval_policy(&self, cwd: &Path) -> ApprovalPolicy {
        // ACP asks before changes unless `toolApproval` says otherwise.
        match Settings::load(&default_agent_dir(), cwd) {
            Ok(settings) => settings.tool_approval.policy(true),
            Err(_) => ApprovalPolicy::ask_before_changes(),
        }
    }
}
