//! Session ops an extension command asks for (pi's command context:
//! `ctx.newSession()`, `ctx.fork()`, `ctx.switchSession()`; `ctx.reload()`
//! (`reload.rs`) and `ctx.navigateTree()` are served apart): each becomes the
//! op a client would send, with a tag of its own, so that it goes through the
//! same route (the `session_before_*` hooks, waiting for a run) and its
//! answer, `{cancelled}` or an error, goes back to the extension instead of
//! the client.

use serde_json::{Value, json};

use super::Agent;
use crate::agent::extension_session_op_state::ExtReply;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use crate::agent::state::Pending;
use crate::error::CoreError;
use crate::op::{Op, Reply};

/// What an extension sees of a session op's answer.
pub(super) fn outcome(result: Result<Reply, CoreError>) -> Result<Value, String> {
    match result {
        Ok(Reply::Switched(s)) => Ok(json!({"cancelled": s.cancelled})),
        Ok(Reply::Fork(f)) => Ok(json!({"cancelled": f.cancelled})),
        Ok(_) => Ok(json!({"cancelled": false})),
        Err(e) => Err(e.message),
    }
}

/// Whether the op replaced the session (its answer waits for the new runtime's start).
pub(super) fn replaced(result: &Result<Reply, CoreError>) -> bool {
    match result {
        Ok(Reply::Switched(s)) => !s.cancelled,
        Ok(Reply::Fork(f)) => !f.cancelled,
        _ => false,
    }
}

/// The op of a `sessionOp` request, and for a fork at an entry below the
/// leaf, that entry (the op is then a clone of the path up to it).
fn session_op(agent: &Agent, p: &Value) -> Result<(Op, Option<String>), String> {
    let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_string);
    match p.get("action").and_then(Value::as_str) {
        Some("new") => Ok((Op::NewSession { parent_session: text("parentSession") }, None)),
        Some("switch") => {
            let session_path = text("sessionPath").ok_or("\"sessionPath\" is required")?;
            Ok((Op::SwitchSession { session_path, after_seq: None }, None))
        }
        Some("fork") => {
            let entry_id = text("entryId").ok_or("\"entryId\" is required")?;
            if text("position").as_deref() != Some("at") {
                return Ok((Op::Fork { entry_id }, None));
            }
            // Forking at the leaf is a clone of the current branch; pi's fork
            // at another entry copies the path from the root to it.
            if agent.session.record().leaf_id() == Some(entry_id.as_str()) {
                return Ok((Op::Clone, None));
            }
            if agent.session.record().get(&entry_id).is_none() {
                return Err("Invalid entry ID for forking".to_string());
            }
            Ok((Op::Clone, Some(entry_id)))
        }
        other => Err(format!("unknown session op: {}", other.unwrap_or("(none)"))),
    }
}

impl Agent {
    /// Run a command's session op for extension `id`; `reply` gets `{cancelled}` once it is done.
    pub(super) async fn extension_session_op(&mut self, id: usize, p: Value, reply: ExtReply) {
        match p.get("action").and_then(Value::as_str) {
            // `newSession({setup})`: the setup wrote to the new session; the others may start.
            Some("setupDone") => return self.extension_setup_done(id, Some(reply)),
            Some("navigate") => return self.extension_navigate_tree(&p, reply).await,
            Some("reload") => return self.extension_reload(reply),
            _ => {}
        }
        match session_op(self, &p) {
            Ok((op, fork_at)) => {
                let tag = self.ext.session_op_replies().register(reply);
                if p.get("setup").and_then(Value::as_bool) == Some(true) && matches!(op, Op::NewSession { .. }) {
                    self.ext.session_op_replies().set_setup_caller(tag, id);
                }
                if let Some(entry_id) = fork_at {
                    self.ext.session_op_replies().set_fork_target(tag, entry_id);
                }
                Box::pin(self.handle_op(Pending::new(Some(tag), op))).await;
            }
            Err(error) => {
                let _ = reply.send(Err(error));
            }
        }
    }

    /// Extension `id`'s `newSession` setup is done (or it died): every
    /// extension gets the `session_start` held for the setup, in load order,
    /// each awaited as pi awaits them, then `resources_discover`; `reply`
    /// (the `setupDone` request) is answered after that.
    pub(super) fn extension_setup_done(&mut self, id: usize, reply: Option<ExtReply>) {
        let Some(payload) = self.ext.session_op_replies().release_start(id) else {
            if let Some(reply) = reply {
                let _ = reply.send(Ok(Value::Null));
            }
            return;
        };
        self.channels.withhold_events(false);
        // The UI first, as pi binds the new runtime to its mode before the `session_start`s.
        for ext in super::runtime_phases::renewable(self.ext.handle()) {
            ext.send(&json!({"type": "attachUi"}));
        }
        let extensions = self.ext.handle().subscribers("session_start");
        let internal = self.channels.internal();
        tokio::spawn(async move {
            super::session_restart::greet_in_turn(extensions, &payload).await;
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::ReplacementStarted { reply }))).await;
        });
    }
}
