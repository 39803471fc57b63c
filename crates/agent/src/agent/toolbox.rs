//! The agent's tools ([`Toolbox`]): every tool it knows (built-in, added by
//! an extension, run by the client), which of them the model gets and in
//! which order, and which ones the client runs itself.

use std::sync::Arc;

use super::restored_tools::RestoredTools;
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
    /// The MCP tools activated as they registered ([`Toolbox::activate_registered`]);
    /// `None` until the session's start-up is over.
    registered_mcp: Option<Vec<String>>,
    /// pi's MCP extension activates `codemode` / `tool_search` at the next `session_start`.
    discovery_due: bool,
    /// The active tools the session started with (the defaults or `--tools`,
    /// in order): a replaced session starts from them again.
    initial: Vec<String>,
    /// The loadout restored from the branch's system messages, if any.
    restored: RestoredTools,
    /// The MCP tools registered so far (a new one changes the registry).
    mcp_seen: Vec<String>,
}

impl Toolbox {
    pub(super) fn new(registry: ToolRegistry, active: Vec<String>) -> Self {
        Toolbox {
            registry,
            initial: active.clone(),
            active: Arc::new(active),
            client_tools: Vec::new(),
            registered_mcp: None,
            discovery_due: true,
            restored: RestoredTools::default(),
            mcp_seen: Vec::new(),
        }
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

    /// `set_active_tools`: every name must be known (`also_known`: the
    /// tools made per model call, see [`Toolbox::set_active_known`]);
    /// duplicates count once.
    pub(super) fn set_active(&mut self, names: Vec<String>, also_known: &[String]) -> Result<&[String], CoreError> {
        if let Some(unknown) = names.iter().find(|t| !self.registry.contains(t) && !also_known.contains(t)) {
            let known: Vec<&str> = self.registry.names().collect();
            return Err(CoreError::invalid(
                "tools",
                format!("Unknown tool: {unknown}. Known tools: {}", known.join(", ")),
            ));
        }
        let names = names.into_iter().filter(|name| !self.is_hidden(name)).collect();
        let before = std::mem::replace(&mut self.active, Arc::new(dedup(names)));
        self.restored.active_set(&before, &self.active);
        Ok(&self.active)
    }

    /// An extension's `setActiveTools`: the known names, once each (unknown
    /// names are left out, and `hidden` tools, as pi never activates them).
    /// As pi's, the tools that stay active keep their place and the newly
    /// active ones follow in the order given. `also_known` are tools made
    /// per model call (`codemode`, `tool_search`, the MCP servers' tools).
    pub(super) fn set_active_known<'n>(
        &mut self,
        names: impl Iterator<Item = &'n str>,
        also_known: &[String],
    ) -> &[String] {
        let known: Vec<String> = names
            .filter(|name| {
                (self.registry.contains(name) && !self.is_hidden(name)) || also_known.iter().any(|k| k == name)
            })
            .map(str::to_string)
            .collect();
        let kept = self.active.iter().filter(|name| known.contains(name)).cloned();
        let active = Arc::new(dedup(kept.chain(known.iter().cloned()).collect()));
        let before = std::mem::replace(&mut self.active, active);
        self.restored.active_set(&before, &self.active);
        &self.active
    }

    /// Start-up is over: from now on MCP tools are activated as they
    /// register. True once, when pi's MCP extension activates `codemode` /
    /// `tool_search` (its `session_start`: start-up, a reload, a new,
    /// resumed or forked session).
    pub(super) fn begin_mcp_activation(&mut self) -> bool {
        self.restored.started();
        self.registered_mcp.get_or_insert_with(Vec::new);
        std::mem::take(&mut self.discovery_due)
    }

    /// Whether [`Toolbox::begin_mcp_activation`] happened.
    pub(super) fn mcp_activation_begun(&self) -> bool {
        self.registered_mcp.is_some()
    }

    /// pi's MCP extension activates `codemode` / `tool_search` again at the next `session_start`.
    pub(super) fn discovery_again(&mut self) {
        self.discovery_due = true;
    }

    /// A replaced session (pi 1.6.0: a new runtime) starts again from the
    /// start-up tools: the initial ones, then `registered` (the tools
    /// activated as they registered, in order; `true`: `--tools` names it,
    /// so it takes its place in `order`), then the client's tools. The MCP
    /// tools are activated again once the new session's start-up is over
    /// ([`Toolbox::begin_mcp_activation`]).
    pub(super) fn restart(&mut self, registered: Vec<(String, bool)>, order: &[String]) {
        self.active = Arc::new(self.initial.clone());
        for (name, named) in registered {
            if !self.registry.contains(&name) || self.active.contains(&name) {
                continue;
            }
            if named {
                self.activate_in_order(name, order);
            } else {
                Arc::make_mut(&mut self.active).push(name);
            }
        }
        for name in self.client_tools.clone() {
            if !self.active.contains(&name) {
                Arc::make_mut(&mut self.active).push(name);
            }
        }
        self.registered_mcp = None;
        self.discovery_due = true;
        self.restored = RestoredTools::default();
        // pi's new runtime registers the servers' tools anew.
        self.mcp_seen.clear();
    }

