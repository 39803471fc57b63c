//! The sessions one ACP connection holds, and their bounds: at most
//! [`SessionHost::max_live_sessions`] agents at once; a stored session left
//! idle for [`SessionHost::idle_sleep`] (or the least recently used one, when
//! a new session needs the room) is put to sleep — its agent shut down, its
//! memory given back — and woken, from its file, by the next request for
//! it. Sleeping sessions cost a few hundred bytes each, and at most
//! [`MAX_ASLEEP`] are remembered (older ones are forgotten: the client can
//! still `session/load` them).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1 as acp;
use pi_core::agent::AgentHandle;
use pi_core::client::{ApprovalMode, ClientCapabilities, ClientSetup};
use pi_core::mcp::ServerConfig;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::host::{OpenError, SessionHost, SessionSpec, SessionStart};
use crate::outbox::Shared;
use crate::session::{Opening, Session, SessionCmd};
use crate::wire::{internal, invalid_params};

/// Sleeping sessions remembered per connection.
pub const MAX_ASLEEP: usize = 4096;
/// How long a session may take to answer whether it can sleep, or to end.
const SESSION_ANSWER: Duration = Duration::from_secs(5);
/// Commands queued for one session task.
const SESSION_QUEUE: usize = 64;

/// A session whose agent runs.
pub struct Live {
    pub cmds: mpsc::Sender<SessionCmd>,
    pub handle: AgentHandle,
    cwd: PathBuf,
    mcp_servers: Vec<ServerConfig>,
    last_used: Instant,
    /// Cancelled once the session task (and its agent) ended.
    ended: CancellationToken,
}

/// A session put to sleep: what waking it needs.
struct Asleep {
    cwd: PathBuf,
    mcp_servers: Vec<ServerConfig>,
    mode: ApprovalMode,
    since: Instant,
    ended: CancellationToken,
}

/// The sessions of one connection.
pub struct Sessions<H: SessionHost> {
    pub host: H,
    pub shared: std::sync::Arc<Shared>,
    pub capabilities: ClientCapabilities,
    live: HashMap<String, Live>,
    asleep: HashMap<String, Asleep>,
    pub tasks: JoinSet<()>,
}

/// A host's refusal as an ACP error.
pub fn open_error(e: OpenError) -> acp::Error {
    match e {
        OpenError::NotFound(what) => acp::Error::resource_not_found(None).data(Value::String(what)),
        OpenError::Invalid(why) => invalid_params(why),
        OpenError::Failed(why) => internal(why),
    }
}

impl<H: SessionHost> Sessions<H> {
    pub fn new(host: H, shared: std::sync::Arc<Shared>) -> Self {
        Sessions {
            host,
            shared,
            capabilities: ClientCapabilities::default(),
            live: HashMap::new(),
            asleep: HashMap::new(),
            tasks: JoinSet::new(),
        }
    }

    pub fn is_open(&self, session_id: &str) -> bool {
        self.live.contains_key(session_id) || self.asleep.contains_key(session_id)
    }

    /// Sessions whose agent runs, and sessions asleep.
    pub fn counts(&self) -> (usize, usize) {
        (self.live.len(), self.asleep.len())
    }

    pub fn live(&self) -> impl Iterator<Item = &Live> {
        self.live.values()
    }

    pub fn get_live(&self, session_id: &str) -> Option<&Live> {
        self.live.get(session_id)
    }

    /// Start a session's agent and its task, which answers `opening`.
    pub async fn open(
        &mut self,
        start: SessionStart,
        cwd: PathBuf,
        mcp_servers: Vec<ServerConfig>,
        opening: Opening,
    ) -> Result<(), acp::Error> {
        self.make_room().await?;
        let session_id = start.session_id().to_string();
        let client = ClientSetup {
            capabilities: self.capabilities,
            approval: self.host.approval_policy(&cwd),
            ..ClientSetup::default()
        };
        let spec = SessionSpec { start, cwd: cwd.clone(), mcp_servers: mcp_servers.clone(), client };
        let opened = self.host.open(spec).await.map_err(open_error)?;
        let (cmds, cmd_rx) = mpsc::channel(SESSION_QUEUE);
        let ended = CancellationToken::new();
        let live = Live {
            cmds,
            handle: opened.handle.clone(),
            cwd: cwd.clone(),
            mcp_servers,
            last_used: Instant::now(),
            ended: ended.clone(),
        };
        self.live.insert(session_id.clone(), live);
        let session = Session::new(session_id, cwd, opened.handle, opened.outputs, self.shared.clone());
        self.tasks.spawn(session.run(opening, cmd_rx, ended.drop_guard()));
        Ok(())
    }

