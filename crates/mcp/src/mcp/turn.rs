//! The tools of one model call: the session's active tools, plus what MCP
//! adds — `codemode` (it can call every reachable tool: the active ones
//! other tools may call, the inactive `codemode` / `deferred` ones, MCP
//! tools), `tool_search` (with the tools it loaded on this branch), and the
//! MCP tools among the active ones (pi activates `direct` ones, the resource
//! tools among them, as they register; `setActiveTools()` any of them),
//! declared in the order of the active tools, as pi declares them.
//! codemode's description lists the tools scripts call that the model is
//! not offered ([`Listing`]); with its `mode: "on"` the declared tools it
//! calls get a `Codemode:` note, with `mode: "only"` the `direct` tools
//! scripts call are left out of the request ([`hidden_by_codemode`]).

use std::collections::HashSet;
use std::sync::Arc;

use super::factories::CodemodeMode;
use super::search::{TOOL_SEARCH, ToolSearch, loaded_tools};
use super::{ExposedTool, Exposure, McpManager};
use crate::codemode::listing::{Listing, with_script_call};
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

/// The tools of one model call.
pub struct TurnTools {
    /// What may run.
    pub registry: ToolRegistry,
    /// The tools declared, in order, with codemode's notes: system messages
    /// record them all.
    pub specs: Vec<ToolSpec>,
    /// Declared tools the request leaves out (codemode's `mode: "only"`).
    pub hidden: Vec<String>,
}

impl TurnTools {
    /// The declarations the model is offered.
    pub fn offered(&self) -> Vec<ToolSpec> {
        self.specs.iter().filter(|s| !self.hidden.contains(&s.name)).cloned().collect()
    }
}

/// Whether a tool is reached directly (pi's `direct` exposure).
fn is_direct(tool: &dyn Tool) -> bool {
    tool.exposure() == "direct"
}

/// Tools to declare and to run for the next model call; `active`: the
/// names of the active tools, in order (`base_specs` are the registry's).
#[allow(clippy::too_many_arguments)]
pub fn turn_tools(
    base: &ToolRegistry,
    base_specs: &[ToolSpec],
    indirect: &[Arc<dyn Tool>],
    active: &[String],
    mcp: Option<&Arc<McpManager>>,
    reach: Reach,
    context: &[AgentMessage],
    models: Option<&Arc<ModelsHost>>,
) -> TurnTools {
    let mut registry = base.clone();
    let mut specs = base_specs.to_vec();
    let exposed = mcp.map(|m| m.tools()).unwrap_or_default();
    let mode = mcp.map_or(CodemodeMode::On, |m| m.factories.codemode_mode());
    let add = |tool: Arc<dyn Tool>, registry: &mut ToolRegistry, specs: &mut Vec<ToolSpec>| {
        if !specs.iter().any(|s| s.name == tool.name()) {
            specs.push(tool.spec());
            registry.register(tool);
        }
    };
    // pi: a script calls what `ctx.executeTool()` may (not `model-only` tools).
    let active_callable: Vec<CatalogEntry> = base_specs
        .iter()
        .filter_map(|s| base.get(&s.name))
        .filter(|tool| ![CODEMODE, TOOL_SEARCH].contains(&tool.name()) && tool.callable(true))
        .map(CatalogEntry::builtin)
        .collect();
    let reachable_mcp: Vec<&ExposedTool> = exposed.iter().filter(|t| t.exposure != Exposure::Hidden).collect();
    if reach.codemode {
        let entries: Vec<CatalogEntry> = active_callable
            .iter()
            .cloned()
            .chain(indirect.iter().cloned().map(CatalogEntry::builtin))
            .chain(reachable_mcp.iter().map(|t| CatalogEntry::from_exposed((*t).clone())))
            .collect();
        let listing = codemode_listing(&entries, indirect, &reachable_mcp, mcp, mode);
        let mut tool = CodemodeTool::new(entries, mcp.cloned()).with_models(models.cloned());
        if mcp.is_some_and(|m| !m.factories.codemode_models()) {
            tool = tool.without_models_global();
        }
        add(Arc::new(tool.with_listing(&listing)), &mut registry, &mut specs);
    }
    if reach.tool_search {
        let docs = exposed
            .iter()
            .filter(|t| matches!(t.exposure, Exposure::Deferred | Exposure::Codemode))
            .map(|t| t.search.clone())
            .chain(indirect.iter().map(|t| CatalogEntry::builtin(t.clone()).search));
        add(Arc::new(ToolSearch::new(docs.collect(), mcp.cloned())), &mut registry, &mut specs);
    }
    for name in active {
        if let Some(t) = exposed.iter().find(|t| t.tool.name() == name && t.exposure != Exposure::Hidden) {
            add(t.tool.clone(), &mut registry, &mut specs);
        }
    }
    in_active_order(&mut specs, active);
    if reach.tool_search {
        for name in loaded_tools(context) {
            if let Some(t) = exposed.iter().find(|t| t.tool.name() == name && t.exposure != Exposure::Hidden) {
                add(t.tool.clone(), &mut registry, &mut specs);
            } else if let Some(t) = indirect.iter().find(|t| t.name() == name) {
                add(t.clone(), &mut registry, &mut specs);
            }
        }
    }
    if reach.codemode && mode == CodemodeMode::On {
        note_script_calls(&mut specs, &active_callable, indirect, &exposed);
    }
    let hidden = hidden_by_codemode(base, base_specs, mcp, reach);
    TurnTools { registry, specs, hidden }
}

