//! The MCP tools of an SDK session (pi's `createMcpExtension()` loaded in a
//! session an extension made with `createAgentSession`). pi 1.6.0 connects
//! the configured servers again for that session and registers their tools
//! there; pi-rpc offers the tools of its own connections (the servers the
//! running session connected, from the same configuration), so no server
//! runs twice: `mcpTools` lists them for the sub-session to register and
//! `mcpCallTool` runs one of them for the sub-session.

use super::Agent;
use crate::mcp::config::Exposure;
use serde_json::{Value, json};
use tokio::sync::oneshot::Sender;

/// pi's tool exposure of an MCP exposure: tools of `codemode` servers are
/// registered `deferred` (both are left out of codemode's description).
fn tool_exposure(exposure: Exposure) -> &'static str {
    match exposure {
        Exposure::Codemode => Exposure::Deferred.as_str(),
        other => other.as_str(),
    }
}

impl Agent {
    /// `mcpTools`: once the servers settled, every tool they offer
    /// (`{name, description, parameters, exposure, namespace?, outputSchema?}`;
    /// a server's tool has pi's result schema, the resource tools none),
    /// which discovery tool their exposures ask for (`codemode`, `toolSearch`)
    /// and pi's warning when neither is active.
    pub(super) fn sdk_session_mcp_tools(&self, reply: Sender<Result<Value, String>>) {
        let mcp = self.mcp.clone();
        tokio::spawn(async move {
            mcp.wait_for(None).await;
            let tools: Vec<Value> = mcp
                .tools()
                .iter()
                .map(|exposed| {
                    let mut tool = json!({
                        "name": exposed.tool.name(),
                        "description": exposed.tool.description(),
                        "parameters": exposed.tool.parameters(),
                        "exposure": tool_exposure(exposed.exposure),
                    });
                    // A server's tool resolves in scripts to its `CallToolResult` (pi's result schema).
                    if let Some(namespace) = &exposed.namespace {
                        tool["namespace"] = json!(namespace);
                        tool["outputSchema"] = pi_mcp::codemode::mcp_result_schema(exposed.output_schema.as_ref());
                    }
                    tool
                })
                .collect();
            let answer = json!({
                "tools": tools,
                "codemode": mcp.codemode_wanted(),
                "toolSearch": mcp.tool_search_wanted(),
                "unreachable": crate::mcp::UNREACHABLE_WARNING,
            });
            let _ = reply.send(Ok(answer));
        });
    }

    /// `mcpCallTool` `{name, args, toolCallId}`: the MCP tool `name` run with
    /// `args` by pi-rpc's MCP client, answered `{content, details?, isError}`.
    pub(super) fn sdk_session_mcp_call(&self, params: &Value, reply: Sender<Result<Value, String>>) {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let args = params.get("args").cloned().unwrap_or_else(|| json!({}));
        let call_id = params.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let (mcp, cwd) = (self.mcp.clone(), self.workspace.cwd().to_path_buf());
        tokio::spawn(async move {
            let Some(exposed) = mcp.tools().into_iter().find(|t| t.tool.name() == name) else {
                let _ = reply.send(Err(format!("MCP tool \"{name}\" is no longer available.")));
                return;
            };
            let mut ctx = crate::tools::ToolContext::new(cwd);
            ctx.tool_call_id = call_id;
            let out = exposed.tool.execute(args, ctx).await;
            let _ = reply.send(Ok(crate::extensions::tool_output_json(&out)));
        });
    }
}
