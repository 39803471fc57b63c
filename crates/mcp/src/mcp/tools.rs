//! MCP server tools and the resource tools (`list_mcp_resources`,
//! `list_mcp_resource_templates`, `read_mcp_resource`) as [`Tool`]s.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::connection::{Connection, RemoteTool};
use super::result::{READ_RESOURCE_TOOL, call_result_output, limit_content, resource_content};
use crate::message::ContentBlock;
use crate::tools::{Tool, ToolContext, ToolOutput, ToolUpdate};

/// One tool of one server, under its model-facing name.
pub struct McpTool {
    pub name: String,
    pub server: String,
    pub remote: RemoteTool,
    parameters: Value,
    description: String,
    conn: Arc<Connection>,
    /// The server offers resources (links then name `read_mcp_resource`).
    readable: bool,
}

impl McpTool {
    pub fn new(name: String, conn: Arc<Connection>, remote: RemoteTool, readable: bool) -> McpTool {
        let mut parameters = remote.input_schema.clone();
        if let Some(obj) = parameters.as_object_mut() {
            obj.entry("type").or_insert(json!("object"));
            obj.entry("properties").or_insert(json!({}));
        } else {
            parameters = json!({"type": "object", "properties": {}});
        }
        let server = conn.config.name.clone();
        let description = match remote.description.trim() {
            "" => format!("MCP tool {} from server {server}", remote.name),
            d => d.to_string(),
        };
        McpTool { name, server, remote, parameters, description, conn, readable }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let call = self.conn.call_tool(&self.remote.name, args, &ctx.cancel, Some(tx));
        tokio::pin!(call);
        let details = json!({"server": self.server, "tool": self.remote.name});
        let result = loop {
            tokio::select! {
                r = &mut call => break r,
                Some(progress) = rx.recv() => ctx.update(ToolUpdate { content: vec![ContentBlock::text(progress)], details: Some(details.clone()) }),
            }
        };
        match result {
            Ok(result) => call_result_output(&self.server, &self.remote.name, &result, self.readable, &ctx.temp_dir),
            Err(e) => ToolOutput::error(e),
        }
    }
}

/// Which of the three resource tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceToolKind {
    List,
    Templates,
    Read,
}

impl ResourceToolKind {
    pub const ALL: [ResourceToolKind; 3] =
        [ResourceToolKind::List, ResourceToolKind::Templates, ResourceToolKind::Read];

    pub fn name(self) -> &'static str {
        match self {
            ResourceToolKind::List => "list_mcp_resources",
            ResourceToolKind::Templates => "list_mcp_resource_templates",
            ResourceToolKind::Read => READ_RESOURCE_TOOL,
        }
    }
}

/// A resource tool over every server with resources.
pub struct ResourceTool {
    kind: ResourceToolKind,
    servers: Vec<Arc<Connection>>,
    description: String,
    parameters: Value,
}

impl ResourceTool {
    pub fn new(kind: ResourceToolKind, servers: Vec<Arc<Connection>>) -> ResourceTool {
        let list_params = json!({"type": "object", "properties": {
            "server": {"type": "string", "description": "MCP server name. Omit to list every server with resources."},
            "cursor": {"type": "string", "description": "Opaque cursor from a previous call with the same server; omit for the first page."}
        }, "additionalProperties": false});
        let (description, parameters) = match kind {
            ResourceToolKind::List => (
                "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.",
                list_params,
            ),
            ResourceToolKind::Templates => (
                "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.",
                list_params,
            ),
            ResourceToolKind::Read => (
                "Read a specific resource from an MCP server given the server name and resource URI.",
                json!({"type": "object", "properties": {
                    "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
                    "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."}
                }, "required": ["server", "uri"], "additionalProperties": false}),
            ),
        };
        ResourceTool { kind, servers, description: description.to_string(), parameters }
    }

    fn server(&self, name: &str) -> Result<&Arc<Connection>, String> {
        self.servers.iter().find(|c| c.config.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.servers.iter().map(|c| c.config.name.as_str()).collect();
            format!("Unknown MCP server \"{name}\" with resources (known: {})", known.join(", "))
        })
    }

    async fn list(&self, args: &Value) -> Result<Value, String> {
        let templates = self.kind == ResourceToolKind::Templates;
        let key = if templates { "resourceTemplates" } else { "resources" };
        let tag = |server: &str, page: &Value| -> Vec<Value> {
            page.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter(|r| !is_app_resource(r))
                        .map(|r| {
                            let mut r = r.clone();
                            if let Some(o) = r.as_object_mut() {
                                o.remove("icons");
                                o.remove("_meta");
                                o.insert("server".into(), json!(server));
                            }
                            r
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(server) = args.get("server").and_then(Value::as_str) {
            let conn = self.server(server)?;
            let cursor = args.get("cursor").and_then(Value::as_str).map(str::to_string);
            let page = conn.list_page(templates, cursor).await?;
            let mut out = json!({"server": server, key: tag(server, &page)});
            if let Some(next) = page.get("nextCursor").filter(|c| !c.is_null()) {
                out["nextCursor"] = next.clone();
            }
            return Ok(out);
        }
        let mut all = Vec::new();
        for conn in &self.servers {
            let mut cursor = None;
            loop {
                let page = conn.list_page(templates, cursor.take()).await?;
                all.extend(tag(&conn.config.name, &page));
                match page.get("nextCursor").and_then(Value::as_str) {
                    Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                    _ => break,
                }
            }
        }
        Ok(json!({ key: all }))
    }
}

/// MCP Apps resources, which pi-rpc cannot render.
fn is_app_resource(resource: &Value) -> bool {
    let uri = resource.get("uri").or_else(|| resource.get("uriTemplate")).and_then(Value::as_str).unwrap_or("");
    let mime = resource.get("mimeType").and_then(Value::as_str).unwrap_or("");
    uri.starts_with("ui://") || mime.starts_with("text/html;profile=mcp-app")
}

#[async_trait]
impl Tool for ResourceTool {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let run = async {
            match self.kind {
                ResourceToolKind::List | ResourceToolKind::Templates => {
                    let listed = self.list(&args).await?;
                    let text = serde_json::to_string(&listed).unwrap_or_default();
                    let (content, _) = limit_content(vec![ContentBlock::text(text)], &ctx.temp_dir);
                    Ok::<_, String>(ToolOutput { content, structured_content: Some(listed), ..Default::default() })
                }
                ResourceToolKind::Read => {
                    let server = args.get("server").and_then(Value::as_str).unwrap_or_default();
                    let uri = args.get("uri").and_then(Value::as_str).unwrap_or_default();
                    let contents = self.server(server)?.read_resource(uri).await?;
                    let blocks: Vec<ContentBlock> = contents
                        .as_array()
                        .map(|items| items.iter().map(|c| resource_content(c, &ctx.temp_dir)).collect())
                        .unwrap_or_default();
                    let (content, _) = limit_content(blocks, &ctx.temp_dir);
                    let structured = json!({"server": server, "uri": uri, "contents": contents});
                    Ok(ToolOutput {
                        content,
                        details: Some(json!({"server": server, "uri": uri})),
                        structured_content: Some(structured),
                        ..Default::default()
                    })
                }
            }
        };
        tokio::select! {
            r = run => r.unwrap_or_else(ToolOutput::error),
            _ = ctx.cancel.cancelled() => ToolOutput::error("Operation aborted"),
        }
    }
}
