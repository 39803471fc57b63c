//! What a replaced session (`new_session`, `switch_session`, `fork`,
//! `clone` and their extension forms) starts with, as pi 1.6.0's new
//! runtime: the start-up active tools again (the defaults or `--tools`, the
//! extensions' tools that activate as they register, the client's tools),
//! or, when the settings choose the tools, the loadout the branch's system
//! messages recorded (pi's `_restoreToolsFromTranscript`, in
//! `tool_restore.rs`); then the new extension runtime in pi's phases
//! (`runtime_phases.rs`), the extensions' `session_start` handlers last,
//! awaited in load order, and only after them MCP's activation of
//! `codemode` / `tool_search` and its `direct` tools, as pi's MCP
//! extension's handler runs last.

use serde_json::{Value, json};

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
        let mut tools = Vec::new();
        self.for_each_owned_extension_tool(|spec| {
            if !self.ext.tool_allowed(&spec.name) {
                return;
            }
            let (activates, named) = self.ext.activates_on_registration(spec);
            if activates {
                tools.push((spec.name.clone(), named));
            }
        });
        tools
    }

    /// Each live extension's tools that no earlier extension took, in load
    /// order.
    pub(super) fn for_each_owned_extension_tool(
        &self,
        mut visit: impl FnMut(&crate::extensions::protocol::ToolSpecWire),
    ) {
        let handle = self.ext.handle();
        for id in 0..handle.len() {
            let Some(registration) = handle.get(id).filter(|e| !e.is_dead()).and_then(|e| e.registration()) else {
                continue;
            };
            for spec in registration.tools.iter().filter(|spec| self.ext.tool_owner(&spec.name) == Some(id)) {
                visit(spec);
            }
        }
    }

    /// A replaced session's new extension runtime, in pi's phases
    /// ([`super::runtime_phases`]), the old instances' `session_shutdown`
    /// already run ([`Agent::switch_after_shutdown`]): every factory, the
    /// bind, then every `session_start` (`payload`), each awaited in load
    /// order; ops wait until then. With `setup` (the extension whose command
    /// called `newSession({setup})`), the setup runs once the runtime is
    /// bound and the `session_start`s wait for it ([`Agent::extension_setup_done`]).
    /// Then `resources_discover`, and MCP's activation at the next sync
    /// ([`Agent::sync_mcp_activation`]).
    pub(super) fn replace_runtime(&mut self, payload: Value, setup: Option<usize>) {
        let handle = self.ext.handle().clone();
        let renewed = super::runtime_phases::renewable(&handle);
        let awaiting = self.ext.replacing(&[]);
        let internal = self.channels.internal();
        tokio::spawn(async move {
            let runtime: Vec<_> = renewed.into_iter().map(|e| (e, false)).collect();
            super::runtime_phases::run_factories_and_bind(&runtime, &awaiting).await;
            if let Some(caller) = setup {
                // As pi's, the new runtime has no UI while the setup runs (`attachUi` at `setupDone`).
                for (ext, _) in &runtime {
                    ext.send(&json!({"type": "detachUi"}));
                }
                // Its setup runs now; the `session_start`s follow its `setupDone` (or its death).
                if let Some(caller) = handle.get(caller).filter(|e| !e.is_dead()) {
                    caller.send(&json!({"type": "setup"}));
                }
                return;
            }
            greet_in_turn(handle.subscribers("session_start"), &payload).await;
            let signal = ExtSignal::ReplacementStarted { reply: None };
            let _ = internal.send(Internal::Extension(Box::new(signal))).await;
        });
    }
}

/// `session_start` to each extension in load order, awaited where its
/// registration asks for it (a failure is reported by the host or as the
/// extension's death).
pub(super) async fn greet_in_turn(extensions: Vec<std::sync::Arc<crate::extensions::Extension>>, payload: &Value) {
    for ext in extensions {
        if ext.registration().is_some_and(|r| r.await_session_start) {
            let _ = ext.call("session_start", payload.clone(), None).await;
        } else {
            ext.send(&crate::extensions::protocol::event_message(payload.clone()));
        }
    }
}