/// pi declares the active tools in their order: those of `specs` among
/// `active` are put in that order, in the places they hold; the others (the
/// tools `tool_search` loaded, an indirect tool no active name turned on) stay.
fn in_active_order(specs: &mut [ToolSpec], active: &[String]) {
    let position = |spec: &ToolSpec| active.iter().position(|name| *name == spec.name);
    let slots: Vec<usize> = (0..specs.len()).filter(|&i| position(&specs[i]).is_some()).collect();
    let mut ordered: Vec<ToolSpec> = slots.iter().map(|&i| specs[i].clone()).collect();
    ordered.sort_by_key(|spec| position(spec));
    for (slot, spec) in slots.into_iter().zip(ordered) {
        specs[slot] = spec;
    }
}

/// What codemode's description lists: with `mode: "only"` every tool
/// scripts call, else those not reached directly; `deferred` ones never
/// (MCP tools of `codemode` exposure among them, so that the description
/// stays the same while servers connect).
fn codemode_listing(
    entries: &[CatalogEntry],
    indirect: &[Arc<dyn Tool>],
    mcp_tools: &[&ExposedTool],
    mcp: Option<&Arc<McpManager>>,
    mode: CodemodeMode,
) -> Listing {
    let mcp_exposure = |name: &str| mcp_tools.iter().find(|t| t.tool.name() == name).map(|t| t.exposure);
    let direct = |entry: &CatalogEntry| match mcp_exposure(entry.tool.name()) {
        Some(exposure) => exposure == Exposure::Direct,
        None => is_direct(entry.tool.as_ref()),
    };
    let listed: Vec<CatalogEntry> =
        entries.iter().filter(|e| mode == CodemodeMode::Only || !direct(e)).cloned().collect();
    let deferred = listed
        .iter()
        .map(|e| e.tool.name())
        .filter(|name| match mcp_exposure(name) {
            // pi registers MCP tools of `codemode` exposure as `deferred` ones.
            Some(exposure) => matches!(exposure, Exposure::Deferred | Exposure::Codemode),
            None => indirect.iter().any(|t| t.name() == *name && t.exposure() == "deferred"),
        })
        .map(str::to_string)
        .collect();
    let namespace_descriptions = mcp
        .map(|m| {
            let namespaces: HashSet<&str> = listed.iter().filter_map(|e| e.namespace.as_deref()).collect();
            namespaces
                .into_iter()
                .filter_map(|ns| {
                    let info = m.namespace_info(ns)?;
                    Some((ns.to_string(), info.get("description")?.as_str()?.to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let budget = mcp.map_or(crate::mcp::factories::DEFAULT_INLINE_BUDGET, |m| m.factories.codemode_inline_budget());
    Listing { entries: listed, deferred, namespace_descriptions, budget }
}

/// codemode's `mode: "on"`: the declared tools scripts call say so in their
/// descriptions (`Codemode: tools.<name>(args) resolves to …`).
fn note_script_calls(
    specs: &mut [ToolSpec],
    active_callable: &[CatalogEntry],
    indirect: &[Arc<dyn Tool>],
    exposed: &[ExposedTool],
) {
    for spec in specs.iter_mut() {
        let entry = active_callable
            .iter()
            .find(|e| e.tool.name() == spec.name)
            .cloned()
            .or_else(|| {
                exposed
                    .iter()
                    .find(|t| t.tool.name() == spec.name && t.exposure != Exposure::Hidden)
                    .map(|t| CatalogEntry::from_exposed(t.clone()))
            })
            .or_else(|| indirect.iter().find(|t| t.name() == spec.name).cloned().map(CatalogEntry::builtin));
        if let Some(entry) = entry {
            spec.description = with_script_call(&entry, &spec.description);
        }
    }
}

/// pi's codemode `mode: "only"` (`createCodemodeExtension({ mode: "only" })`
/// or the `codemode.mode` setting): while codemode is on, the `direct` tools
/// a script may call are not declared to the model (they stay runnable, from
/// scripts). Those are the active tools other tools may call (not
/// `model-only` ones such as `tool_search`), and `direct` MCP tools; tools
/// `tool_search` loaded (`deferred`) stay.
pub fn hidden_by_codemode(
    base: &ToolRegistry,
    base_specs: &[ToolSpec],
    mcp: Option<&Arc<McpManager>>,
    reach: Reach,
) -> Vec<String> {
    let Some(mcp) = mcp.filter(|m| reach.codemode && m.factories.codemode_only()) else { return Vec::new() };
    let mut hidden: Vec<String> = base_specs
        .iter()
        .filter(|s| s.name != CODEMODE && s.name != TOOL_SEARCH)
        .filter(|s| base.get(&s.name).is_some_and(|tool| tool.callable(true) && is_direct(tool.as_ref())))
        .map(|s| s.name.clone())
        .collect();
    hidden.extend(mcp.tools().iter().filter(|t| t.exposure == Exposure::Direct).map(|t| t.tool.name().to_string()));
    hidden
}
