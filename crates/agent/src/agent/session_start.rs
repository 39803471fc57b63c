//! The session an agent starts with: new, opened, continued, by id, fresh or forked (`SessionStart`),
//! and the command line's model choice applied to each session opened.

use super::{AgentConfig, SessionStart};
use crate::error::CoreError;
use crate::model::ThinkingLevel;
use crate::session::Session;

/// Opens the session the agent starts with, fenced for `pi serve --cluster` when a fence is configured.
pub(super) fn open_session(config: &AgentConfig) -> Result<Session, CoreError> {
    let mut session = open_session_unfenced(config)?;
    session.set_fence(config.session_fence.clone());
    Ok(session)
}

fn open_session_unfenced(config: &AgentConfig) -> Result<Session, CoreError> {
    let session = match &config.session {
        SessionStart::InMemory => Session::in_memory(&config.cwd),
        SessionStart::New => Session::create(&config.session_dir, &config.cwd, None)?,
        SessionStart::Open(path) => {
            let (session, warnings) = Session::open(path, &config.cwd)?;
            for w in warnings {
                tracing::warn!("{w}");
            }
            session
        }
        SessionStart::Continue => match crate::session::find_most_recent(&config.session_dir, Some(&config.cwd)) {
            Some(path) => {
                let (session, warnings) = Session::open(&path, &config.cwd)?;
                for w in warnings {
                    tracing::warn!("{w}");
                }
                session
            }
            None => Session::create(&config.session_dir, &config.cwd, None)?,
        },
        SessionStart::WithId(id) => match crate::session::find_by_id(&config.session_dir, id) {
            Some(path) => Session::open(&path, &config.cwd)?.0,
            None => {
                tracing::warn!("No project session found with id '{id}'; creating a new session with that id.");
                Session::create_with_id(&config.session_dir, &config.cwd, id)?
            }
        },
        SessionStart::Fresh { id, parent_session } => {
            Session::create_with_id(&config.session_dir, &config.cwd, id)?.with_parent(parent_session.clone())
        }
        SessionStart::Fork { source, id } => {
            if let Some(id) = id
                && crate::session::find_by_id(&config.session_dir, id).is_some()
            {
                return Err(CoreError::invalid("session", format!("Session already exists with id '{id}'")));
            }
            let (session, warnings) = Session::fork_file(source, &config.session_dir, &config.cwd, id.as_deref())?;
            for w in warnings {
                tracing::warn!("{w}");
            }
            session
        }
    };
    Ok(session)
}

/// What the command line (or JSON-RPC `initialize`) asked for; applied again
/// to each session the agent opens.
#[derive(Debug, Clone, Default)]
pub(super) struct StartupChoice {
    pub provider: Option<String>,
    pub pattern: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    /// `--api-key` was given: stored credentials do not choose the provider.
    pub inline_key: bool,
}
