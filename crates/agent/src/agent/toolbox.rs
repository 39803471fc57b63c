//! The agent's tools ([`Toolbox`]): every tool it knows (built-in, added by
//! an extension, run by the client), which of them the model gets and in
//! which order, and which ones the client runs itself.

use std::sync::Arc;

use crate::client::ClientToolSpec;
use crate::client::client_tool::ClientTool;
use crate::error::CoreError;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolRegistry};

/// Every tool the agent knows and the active ones.
pub(super) struct Toolbox {
    registry: ToolRegistry,
    /// The tools the model gets, in order (shared with the state snapshots
    /// that show them: a change after a snapshot copies the list).
    active: Arc<Vec<String>>,
    /// Names of the tools the client runs itself.
    client_tools: Vec<String>,
}

impl Toolbox {
    pub(super) fn new(registry: ToolRegistry, active: Vec<String>) -> Self {
        Toolbox { registry, active: Arc::new(active), client_tools: Vec::new() }
    }

    /// Every known tool, in registry order.
    pub(super) fn all(&self) -> impl Iterator<Item = Arc<dyn Tool>> + '_ {
        self.registry.names().filter_map(|name| self.registry.get(name))
    }

    /// The names of the active tools, in order.
    pub(super) fn active_names(&self) -> &[String] {
        &self.active
    }

    /// The names of the active tools, shared (no copy).
    pub(super) fn shared_active_names(&self) -> Arc<Vec<String>> {
        self.active.clone()
    }

    /// `name` is known and active.
    pub(super) fn is_active(&self, name: &str) -> bool {
        self.active.iter().any(|t| t == name) && self.registry.contains(name)
    }

    /// The active tools that are known, in order, with their names.
    pub(super) fn active(&self) -> impl Iterator<Item = (&String, Arc<dyn Tool>)> + '_ {
        self.active.iter().filter_map(|name| Some((name, self.registry.get(name)?)))
    }

    /// The tools the model gets, in order, with their specs.
    pub(super) fn active_set(&self) -> (ToolRegistry, Vec<ToolSpec>) {
        let mut reg = ToolRegistry::default();
        let mut specs = Vec::new();
        for (_, tool) in self.active() {
            specs.push(tool.spec());
            reg.register(tool);
        }
        (reg, specs)
    }

    /// The tools other tools may call now (`ctx.executeTool()`), in
    /// registry order, with their specs.
    pub(super) fn callable_set(&self) -> (ToolRegistry, Vec<ToolSpec>) {
        let mut reg = ToolRegistry::default();
        let mut specs = Vec::new();
        for tool in self.all().filter(|tool| tool.callable(self.is_active(tool.name()))) {
            specs.push(tool.spec());
            reg.register(tool);
        }
        (reg, specs)
    }

    /// The first of `names` that is no known tool.
    pub(super) fn first_unknown<'n>(&self, names: &'n [String]) -> Option<&'n str> {
        names.iter().find(|t| !self.registry.contains(t)).map(String::as_str)
    }

    /// `set_active_tools`: every name must be known; duplicates count once.
    pub(super) fn set_active(&mut self, names: Vec<String>) -> Result<&[String], CoreError> {
        if let Some(unknown) = self.first_unknown(&names) {
            let known: Vec<&str> = self.registry.names().collect();
            return Err(CoreError::invalid(
                "tools",
                format!("Unknown tool: {unknown}. Known tools: {}", known.join(", ")),
            ));
        }
        let names = names.into_iter().filter(|name| !self.is_hidden(name)).collect();
        self.active = Arc::new(dedup(names));
        Ok(&self.active)
    }

    /// An extension's `setActiveTools`: the known names, once each, in order
    /// (unknown names are left out, and `hidden` tools, as pi never activates
    /// them). `also_known` are tools made per model call (`codemode`,
    /// `tool_search` once an extension registered them through pi's factories).
    pub(super) fn set_active_known<'n>(
        &mut self,
        names: impl Iterator<Item = &'n str>,
        also_known: &[&str],
    ) -> &[String] {
        let known = names
            .filter(|name| (self.registry.contains(name) && !self.is_hidden(name)) || also_known.contains(name))
            .map(str::to_string)
            .collect();
        self.active = Arc::new(dedup(known));
        &self.active
    }

    /// The inactive tools of `codemode` or `deferred` exposure, in registry
    /// order: codemode scripts may call them and `tool_search` may load
    /// them, as in pi (active ones are among the active tools).
    pub(super) fn indirect(&self) -> Vec<Arc<dyn Tool>> {
        self.all().filter(|t| matches!(t.exposure(), "codemode" | "deferred") && !self.is_active(t.name())).collect()
    }

    /// A tool of `hidden` exposure (pi: never declared to the model nor callable).
    fn is_hidden(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|tool| tool.exposure() == "hidden")
    }

    /// Register tools the client runs and make them active (`initialize`,
    /// session start). A name the agent already has (not the client's) is refused.
    pub(super) fn add_client_tools(
        &mut self,
        specs: Vec<ClientToolSpec>,
        timeout: std::time::Duration,
    ) -> Result<(), CoreError> {
        for (i, spec) in specs.iter().enumerate() {
            let field = format!("clientTools[{i}].name");
            if spec.name.trim().is_empty() {
                return Err(CoreError::invalid(&field, "a client tool needs a name"));
            }
            if self.registry.contains(&spec.name) && !self.client_tools.contains(&spec.name) {
                return Err(CoreError::invalid(&field, format!("\"{}\" is already a tool of the agent", spec.name)));
            }
        }
        for spec in specs {
            let name = spec.name.clone();
            self.registry.register(Arc::new(ClientTool::new(spec, timeout)));
            if !self.active.contains(&name) {
                Arc::make_mut(&mut self.active).push(name.clone());
            }
            if !self.client_tools.contains(&name) {
                self.client_tools.push(name);
            }
        }
        Ok(())
    }

    /// Register an extension's tool (replacing one of the same name); with
    /// `activate`, it becomes active too unless the registry refused it
    /// (`--exclude-tools`) or it already is.
    pub(super) fn add_extension_tool(&mut self, tool: Arc<dyn Tool>, activate: bool) {
        let name = tool.name().to_string();
        self.registry.register(tool);
        if activate && self.registry.contains(&name) && !self.active.contains(&name) {
            Arc::make_mut(&mut self.active).push(name);
        }
    }

    /// Register an extension's tool and activate it in its place in
    /// `order` (the tools `--tools` asked for): after the last active tool
    /// that comes before it there, first when none does; at the end when
    /// `order` does not name it. An excluded or already active tool stays
    /// where it is.
    pub(super) fn add_extension_tool_in_order(&mut self, tool: Arc<dyn Tool>, order: &[String]) {
        let name = tool.name().to_string();
        self.registry.register(tool);
        if !self.registry.contains(&name) || self.active.contains(&name) {
            return;
        }
        let Some(place) = order.iter().position(|n| *n == name) else {
            Arc::make_mut(&mut self.active).push(name);
            return;
        };
        let before = &order[..place];
        let at = self.active.iter().rposition(|a| before.contains(a)).map_or(0, |i| i + 1);
        Arc::make_mut(&mut self.active).insert(at, name);
    }

    /// Remove an extension's tool; a built-in tool it replaced comes back
    /// (and stays active if it was).
    pub(super) fn remove_extension_tool(&mut self, name: &str) {
        self.registry.unregister(name);
        match ToolRegistry::builtin().get(name) {
            Some(builtin) => self.registry.register(builtin),
            None => Arc::make_mut(&mut self.active).retain(|t| t != name),
        }
    }
}

