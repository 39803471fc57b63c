//! pi 1.6.0's `prepareLoadout` of the `codemode` tool inside an SDK session
//! (`createCodemodeExtension()` loaded there): codemode's description with
//! the `Nested tools:` listing of the sub-session's callable tools (within
//! `codemode.inlineBudget`), and with `mode: "on"` the `Codemode: tools.<name>(args)
//! resolves to …` note of each declared tool scripts call. Built with the
//! main session's listing code ([`pi_mcp::codemode::listing`]) over the tools
//! the host describes (`lib("codemodeLoadout", …)`).

use std::collections::HashSet;

use pi_mcp::codemode::listing::{Listing, with_script_call};
use pi_mcp::codemode::{CatalogEntry, CodemodeTool};
use serde_json::{Map, Value, json};

use crate::tools::Tool;

/// A catalog entry of `{name, description, parameters, promptGuidelines, exposure, namespace?, outputSchema?}`.
fn entry(described: &Value) -> Option<CatalogEntry> {
    let text = |key: &str| described.get(key).and_then(Value::as_str).map(str::to_string);
    let tool = pi_extensions::extensions::described_tool(described)?;
    // A built-in without guidelines of its own gets pi-rpc's, as in the main session's listing.
    let mut entry = CatalogEntry::builtin(tool);
    entry.namespace = text("namespace");
    entry.search.namespace = entry.namespace.clone();
    Some(entry)
}

fn entries(args: &Value, key: &str) -> Vec<CatalogEntry> {
    args.get(key).and_then(Value::as_array).map(|list| list.iter().filter_map(entry).collect()).unwrap_or_default()
}

/// `{declared, callable, mode, inlineBudget?, models}` → `{descriptions, hiddenDeclarations}`, as
/// pi's `prepareCodemodeLoadout` answers.
pub(super) fn loadout(args: &Value) -> Result<Value, String> {
    let only = args.get("mode").and_then(Value::as_str) == Some("only");
    let callable: Vec<CatalogEntry> =
        entries(args, "callable").into_iter().filter(|e| e.tool.name() != "codemode").collect();
    let declared = entries(args, "declared");
    let callable_entry = |name: &str| callable.iter().find(|e| e.tool.name() == name);
    let is_direct = |e: &CatalogEntry| e.tool.exposure() == "direct";
    let mut descriptions = Map::new();
    if !only {
        for tool in &declared {
            if let Some(entry) = callable_entry(tool.tool.name()) {
                descriptions
                    .insert(tool.tool.name().to_string(), json!(with_script_call(entry, tool.tool.description())));
            }
        }
    }
    let listed: Vec<CatalogEntry> = callable.iter().filter(|e| only || !is_direct(e)).cloned().collect();
    let deferred: HashSet<String> =
        listed.iter().filter(|e| e.tool.exposure() == "deferred").map(|e| e.tool.name().to_string()).collect();
    let budget = args
        .get("inlineBudget")
        .and_then(Value::as_f64)
        .filter(|b| b.is_finite() && *b >= 0.0)
        .unwrap_or(pi_mcp::mcp::factories::DEFAULT_INLINE_BUDGET);
    let listing = Listing { entries: listed, deferred, namespace_descriptions: Default::default(), budget };
    let mut codemode = CodemodeTool::new(Vec::new(), None);
    if args.get("models").and_then(Value::as_bool) == Some(false) {
        codemode = codemode.without_models_global();
    }
    let codemode = codemode.with_listing(&listing);
    descriptions.insert("codemode".to_string(), json!(codemode.description()));
    let declared_names: HashSet<&str> = declared.iter().map(|e| e.tool.name()).collect();
    let hidden: Vec<&str> = if only {
        callable
            .iter()
            .filter(|e| is_direct(e) && declared_names.contains(e.tool.name()))
            .map(|e| e.tool.name())
            .collect()
    } else {
        Vec::new()
    };
    Ok(json!({ "descriptions": descriptions, "hiddenDeclarations": hidden }))
}
