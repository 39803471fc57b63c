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
        // pi's words, the servers with resources in the session's order.
        self.servers.iter().find(|c| c.config.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.servers.iter().map(|c| c.config.name.as_str()).collect();
            match known.is_empty() {
                true => format!("MCP server \"{name}\" has no resources"),
                false => {
                    format!("MCP server \"{name}\" has no resources. Servers with resources: {}", known.join(", "))
                }
            }
        })
    }

    /// One page of one server (`server`, `cursor`), or every page of every
    /// server; a server that cannot be listed is named under `errors`.
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
                            let mut tagged = serde_json::Map::new();
                            tagged.insert("server".into(), json!(server));
                            if let Some(o) = r.as_object() {
                                for (k, v) in o {
                                    if k != "icons" && k != "_meta" && k != "server" {
                                        tagged.insert(k.clone(), v.clone());
                                    }
                                }
                            }
                            // A resource without a name goes by its URI.
                            if !tagged.contains_key("name")
                                && let Some(uri) = r.get("uri").or_else(|| r.get("uriTemplate"))
                            {
                                tagged.insert("name".into(), uri.clone());
                            }
                            Value::Object(tagged)
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (server, cursor) = (string_argument(args, "server")?, string_argument(args, "cursor")?);
        if let Some(server) = server {
            let conn = self.server(&server)?;
            let page = conn.list_page(templates, cursor).await?;
            let mut out = json!({"server": server, key: tag(&server, &page)});
            if let Some(next) = page.get("nextCursor").filter(|c| !c.is_null() && c.as_str() != Some("")) {
                out["nextCursor"] = next.clone();
            }
            return Ok(out);
        }
        if cursor.is_some() {
            return Err("cursor can only be used when a server is specified".to_string());
        }
        let mut servers: Vec<&Arc<Connection>> = self.servers.iter().collect();
        servers.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        let listed = futures::future::join_all(servers.iter().map(|conn| async move {
            let mut items = Vec::new();
            let mut cursor = None;
            loop {
                let page = conn.list_page(templates, cursor.take()).await?;
                items.extend(tag(&conn.config.name, &page));
                match page.get("nextCursor").and_then(Value::as_str) {
                    Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                    _ => break Ok::<_, String>(items),
                }
            }
        }))
        .await;
        let mut all = Vec::new();
        let mut errors = Vec::new();
        for (conn, result) in servers.iter().zip(listed) {
            match result {
                Ok(items) => all.extend(items),
                Err(e) => errors.push(json!({"server": conn.config.name, "error": e})),
            }
        }
        let mut out = json!({ key: all });
        if !errors.is_empty() {
            out["errors"] = Value::Array(errors);
        }
        Ok(out)
    }

    /// `read_mcp_resource`: the resource's contents as model content (each
    /// labelled with its URI when there are several).
    async fn read(&self, args: &Value, temp_dir: &std::path::Path) -> Result<ToolOutput, String> {
        let (server, uri) = (string_argument(args, "server")?, string_argument(args, "uri")?);
        let server = server.ok_or("server must be provided")?;
        let uri = uri.ok_or("uri must be provided")?;
        let conn = self.server(&server)?;
        let contents = conn.read_resource(&uri).await?;
        let items: Vec<Value> = contents.as_array().cloned().unwrap_or_default();
        let mut blocks = Vec::new();
        for item in &items {
            if items.len() > 1 {
                let label = item.get("uri").and_then(Value::as_str).unwrap_or_default();
                blocks.push(ContentBlock::text(format!("{label}:")));
            }
            blocks.push(resource_content(item, temp_dir));
        }
        if blocks.is_empty() {
            blocks.push(ContentBlock::text(format!("Resource {uri} is empty.")));
        }
        let (content, full_path) = limit_content(blocks, temp_dir);
        let contents: Vec<Value> = items
            .into_iter()
            .map(|mut c| {
                if let Some(o) = c.as_object_mut() {
                    o.remove("_meta");
                }
                c
            })
            .collect();
        Ok(ToolOutput {
            content,
            details: Some(details(&conn.config.name, READ_RESOURCE_TOOL, full_path)),
            structured_content: Some(json!({"server": conn.config.name, "uri": uri, "contents": contents})),
            ..Default::default()
        })
    }
}

/// A string argument, trimmed (empty is absent); another type is an error.
fn string_argument(args: &Value, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(_) => Err(format!("{key} must be a string")),
    }
}

/// The details of a resource tool's result (pi's `{server, tool}`).
fn details(server: &str, tool: &str, full_output_path: Option<String>) -> Value {
    let mut details = json!({"server": server, "tool": tool});
    if let Some(path) = full_output_path {
        details["fullOutputPath"] = json!(path);
    }
    details
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
                    let (content, full_path) = limit_content(vec![ContentBlock::text(text)], &ctx.temp_dir);
                    let server = string_argument(&args, "server").ok().flatten().unwrap_or_default();
                    Ok::<_, String>(ToolOutput {
                        content,
                        details: Some(details(&server, self.kind.name(), full_path)),
                        structured_content: Some(listed),
                        ..Default::default()
                    })
                }
                ResourceToolKind::Read => self.read(&args, &ctx.temp_dir).await,
            }
        };
        tokio::select! {
            r = run => r.unwrap_or_else(ToolOutput::error),
            _ = ctx.cancel.cancelled() => ToolOutput::error("Operation aborted"),
        }
    }
}
