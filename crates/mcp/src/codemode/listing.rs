//! What codemode tells the model of the tools scripts call, as pi 1.6.0
//! does: the `Nested tools:` part of its description (one section per
//! listed tool, grouped by namespace, within `codemode.inlineBudget`
//! estimated tokens) and the `Codemode: tools.<name>(args) resolves to …`
//! note that declared tools get while codemode is on.

use std::collections::{HashMap, HashSet};

use super::CatalogEntry;
use super::declare;
use crate::mcp::naming;

/// Characters per estimated token.
const CHARS_PER_TOKEN: f64 = 4.0;

/// The tools codemode's description lists, and how.
pub struct Listing {
    /// Every listed tool, in order (deferred ones are left out of the text).
    pub entries: Vec<CatalogEntry>,
    /// Tools with `deferred` exposure: never listed.
    pub deferred: HashSet<String>,
    /// A namespace's description (an MCP server's `description`).
    pub namespace_descriptions: HashMap<String, String>,
    /// Estimated tokens the sections may take.
    pub budget: f64,
}

/// One tool's section: `### \`id\`` (with the raw name when it differs), its
/// description with its prompt guidelines, and its declaration.
fn section(entry: &CatalogEntry) -> String {
    let name = entry.tool.name();
    let id = naming::identifier(name);
    let heading = if id == name { format!("### `{id}`") } else { format!("### `{id}` (`{name}`)") };
    format!("{heading}\n{}", entry.described().trim())
}

struct Placed {
    name: String,
    section: String,
    cost: f64,
}

struct Group {
    namespace: Option<String>,
    entries: Vec<Placed>,
}

/// The tools that fit `budget`: in each round every group (tools without a
/// namespace first, then namespaces by name) places its cheapest remaining
/// tool; a group whose next tool does not fit drops out, the others go on.
fn select(groups: &[Group], budget: f64) -> HashSet<String> {
    let mut queues: Vec<Vec<&Placed>> = groups
        .iter()
        .map(|g| {
            let mut queue: Vec<&Placed> = g.entries.iter().collect();
            queue.sort_by(|a, b| a.cost.total_cmp(&b.cost));
            queue
        })
        .filter(|q| !q.is_empty())
        .collect();
    let mut shown = HashSet::new();
    let mut remaining = budget;
    while !queues.is_empty() {
        queues.retain_mut(|queue| {
            let next = queue[0];
            if next.cost > remaining {
                return false;
            }
            remaining -= next.cost;
            shown.insert(next.name.clone());
            queue.remove(0);
            !queue.is_empty()
        });
    }
    shown
}

impl Listing {
    /// `\n\nNested tools:\n\n…`, or nothing when no tool is listed.
    pub fn render(&self) -> String {
        let mut groups: Vec<Group> = vec![Group { namespace: None, entries: Vec::new() }];
        for entry in self.entries.iter().filter(|e| !self.deferred.contains(e.tool.name())) {
            let section = section(entry);
            let cost = (section.encode_utf16().count() as f64 / CHARS_PER_TOKEN).ceil();
            let placed = Placed { name: entry.tool.name().to_string(), section, cost };
            match groups.iter_mut().find(|g| g.namespace == entry.namespace) {
                Some(group) => group.entries.push(placed),
                None => groups.push(Group { namespace: entry.namespace.clone(), entries: vec![placed] }),
            }
        }
        if groups.iter().all(|g| g.entries.is_empty()) {
            return String::new();
        }
        groups[1..].sort_by(|a, b| {
            let (a, b) = (a.namespace.as_deref().unwrap_or_default(), b.namespace.as_deref().unwrap_or_default());
            crate::config::model_resolver::collate(a, b)
        });
        let shown = select(&groups, self.budget);
        let mut parts = vec!["Nested tools:".to_string()];
        for group in &groups {
            let visible: Vec<&Placed> = group.entries.iter().filter(|p| shown.contains(&p.name)).collect();
            if let Some(namespace) = &group.namespace {
                // Only tools left out by the budget count as not listed.
                let note = match visible.len() {
                    n if n == group.entries.len() => "",
                    0 => " (tools not listed)",
                    _ => " (some tools not listed)",
                };
                let description =
                    self.namespace_descriptions.get(namespace).map(|d| d.trim()).filter(|d| !d.is_empty());
                parts.push(match description {
                    Some(d) => format!("## {namespace}{note}\n{d}"),
                    None => format!("## {namespace}{note}"),
                });
            }
            parts.extend(visible.iter().map(|p| p.section.clone()));
        }
        format!("\n\n{}", parts.join("\n\n"))
    }
}

/// A declared tool's description with how scripts call it and what the
/// call resolves to (its arguments are the declared parameters).
pub fn with_script_call(entry: &CatalogEntry, description: &str) -> String {
    let name = entry.tool.name();
    let output = declare::describe_output(name, &declare::script_output_schema(entry));
    format!("{}\n\nCodemode: `tools.{}(args)` resolves to {output}.", description.trim(), naming::identifier(name))
}
