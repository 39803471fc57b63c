//! What a replaced session (`new_session`, `switch_session`, `fork`,
//! `clone` and their extension forms) starts with, as pi 1.6.0's new
//! runtime: the start-up active tools again (the defaults or `--tools`, the
//! extensions' tools that activate as they register, the client's tools),
//! or, when the settings choose the tools, the loadout the branch's system
//! messages recorded (pi's `_restoreToolsFromTranscript`, in
//! `tool_restore.rs`); then the
//! extensions' `session_start` handlers, awaited in load order, and only
//! after them MCP's activation of `codemode` / `tool_search` and its
//! `direct` tools, as pi's MCP extension's handler runs last.

use serde_json::Value;

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;

impl Agent {
    /// Before a replaced session's `session_start`: the active tools a new
    /// runtime starts with.
    pub(super) fn restart_active_tools(&mut self) {
        let registered = self.tools_activated_on_registration();
        self.toolbox.restart(registered.clone(), self.ext.requested_tools());
        if let Some(edits) = self.ext.default_tool_edits().map(<[String]>::to_vec) {
            let registered = registered.into_iter().map(|(name, _)| name).collect();
            self.restore_recorded_tools(registered, edits, true);
        }
        self.ext.tools_changed();
    }

    /// The extensions' tools pi activates as they register, in load order
    /// (`true`: `--tools` names it).
    fn tools_activated_on_registration(&self) -> Vec<(String, bool)> {
        let handle = self.ext.handle();
        let mut tools = Vec::new();
        for id in 0..handle.len() {
            let Some(registration) = handle.get(id).filter(|e| !e.is_dead()).and_then(|e| e.registration()) else {
                continue;
            };
            for spec in &registration.tools {
                if self.ext.tool_owner(&spec.name) != Some(id) || !self.ext.tool_allowed(&spec.name) {
                    continue;
                }
                let (activates, named) = self.ext.activates_on_registration(spec);
                if activates {
                    tools.push((spec.name.clone(), named));
                }
            }
        }
        tools
    }

    /// A replaced session's `session_start` to every extension, each awaited
    /// in load order; ops wait until then. Then `resources_discover`, and
    /// MCP's activation at the next sync ([`Agent::sync_mcp_activation`]).
    pub(super) fn greet_replaced_session(&mut self, payload: Value) {
        self.ext.restart_started();
        let listeners = self.ext.handle().subscribers("session_start");
        let internal = self.channels.internal();
        let awaiting = self.ext.replacing(&listeners.iter().map(|e| e.id).collect::<Vec<_>>());
        tokio::spawn(async move {
            greet_in_turn(listeners, &payload, Some(&awaiting)).await;
            let _ = internal.send(Internal::Extension(Box::new(ExtSignal::ReplacementStarted))).await;
        });
    }
}

/// `session_start` to each extension in load order, awaited where its
/// registration asks for it (a failure is reported by the host or as the
/// extension's death); each one awaited leaves `awaiting`, the extensions
/// still waiting for their new instance.
pub(super) async fn greet_in_turn(
    extensions: Vec<std::sync::Arc<crate::extensions::Extension>>,
    payload: &Value,
    awaiting: Option<&std::sync::Mutex<Vec<usize>>>,
) {
    for ext in extensions {
        if ext.registration().is_some_and(|r| r.await_session_start) {
            let _ = ext.call("session_start", payload.clone(), None).await;
        } else {
            ext.send(&crate::extensions::protocol::event_message(payload.clone()));
        }
        if let Some(awaiting) = awaiting {
            crate::agent::extension_state::left_replacement(awaiting, ext.id);
        }
    }
}
