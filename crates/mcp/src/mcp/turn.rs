//! The tools of one model call: the session's active tools, plus what MCP
//! adds — `codemode` (it can call every reachable tool: the active ones
//! other tools may call, the inactive `codemode` / `deferred` ones, MCP
//! tools), `tool_search` (with the tools it loaded on this branch), `direct`
//! MCP tools and the resource tools when their widest exposure is `direct`.
//! With codemode's `mode: "only"` the `direct` tools scripts call are left
//! out of the declarations ([`hidden_by_codemode`]).

use std::sync::Arc;

use super::search::{TOOL_SEARCH, ToolSearch, loaded_tools};
use super::{Exposure, McpManager};
use crate::codemode::{CatalogEntry, CodemodeTool, ModelsHost};
use crate::message::AgentMessage;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolRegistry};

/// The name of the codemode tool.
pub const CODEMODE: &str = "codemode";

/// Which of the indirect tools are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    pub codemode: bool,
    pub tool_search: bool,
}

impl Reach {
    /// On when named in the active tools, or when a server's exposure needs it.
    pub fn of(active: &[String], mcp: Option<&McpManager>) -> Reach {
        let named = |n: &str| active.iter().any(|t| t == n);
        Reach {
            codemode: named(CODEMODE) || mcp.is_some_and(McpManager::codemode_wanted),
            tool_search: named(TOOL_SEARCH) || mcp.is_some_and(McpManager::tool_search_wanted),
        }
    }
}

/// Tools to declare and to run for the next model call.
pub fn turn_tools(
    base: &ToolRegistry,
    base_specs: &[ToolSpec],
    indirect: &[Arc<dyn Tool>],
    mcp: Option<&Arc<McpManager>>,
    reach: Reach,
    context: &[AgentMessage],
    models: Option<&Arc<ModelsHost>>,
) -> (ToolRegistry, Vec<ToolSpec>) {
    let mut registry = base.clone();
    let mut specs = base_specs.to_vec();
    let exposed = mcp.map(|m| m.tools()).unwrap_or_default();
    let add = |tool: Arc<dyn Tool>, registry: &mut ToolRegistry, specs: &mut Vec<ToolSpec>| {
        if !specs.iter().any(|s| s.name == tool.name()) {
            specs.push(tool.spec());
            registry.register(tool);
        }
    };
    if reach.codemode {
        // pi: a script calls what `ctx.executeTool()` may (not `model-only` tools).
        let mut entries: Vec<CatalogEntry> = base_specs
            .iter()
            .filter_map(|s| base.get(&s.name))
            .filter(|tool| tool.callable(true))
            .chain(indirect.iter().cloned())
            .map(CatalogEntry::builtin)
            .collect();
        entries.extend(
            exposed.iter().filter(|t| t.exposure != Exposure::Hidden).map(|t| CatalogEntry::from_exposed(t.clone())),
        );
        let mut tool = CodemodeTool::new(entries, mcp.cloned()).with_models(models.cloned());
        if mcp.is_some_and(|m| !m.factories.codemode_models()) {
            tool = tool.without_models_global();
        }
        add(Arc::new(tool), &mut registry, &mut specs);
    }
    if reach.tool_search {
        let docs = exposed
            .iter()
            .filter(|t| matches!(t.exposure, Exposure::Deferred | Exposure::Codemode))
            .map(|t| t.search.clone())
            .chain(indirect.iter().map(|t| CatalogEntry::builtin(t.clone()).search));
        add(Arc::new(ToolSearch::new(docs.collect(), mcp.cloned())), &mut registry, &mut specs);
    }
    let filter = mcp.map(|m| m.filter.clone()).unwrap_or_default();
    for t in exposed.iter().filter(|t| t.exposure == Exposure::Direct && filter.declarable(t.tool.name())) {
        add(t.tool.clone(), &mut registry, &mut specs);
    }
    if reach.tool_search {
        for name in loaded_tools(context) {
            if let Some(t) = exposed.iter().find(|t| t.tool.name() == name && t.exposure != Exposure::Hidden) {
                add(t.tool.clone(), &mut registry, &mut specs);
            } else if let Some(t) = indirect.iter().find(|t| t.name() == name) {
                add(t.clone(), &mut registry, &mut specs);
            }
        }
    }
    let hidden = hidden_by_codemode(base, base_specs, mcp, reach);
    specs.retain(|spec| !hidden.contains(&spec.name));
    (registry, specs)
}

/// pi's codemode `mode: "only"` (`createCodemodeExtension({ mode: "only" })`):
/// while codemode is on, the `direct` tools a script may call are not
/// declared to the model (they stay runnable, from scripts). Those are the
/// active tools other tools may call (not `model-only` ones), `tool_search`,
/// and `direct` MCP tools; tools `tool_search` loaded (`deferred`) stay.
pub fn hidden_by_codemode(
    base: &ToolRegistry,
    base_specs: &[ToolSpec],
    mcp: Option<&Arc<McpManager>>,
    reach: Reach,
) -> Vec<String> {
    let Some(mcp) = mcp.filter(|m| reach.codemode && m.factories.codemode_only()) else { return Vec::new() };
    let mut hidden: Vec<String> = base_specs
        .iter()
        .filter(|s| s.name != CODEMODE && base.get(&s.name).is_some_and(|tool| tool.callable(true)))
        .map(|s| s.name.clone())
        .collect();
    if reach.tool_search {
        hidden.push(TOOL_SEARCH.to_string());
    }
    hidden.extend(mcp.tools().iter().filter(|t| t.exposure == Exposure::Direct).map(|t| t.tool.name().to_string()));
    hidden
}
