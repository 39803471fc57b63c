//! pi 1.6.0 with a `--tools` list: every change of the tool registry once
//! the session started (an MCP server's tools registering, an extension
//! registering a tool) activates the tools the list names again, even after
//! a `session_start` handler or `setActiveTools()` deactivated them (pi's
//! `_refreshToolRegistry`); they follow the active tools in registry order.

use super::Agent;
use crate::mcp::Exposure;

impl Agent {
    /// Activate the tools `--tools` names that are declared to the model and
    /// not active. Whether any was.
    pub(super) fn reactivate_named_tools(&mut self) -> bool {
        if !self.ext.has_tool_allowlist() {
            return false;
        }
        let own = self.toolbox.all().filter(|t| matches!(t.exposure(), "direct" | "model-only"));
        let mut names: Vec<String> = own.map(|t| t.name().to_string()).collect();
        names.extend(self.factory_tools().into_iter().map(str::to_string));
        let mcp = self.mcp.tools();
        names.extend(mcp.iter().filter(|t| t.exposure == Exposure::Direct).map(|t| t.tool.name().to_string()));
        let named: Vec<&str> = names.iter().map(String::as_str).filter(|name| self.ext.tool_named(name)).collect();
        self.toolbox.activate(&named)
    }
}