    /// The MCP tools registered now: whether one is new (the registry changed).
    pub(super) fn mcp_registered(&mut self, names: impl Iterator<Item = String>) -> bool {
        let mut changed = false;
        for name in names {
            if !self.mcp_seen.contains(&name) {
                self.mcp_seen.push(name);
                changed = true;
            }
        }
        changed
    }

    /// The active tools are `names` (a transcript's loadout, pi's
    /// `_restoreToolsFromTranscript`), once each, `hidden` ones left out;
    /// a name `registered` does not know yet is pending: its tool is active
    /// once it registers, unless a run starts first
    /// ([`Toolbox::run_started`]). `mentioned`: the tools the branch added
    /// or removed (`starting`: the session starts, and registering one of
    /// those does not activate it until [`Toolbox::begin_mcp_activation`]).
    pub(super) fn restore(
        &mut self,
        names: Vec<String>,
        mentioned: Vec<String>,
        starting: bool,
        registered: impl Fn(&str) -> bool,
    ) {
        let names = dedup(names.into_iter().filter(|name| !self.is_hidden(name)).collect());
        let (active, pending) = names.iter().cloned().partition(|name| registered(name));
        self.active = Arc::new(active);
        self.restored = RestoredTools::restored(names, pending, mentioned, starting);
    }

    /// Whether `name` is a tool of the registry.
    pub(super) fn knows(&self, name: &str) -> bool {
        self.registry.contains(name)
    }

    /// Whether registering `name` now must not activate it on its own (the
    /// session starts with a restored loadout that mentions it).
    pub(super) fn withheld(&self, name: &str) -> bool {
        self.restored.withheld(name)
    }

    /// The pending restored tools among `registered` (tools made per model
    /// call: MCP's) become active, after the active ones. Whether any did.
    pub(super) fn activate_pending(&mut self, registered: &[String]) -> bool {
        let names = self.restored.take_pending_among(registered);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.activate(&names)
    }

    /// A run starts: the restored tools not registered by now stay inactive.
    pub(super) fn run_started(&mut self) {
        self.restored.run_started();
    }

    /// `name` just registered: a pending restored tool becomes active, in
    /// its place in the loadout while the session starts, else last.
    fn activate_if_pending(&mut self, name: &str) {
        let Some(in_place) = self.restored.take_pending(name) else { return };
        if !self.registry.contains(name) || self.is_hidden(name) || self.active.iter().any(|a| a == name) {
            return;
        }
        if in_place {
            let order = self.restored.loadout().to_vec();
            self.activate_in_order(name.to_string(), &order);
        } else {
            Arc::make_mut(&mut self.active).push(name.to_string());
        }
    }

    /// pi activates a tool declared to the model when it registers (an MCP
    /// server's `direct` tools once it connected), once: one deactivated
    /// since stays inactive. Whether the active tools changed.
    pub(super) fn activate_registered(&mut self, names: impl Iterator<Item = String>) -> bool {
        let Some(registered) = self.registered_mcp.as_mut() else { return false };
        let mut changed = false;
        for name in names {
            if registered.contains(&name) {
                continue;
            }
            registered.push(name.clone());
            if !self.active.contains(&name) {
                Arc::make_mut(&mut self.active).push(name);
                changed = true;
            }
        }
        changed
    }