/// `names` with later duplicates left out.
fn dedup(names: Vec<String>) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    for name in names {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn active_tools_are_known_and_unique() {
        let mut tools = Toolbox::new(ToolRegistry::builtin(), names(&["read"]));
        let err = tools.set_active(names(&["read", "nope"])).unwrap_err();
        assert!(err.message.starts_with("Unknown tool: nope. Known tools: read"), "{}", err.message);
        assert_eq!(tools.active_names(), names(&["read"]).as_slice());
        assert_eq!(tools.set_active(names(&["bash", "read", "bash"])).unwrap(), names(&["bash", "read"]).as_slice());
        assert_eq!(tools.set_active_known(["nope", "edit", "edit"].into_iter(), &[]), names(&["edit"]).as_slice());
        assert!(tools.is_active("edit") && !tools.is_active("read"));
        assert_eq!(tools.active_set().1.len(), 1);
    }

    #[test]
    fn a_requested_extension_tool_takes_its_place_in_the_requested_order() {
        let order = names(&["tool_a", "read", "bash", "tool_c", "write"]);
        let mut tools = Toolbox::new(ToolRegistry::builtin(), names(&["read", "bash", "write"]));
        let tool = |name: &str| -> Arc<dyn Tool> {
            let spec =
                ClientToolSpec { name: name.into(), description: String::new(), parameters: serde_json::json!({}) };
            Arc::new(ClientTool::new(spec, std::time::Duration::from_secs(1)))
        };
        tools.add_extension_tool(tool("tool_b"), true);
        tools.add_extension_tool_in_order(tool("tool_c"), &order);
        tools.add_extension_tool_in_order(tool("tool_a"), &order);
        tools.add_extension_tool_in_order(tool("tool_d"), &order);
        let expected = names(&["tool_a", "read", "bash", "tool_c", "write", "tool_b", "tool_d"]);
        assert_eq!(tools.active_names(), expected.as_slice());
    }

    #[test]
    fn removing_an_extension_tool_brings_the_builtin_back() {
        let mut tools = Toolbox::new(ToolRegistry::builtin(), names(&["read"]));
        let replacement = ToolRegistry::builtin().get("read").unwrap();
        tools.add_extension_tool(replacement, true);
        tools.remove_extension_tool("read");
        assert!(tools.is_active("read"));
        let spec =
            ClientToolSpec { name: "read".into(), description: String::new(), parameters: serde_json::json!({}) };
        assert!(tools.add_client_tools(vec![spec], std::time::Duration::from_secs(1)).is_err());
    }
}
