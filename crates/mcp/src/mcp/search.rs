//! Ranking tools by a query (BM25 over names, descriptions and parameter
//! docs) for `tool_search` and codemode's `searchTools()`, and the
//! `tool_search` tool, whose matches are declared from the next model call on
//! (they are recorded in its result's `details.loaded`, so they stay declared
//! on that branch of the conversation).

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::message::AgentMessage;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub const TOOL_SEARCH: &str = "tool_search";
const DEFAULT_LIMIT: usize = 8;

/// A searchable tool.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchDoc {
    pub name: String,
    pub description: String,
    /// Extra text that ranks the tool (parameter names and docs, server description).
    pub extra: String,
    pub namespace: Option<String>,
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| {
            let t = t.to_lowercase();
            match t.strip_suffix('s') {
                Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_string(),
                _ => t,
            }
        })
        .collect()
}

/// The best matches for `query` (score > 0), at most `limit`.
pub fn rank<'a>(docs: &'a [SearchDoc], query: &str, limit: usize) -> Vec<&'a SearchDoc> {
    let query: BTreeSet<String> = tokens(query).into_iter().collect();
    if query.is_empty() || docs.is_empty() {
        return Vec::new();
    }
    let bodies: Vec<Vec<String>> = docs
        .iter()
        .map(|d| tokens(&format!("{} {} {} {}", d.name, d.name.replace('_', " "), d.description, d.extra)))
        .collect();
    let n = bodies.len() as f64;
    let avg = bodies.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for body in &bodies {
        let unique: BTreeSet<&str> = body.iter().map(String::as_str).collect();
        for t in unique {
            *df.entry(t).or_default() += 1;
        }
    }
    let (k1, b) = (1.2, 0.75);
    let mut scored: Vec<(f64, usize)> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let len = body.len() as f64;
            let score = query
                .iter()
                .map(|q| {
                    let tf = body.iter().filter(|t| *t == q).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let d = *df.get(q.as_str()).unwrap_or(&0) as f64;
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg.max(1.0)))
                })
                .sum::<f64>();
            (score, i)
        })
        .filter(|(s, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, i)| &docs[i]).collect()
}

/// Names loaded by `tool_search` calls in `context` (this branch).
pub fn loaded_tools(context: &[AgentMessage]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for message in context {
        if let AgentMessage::ToolResult(r) = message
            && r.tool_name == TOOL_SEARCH
            && let Some(loaded) = r.details.as_ref().and_then(|d| d.get("loaded")).and_then(Value::as_array)
        {
            for name in loaded.iter().filter_map(Value::as_str) {
                if !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// The `tool_search` tool over the deferred tools (of every server, once
/// each has connected or failed).
pub struct ToolSearch {
    docs: Vec<SearchDoc>,
    mcp: Option<std::sync::Arc<super::McpManager>>,
    parameters: Value,
}

impl ToolSearch {
    pub fn new(docs: Vec<SearchDoc>, mcp: Option<std::sync::Arc<super::McpManager>>) -> ToolSearch {
        let parameters = json!({"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "Search query for deferred tools."},
            "limit": {"type": "number", "description": "Maximum number of tools to return. Defaults to 8."}
        }});
        ToolSearch { docs, mcp, parameters }
    }
}

#[async_trait]
impl Tool for ToolSearch {
    fn name(&self) -> &str {
        TOOL_SEARCH
    }

    fn description(&self) -> &str {
        "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, and you should use this tool (`tool_search`) to search for the required tools. For MCP tool discovery, always use `tool_search`."
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, args: Value, _ctx: ToolContext) -> ToolOutput {
        let docs = match &self.mcp {
            Some(mcp) => {
                mcp.wait_for(None).await;
                let mut live = mcp.search_docs();
                // Other tools (extensions' `codemode` / `deferred` ones) as they were for this call.
                for doc in self.docs.iter().filter(|d| d.namespace.is_none()) {
                    if !live.iter().any(|d| d.name == doc.name) {
                        live.push(doc.clone());
                    }
                }
                live
            }
            None => self.docs.clone(),
        };
        search_output(&docs, &args)
    }
}

/// `tool_search`'s answer to `args` over `docs`: the matches, named in
/// `details.loaded` (also for a tool set other than the session's: an SDK
/// session's, through the extension host's `lib` request).
pub fn search_output(docs: &[SearchDoc], args: &Value) -> ToolOutput {
    let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
    let limit = args.get("limit").and_then(Value::as_f64).filter(|l| *l >= 1.0).map_or(DEFAULT_LIMIT, |l| l as usize);
    // pi refuses a blank query (a thrown error) and says the same words for any miss.
    if query.trim().is_empty() {
        return ToolOutput::error("query must not be empty");
    }
    let found = rank(docs, query, limit);
    if found.is_empty() {
        return ToolOutput::text("No matching tools found.").with_details(json!({"loaded": []}));
    }
    let lines: Vec<String> =
        found.iter().map(|d| format!("- {}: {}", d.name, d.description.lines().next().unwrap_or("").trim())).collect();
    let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
    let noun = if found.len() == 1 { "tool" } else { "tools" };
    ToolOutput::text(format!(
        "Loaded {} {noun}. They are available from your next call:\n{}",
        found.len(),
        lines.join("\n")
    ))
    .with_details(json!({"loaded": names}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, description: &str) -> SearchDoc {
        SearchDoc { name: name.into(), description: description.into(), extra: String::new(), namespace: None }
    }

    #[test]
    fn ranks_by_relevance_and_drops_non_matches() {
        let docs = vec![
            doc("mcp__e__echo", "Echoes back the input string"),
            doc("mcp__e__get_sum", "Returns the sum of two numbers"),
            doc("mcp__e__get_env", "Returns all environment variables"),
        ];
        let found: Vec<&str> = rank(&docs, "sum numbers", 8).iter().map(|d| d.name.as_str()).collect();
        assert_eq!(found, ["mcp__e__get_sum"]);
        let found: Vec<&str> = rank(&docs, "echo", 8).iter().map(|d| d.name.as_str()).collect();
        assert_eq!(found, ["mcp__e__echo"]);
        assert!(rank(&docs, "zebra", 8).is_empty());
        assert_eq!(rank(&docs, "returns", 1).len(), 1);
    }
}