    /// Activate `names` after the active tools (those not active yet).
    pub(super) fn activate(&mut self, names: &[&str]) -> bool {
        let new: Vec<String> =
            names.iter().filter(|n| !self.active.iter().any(|a| a == *n)).map(|n| n.to_string()).collect();
        if new.is_empty() {
            return false;
        }
        Arc::make_mut(&mut self.active).extend(new);
        true
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

    /// The names of the tools the client runs.
    pub(super) fn client_tool_names(&self) -> &[String] {
        &self.client_tools
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
        self.activate_if_pending(&name);
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
        self.activate_if_pending(&name);
        if !self.registry.contains(&name) || self.active.contains(&name) {
            return;
        }
        self.activate_in_order(name, order);
    }

    /// Activate `name` after the last active tool that comes before it in
    /// `order`, first when none does; at the end when `order` does not name it.
    fn activate_in_order(&mut self, name: String, order: &[String]) {
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
        let err = tools.set_active(names(&["read", "nope"]), &[]).unwrap_err();
        assert!(err.message.starts_with("Unknown tool: nope. Known tools: read"), "{}", err.message);
        assert_eq!(tools.active_names(), names(&["read"]).as_slice());
        assert_eq!(
            tools.set_active(names(&["bash", "read", "bash"]), &[]).unwrap(),
            names(&["bash", "read"]).as_slice()
        );
        assert_eq!(tools.set_active_known(["nope", "edit", "edit"].into_iter(), &[]), names(&["edit"]).as_slice());
        // As pi's: the tools that stay active keep their place, new ones follow.
        tools.set_active(names(&["read", "edit", "write"]), &[]).unwrap();
        let also = names(&["mcp__s__t"]);
        let set = tools.set_active_known(["mcp__s__t", "write", "bash", "read"].into_iter(), &also);
        assert_eq!(set, names(&["read", "write", "mcp__s__t", "bash"]).as_slice());
        tools.set_active_known(["edit"].into_iter(), &[]);
        assert!(tools.is_active("edit") && !tools.is_active("read"));
        assert_eq!(tools.active_set().1.len(), 1);
    }

    #[test]
    fn a_tool_is_activated_once_as_it_registers_after_start_up() {
        let mut tools = Toolbox::new(ToolRegistry::builtin(), names(&["read"]));
        let mcp = |list: &[&str]| names(list).into_iter();
        assert!(!tools.activate_registered(mcp(&["mcp__s__a"])), "not during start-up");
        assert!(tools.begin_mcp_activation(), "codemode / tool_search are due once");
        assert!(!tools.begin_mcp_activation());
        assert!(tools.activate_registered(mcp(&["mcp__s__a", "mcp__s__b"])));
        assert_eq!(tools.active_names(), names(&["read", "mcp__s__a", "mcp__s__b"]).as_slice());
        // One deactivated since stays inactive when it registers again; a new one is activated.
        tools.set_active_known(["read", "mcp__s__b"].into_iter(), &names(&["mcp__s__a", "mcp__s__b"]));
        assert!(tools.activate_registered(mcp(&["mcp__s__a", "mcp__s__b", "mcp__s__c"])));
        assert_eq!(tools.active_names(), names(&["read", "mcp__s__b", "mcp__s__c"]).as_slice());
        tools.discovery_again();
        assert!(tools.begin_mcp_activation(), "due again after a reload");
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
    fn a_replaced_session_starts_from_the_start_up_tools_again() {
        let client = |name: &str| ClientToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        };
        let mut tools = Toolbox::new(ToolRegistry::builtin(), names(&["read", "bash"]));
        tools.add_client_tools(vec![client("ask")], std::time::Duration::from_secs(1)).unwrap();
        let replacement = ToolRegistry::builtin().get("write").unwrap();
        tools.add_extension_tool(replacement, false);
        assert!(tools.begin_mcp_activation());
        tools.set_active(names(&["read"]), &[]).unwrap();
        // The initial tools, the named one in `--tools`' order, then the client's.
        let order = names(&["write", "read", "bash"]);
        tools.restart(vec![("write".into(), true), ("nope".into(), false)], &order);
        assert_eq!(tools.active_names(), names(&["write", "read", "bash", "ask"]).as_slice());
        assert!(!tools.mcp_activation_begun() && tools.begin_mcp_activation(), "MCP's activation is due again");
        // A recorded loadout: names no tool has yet are pending, active once registered.
        let known = |name: &str| ToolRegistry::builtin().contains(name);
        tools.restore(names(&["edit", "lazy", "mcp__s__t", "own", "edit"]), names(&["read"]), true, known);
        assert_eq!(tools.active_names(), names(&["edit"]).as_slice());
        assert!(tools.withheld("read") && !tools.withheld("bash"));
        let tool = |name: &str| -> Arc<dyn Tool> {
            let spec =
                ClientToolSpec { name: name.into(), description: String::new(), parameters: serde_json::json!({}) };
            Arc::new(ClientTool::new(spec, std::time::Duration::from_secs(1)))
        };
        tools.add_extension_tool(tool("own"), false);
        tools.add_extension_tool(tool("lazy"), false);
        assert_eq!(tools.active_names(), names(&["edit", "lazy", "own"]).as_slice(), "in the loadout's place");
        tools.begin_mcp_activation();
        assert!(tools.activate_pending(&names(&["mcp__s__t"])));
        assert_eq!(tools.active_names(), names(&["edit", "lazy", "own", "mcp__s__t"]).as_slice());
        assert_eq!(tools.active_set().1.len(), 3);
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
