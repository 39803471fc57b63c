//! The MCP tools and pi's built-in `codemode` / `tool_search` in the
//! session's active tools, as pi 1.6.0 keeps them: an MCP server's tools
//! that are declared to the model (`direct`) become active as they register
//! (once: one deactivated since stays inactive), pi's MCP extension
//! activates `codemode` (a server of `codemode` exposure) and `tool_search`
//! (one of `deferred` exposure) at `session_start` and when the registered
//! servers change, and `setActiveTools()` may name any MCP tool that is not
//! `hidden` (the model is then offered it, whatever its exposure) or leave
//! any of them out. The turn declares them in that order
//! ([`crate::mcp::turn::turn_tools`]).

use super::Agent;
use crate::mcp::Exposure;
use crate::mcp::search::TOOL_SEARCH;
use crate::mcp::turn::CODEMODE;

impl Agent {
    /// Bring the active tools up to date with MCP, once the session's
    /// start-up is over (as in pi, whose MCP extension starts at
    /// `session_start`, after the other extensions' handlers): the first
    /// time (and after each later `session_start`: a reload, a new, resumed
    /// or forked session) `codemode` / `tool_search` as the servers'
    /// exposures want them, then the `direct` tools registered since.
    pub(super) fn sync_mcp_activation(&mut self) {
        if !self.toolbox.mcp_activation_begun() && self.ext.gated() {
            return;
        }
        let mut changed = self.toolbox.begin_mcp_activation() && self.activate_discovery_tools();
        let mcp = self.mcp.clone();
        let direct = mcp
            .tools()
            .into_iter()
            .filter(|t| t.exposure == Exposure::Direct && mcp.may_declare(t.tool.name()))
            .map(|t| t.tool.name().to_string());
        changed |= self.toolbox.activate_registered(direct);
        // Restored tools made per model call (MCP's) are active once registered.
        changed |= self.toolbox.activate_pending(&self.activatable_tools());
        // A server's tools registering (`hidden` ones too) activates the
        // tools `--tools` names again.
        if self.toolbox.mcp_registered(mcp.registered_tool_names().into_iter()) {
            changed |= self.reactivate_named_tools();
        }
        if changed {
            self.ext.tools_changed();
        }
    }

    /// pi's MCP extension's `ensureDiscoveryActive`: `codemode` when a server
    /// wants it (and `autoEnableCodemode` is not false), `tool_search` when
    /// one is `deferred`, if the session has that tool. Whether any was activated.
    pub(super) fn activate_discovery_tools(&mut self) -> bool {
        let tools = self.factory_tools();
        let wanted = [(CODEMODE, self.mcp.codemode_wanted()), (TOOL_SEARCH, self.mcp.tool_search_wanted())];
        let names: Vec<&str> =
            wanted.into_iter().filter(|(name, on)| *on && tools.contains(name)).map(|(name, _)| name).collect();
        self.toolbox.activate(&names)
    }

    /// The tools `setActiveTools()` may name besides the registry's:
    /// `codemode` and `tool_search` ([`Agent::factory_tools`]) and the MCP
    /// servers' tools that are not `hidden` (with a `--tools` list, one it
    /// does not name only when not `direct` and `tool_search` is there, as pi's
    /// `_isActivatable`).
    pub(super) fn activatable_tools(&self) -> Vec<String> {
        // pi: one `--tools` does not name is reachable from `tool_search` only.
        let searchable = self.factory_tools().contains(&TOOL_SEARCH);
        let mcp = self.mcp.tools().into_iter().filter(|t| match t.exposure {
            Exposure::Hidden => false,
            Exposure::Direct => self.mcp.may_declare(t.tool.name()),
            _ => searchable || self.mcp.may_declare(t.tool.name()),
        });
        let factory = self.factory_tools().into_iter().map(str::to_string);
        factory.chain(mcp.map(|t| t.tool.name().to_string())).collect()
    }
}