    /// Below the bound of live sessions, putting the least recently used
    /// idle one to sleep if need be.
    async fn make_room(&mut self) -> Result<(), acp::Error> {
        let max = self.host.max_live_sessions().max(1);
        if self.live.len() < max {
            return Ok(());
        }
        let mut by_age: Vec<(Instant, String)> = self.live.iter().map(|(id, l)| (l.last_used, id.clone())).collect();
        by_age.sort();
        for (_, id) in by_age {
            if self.sleep(&id).await && self.live.len() < max {
                return Ok(());
            }
        }
        Err(internal(format!(
            "this connection already runs {max} sessions, all busy or kept in memory only: close one (session/close) first"
        )))
    }

    /// Put a live session to sleep if it is idle and stored.
    pub async fn sleep(&mut self, session_id: &str) -> bool {
        let Some(live) = self.live.get(session_id) else { return false };
        let (answer, asked) = oneshot::channel();
        if live.cmds.send(SessionCmd::Sleep { answer }).await.is_err() {
            return false;
        }
        let Ok(Ok(Some(mode))) = tokio::time::timeout(SESSION_ANSWER, asked).await else { return false };
        let Some(live) = self.live.remove(session_id) else { return false };
        self.host.closed(session_id);
        if self.asleep.len() >= MAX_ASLEEP
            && let Some(oldest) = self.asleep.iter().min_by_key(|(_, a)| a.since).map(|(id, _)| id.clone())
        {
            self.asleep.remove(&oldest);
        }
        let asleep =
            Asleep { cwd: live.cwd, mcp_servers: live.mcp_servers, mode, since: Instant::now(), ended: live.ended };
        self.asleep.insert(session_id.to_string(), asleep);
        true
    }

    /// Put every session idle for `idle` or longer to sleep.
    pub async fn sleep_idle(&mut self, idle: Duration) {
        let now = Instant::now();
        let idle: Vec<String> = self
            .live
            .iter()
            .filter(|(_, l)| now.duration_since(l.last_used) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            self.sleep(&id).await;
        }
    }

    /// Wake a sleeping session (its agent opened again from its file).
    async fn wake(&mut self, session_id: &str) -> Result<(), acp::Error> {
        let Some(asleep) = self.asleep.remove(session_id) else {
            return Err(acp::Error::session_not_found(session_id.to_string()));
        };
        // The old agent has finished writing before the new one reads.
        let _ = tokio::time::timeout(SESSION_ANSWER, asleep.ended.cancelled()).await;
        let start = SessionStart::Load { session_id: session_id.to_string() };
        self.open(start, asleep.cwd, asleep.mcp_servers, Opening::Wake(asleep.mode)).await
    }

    /// Send a command to a session, waking it first if it sleeps.
    pub async fn route(&mut self, session_id: &str, cmd: SessionCmd) -> Result<(), acp::Error> {
        if self.asleep.contains_key(session_id) {
            self.wake(session_id).await?;
        }
        match self.live.get_mut(session_id) {
            Some(live) => {
                live.last_used = Instant::now();
                live.cmds.send(cmd).await.map_err(|_| acp::Error::session_not_found(session_id.to_string()))
            }
            None => Err(acp::Error::session_not_found(session_id.to_string())),
        }
    }

    /// `session/close`: the session task answers once its agent is down.
    pub async fn close(&mut self, session_id: &str, id: Box<RawValue>) -> Result<(), acp::Error> {
        if self.asleep.remove(session_id).is_some() {
            self.shared.send(crate::wire::response(&id, &serde_json::json!({}))).await;
            return Ok(());
        }
        let Some(live) = self.live.remove(session_id) else {
            return Err(acp::Error::session_not_found(session_id.to_string()));
        };
        self.host.closed(session_id);
        if live.cmds.send(SessionCmd::Close { id }).await.is_err() {
            return Err(acp::Error::session_not_found(session_id.to_string()));
        }
        Ok(())
    }

    /// Stop a session (if open here) and wait for its agent to end.
    pub async fn stop(&mut self, session_id: &str) {
        let ended = if let Some(live) = self.live.remove(session_id) {
            self.host.closed(session_id);
            let _ = live.cmds.send(SessionCmd::Shutdown { abort: true }).await;
            live.ended
        } else if let Some(asleep) = self.asleep.remove(session_id) {
            asleep.ended
        } else {
            return;
        };
        let _ = tokio::time::timeout(SESSION_ANSWER, ended.cancelled()).await;
    }

    /// The connection ends: every live session is told, and handed back.
    pub async fn finish(&mut self, abort: bool) {
        for (session_id, live) in self.live.drain() {
            let _ = live.cmds.send(SessionCmd::Shutdown { abort }).await;
            self.host.closed(&session_id);
        }
        self.asleep.clear();
    }
}
