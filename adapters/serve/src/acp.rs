//! ACP connections under `pi serve`: the ACP crate's [`SessionHost`] backed
//! by the registry. One ACP connection may hold several sessions; each is
//! attached to its session's hub with a queue of its own (its own
//! connection number), and two relay tasks stand between the ACP session
//! task and the hub: ops go to the shared actor with their tags marked for
//! this attachment, the hub's queue comes back as the session's outputs.
//!
//! A session's agent is shared with every other connection attached to it,
//! so the ACP session's `Shutdown` (its `session/close`, the connection's
//! end) detaches instead of ending the agent; the hub unloads it once idle.

use std::path::Path;
use std::sync::Arc;

use pi_acp_agent::{OpenError, Opened, SessionHost, SessionSpec, SessionStart, StoredSession, stored_in};
use pi_core::agent::{AgentHandle, Output};
use pi_core::error::{CoreError, ErrorKind};
use pi_core::op::{Op, Reply};
use tokio::sync::mpsc;

use crate::hub::{ConnHandle, Hub, Kick, Queued, actor_tag};
use crate::registry::Registry;

/// Ops an ACP session task may queue before it waits.
const OP_RELAY_CAPACITY: usize = 64;

/// The sessions of one ACP connection, from the registry.
pub struct RegistryHost {
    registry: Arc<Registry>,
    queue_messages: usize,
    kick: Kick,
}

impl RegistryHost {
    /// `queue_messages`: each attachment's queue; `kick` disconnects the
    /// connection when a queue overflows (its client does not read).
    pub fn new(registry: Arc<Registry>, queue_messages: usize, kick: Kick) -> Self {
        RegistryHost { registry, queue_messages, kick }
    }
}

fn open_error(e: CoreError) -> OpenError {
    match e.kind {
        ErrorKind::NotFound => OpenError::NotFound(e.message),
        ErrorKind::InvalidParams => OpenError::Invalid(e.message),
        _ => OpenError::Failed(e.message),
    }
}

impl SessionHost for RegistryHost {
    fn open(&mut self, spec: SessionSpec) -> impl std::future::Future<Output = Result<Opened, OpenError>> + Send {
        let registry = self.registry.clone();
        let queue_messages = self.queue_messages;
        let kick = self.kick.clone();
        async move {
            let hub = match spec.start {
                SessionStart::New { session_id } => registry
                    .create_with(Some(session_id), None, |config| {
                        config.cwd = spec.cwd;
                        config.mcp.config.servers.extend(spec.mcp_servers);
                        config.client = spec.client;
                    })
                    .await
                    .map_err(open_error)?,
                SessionStart::Load { session_id } => registry.open(&session_id).await.map_err(open_error)?,
                // Not announced by this host (`forks_and_deletes` is false).
                SessionStart::Fork { .. } => {
                    return Err(OpenError::Invalid("session/fork is not available under pi serve".into()));
                }
            };
            let (queue, queued) = mpsc::channel(queue_messages.max(1));
            let conn = ConnHandle { id: registry.next_conn_id(), queue, kick };
            let conn_id = conn.id;
            hub.attach(conn, None, None).await.map_err(|e| OpenError::Failed(e.to_string()))?;
            let (handle, ops) = AgentHandle::relay(OP_RELAY_CAPACITY);
            let (out, outputs) = mpsc::channel(queue_messages.max(1));
            tokio::spawn(relay_ops(hub.clone(), conn_id, ops, out.downgrade()));
            tokio::spawn(relay_outputs(queued, out));
            Ok(Opened { handle, outputs })
        }
    }

    fn stored(&self, cwd: Option<&Path>) -> Vec<StoredSession> {
        stored_in(&[self.registry.session_dir().to_path_buf()], cwd)
    }
}

/// The session task's ops to the shared actor, tagged for this attachment;
/// its `Shutdown` detaches (answered `Ack`) and ends the relay.
async fn relay_ops(
    hub: Arc<Hub>,
    conn: crate::hub::ConnId,
    mut ops: pi_core::agent::OpReceiver,
    out: mpsc::WeakSender<Output>,
) {
    while let Some((tag, op)) = ops.recv().await {
        if let Op::Shutdown { .. } = op {
            let out = out.upgrade();
            hub.detach(conn).await;
            if let (Some(out), Some(tag)) = (out, tag) {
                let _ = out.send(Output::Reply { tag, result: Ok(Reply::Ack) }).await;
            }
            return;
        }
        if hub.agent().submit(tag.map(|t| actor_tag(conn, t)), op).await.is_err()
            && let (Some(out), Some(tag)) = (out.upgrade(), tag)
        {
            let _ = out.send(Output::Reply { tag, result: Err(CoreError::internal("The session has ended")) }).await;
        }
    }
    hub.detach(conn).await;
}

/// The hub's queue for this attachment as the session task's outputs,
/// until the hub lets go of it (detached, or the session ended).
async fn relay_outputs(mut queued: mpsc::Receiver<Queued>, out: mpsc::Sender<Output>) {
    while let Some(item) = queued.recv().await {
        match item.delivered() {
            Ok(delivered) => {
                if out.send(delivered.output).await.is_err() {
                    return;
                }
            }
            Err(reason) => {
                tracing::debug!("an ACP session's hub let go: {reason}");
                return;
            }
        }
    }
}
