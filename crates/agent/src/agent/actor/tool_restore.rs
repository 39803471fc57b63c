//! The active tools a branch's system messages recorded, restored as pi
//! 1.6.0's `_restoreToolsFromTranscript` restores them: when the settings
//! choose the tools (no `--tools` list, or only its `+name` / `-name`
//! edits), for the session pi-rpc starts with (`--session`, `--continue`, a
//! front end's load of a saved session) and for one it switches to, clones
//! or forks (`session_restart.rs`); whatever chose the tools, after an
//! extension's `navigateTree()` moved the leaf (without `--tools`' edits).
//! A recorded tool that is not registered yet is pending: active once it
//! registers, unless a run starts first.

use super::Agent;
use crate::mcp::Exposure;
use crate::message::AgentMessage;
use crate::tools::ToolRegistry;

impl Agent {
    /// The session pi-rpc starts with, before any extension registered:
    /// the loadout its branch recorded (the extensions' tools it names are
    /// pending until they register).
    pub(super) fn restore_tools_at_start(&mut self) {
        let Some(edits) = self.ext.default_tool_edits().map(<[String]>::to_vec) else { return };
        self.restore_recorded_tools(Vec::new(), edits, true);
    }

    /// A command's `navigateTree()` moved the leaf: the loadout the new
    /// branch recorded, with the tools registered since it recorded one
    /// after it (pi restores there whether or not `--tools` chose the tools).
    pub(super) fn restore_tools_after_navigation(&mut self) {
        let mut registered = self.extension_tools_active_by_default();
        let mcp = self.mcp.tools();
        let direct = mcp.iter().filter(|t| t.exposure == Exposure::Direct && self.mcp.may_declare(t.tool.name()));
        registered.extend(direct.map(|t| t.tool.name().to_string()));
        if self.restore_recorded_tools(registered, Vec::new(), false) {
            self.ext.tools_changed();
        }
    }

    /// The extensions' tools declared to the model and not `defaultActive:
    /// false`, in load order (pi's `_isActivatedOnRegistration`, whatever
    /// `--tools` says).
    fn extension_tools_active_by_default(&self) -> Vec<String> {
        let mut tools = Vec::new();
        self.for_each_owned_extension_tool(|spec| {
            let declared = matches!(spec.exposure.as_deref(), None | Some("direct" | "model-only"));
            if declared && spec.active && self.toolbox.knows(&spec.name) {
                tools.push(spec.name.clone());
            }
        });
        tools
    }

    /// pi's `_restoreToolsFromTranscript`: when the branch's system messages
    /// recorded a loadout, the active tools are that loadout, then the tools
    /// of `registered` (activated as they registered) and the client's that
    /// the branch never mentioned (registered since), with `--tools`' `+name`
    /// / `-name` `edits` applied. Without a recorded loadout the tools stay
    /// as they are (false).
    pub(super) fn restore_recorded_tools(
        &mut self,
        registered: Vec<String>,
        edits: Vec<String>,
        starting: bool,
    ) -> bool {
        let branch = self.session.record().branch();
        let system: Vec<&AgentMessage> = branch
            .iter()
            .filter_map(|entry| entry.message())
            .filter(|m| matches!(m, AgentMessage::System(_)))
            .collect();
        if system.is_empty() {
            return false;
        }
        let mut mentioned: Vec<String> = Vec::new();
        for message in &system {
            if let AgentMessage::System(s) = message {
                let added = s.tools_added.iter().flatten().map(|t| &t.name);
                for name in added.chain(s.tools_removed.iter().flatten().map(|t| &t.name)) {
                    if !mentioned.contains(name) {
                        mentioned.push(name.clone());
                    }
                }
            }
        }
        let builtin = ToolRegistry::builtin();
        let recorded = crate::system_message::replay(system.iter().copied()).tools.into_iter().map(|t| t.name);
        let unmentioned = registered
            .into_iter()
            .chain(self.toolbox.client_tool_names().iter().cloned())
            .filter(|name| !mentioned.contains(name) && !builtin.contains(name));
        let names: Vec<String> = recorded.chain(unmentioned).collect();
        let names =
            if edits.is_empty() { names } else { crate::config::settings::apply_tool_edits(Some(names), edits) };
        let known = self.activatable_tools();
        let registered_now: Vec<String> =
            names.iter().filter(|name| self.toolbox.knows(name) || known.contains(name)).cloned().collect();
        self.toolbox.restore(names, mentioned, starting, |name| registered_now.iter().any(|n| n == name));
        true
    }
}
