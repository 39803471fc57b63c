//! The MCP tools of an SDK session (pi's `createMcpExtension()` loaded in a
//! session an extension made with `createAgentSession`). pi 1.6.0 connects
//! the configured servers again for that session and registers their tools
//! there as each server connects (and again when its tool list changes);
//! pi-rpc does the same on the session's own connections
//! (sdk_session_conns.rs): `mcpTools` opens them, lists their tools for
//! the sub-session to register once they changed since the listing it has
//! (session-mcp-tools.cjs watches so), takes the servers the session's
//! extensions registered, reports the servers that need attention and
//! closes them; `mcpCallTool` runs one of the tools for the sub-session,
//! its progress streamed back and cancelled when the call's signal aborts.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Agent;
use super::sdk_session_conns::{SessionPlace, sync_registered};
use crate::mcp::McpManager;
use crate::mcp::config::Exposure;
use crate::tools::ToolUpdate;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot::Sender;
use tokio_util::sync::CancellationToken;

/// pi's tool exposure of an MCP exposure: tools of `codemode` servers are
/// registered `deferred` (both are left out of codemode's description).
fn tool_exposure(exposure: Exposure) -> &'static str {
    match exposure {
        Exposure::Codemode => Exposure::Deferred.as_str(),
        other => other.as_str(),
    }
}

/// Words of a codemode script that make it reach every tool (pi's
/// discovery globals): it waits for every server then.
const DISCOVERY_GLOBALS: [&str; 4] = ["searchTools", "describeNamespace", "describeTool", "ALL_TOOLS"];

/// The servers `wait` asks to wait for, waited for: `"direct"` those with
/// direct tools (pi's first prompt), `"all"` every one (`tool_search`, the
/// resource tools), `{script}` those a codemode script reaches (pi's
/// `reachesTools`), nothing otherwise.
async fn wait_for_servers(mcp: &McpManager, wait: Option<&Value>) -> Option<&'static str> {
    match wait {
        Some(Value::String(which)) if which == "direct" => return mcp.wait_direct().await,
        Some(Value::String(which)) if which == "all" => mcp.wait_for(None).await,
        Some(Value::Object(reach)) => {
            let script = reach.get("script").and_then(Value::as_str).unwrap_or_default();
            let words = script.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.into_iter().any(|word| DISCOVERY_GLOBALS.contains(&word)) {
                mcp.wait_for(None).await;
            } else {
                let named = mcp.servers_named_in(script);
                if !named.is_empty() {
                    mcp.wait_for(Some(&named)).await;
                }
            }
        }
        _ => {}
    }
    None
}

/// The tools the servers offer now, as the sub-session registers them
/// (`{name, label, description, parameters, exposure, namespace?,
/// outputSchema?}`; a server's tool has pi's result schema, the resource
/// tools none), and a version that changes with them.
fn listing(mcp: &McpManager) -> (Vec<Value>, String) {
    let tools: Vec<Value> = mcp
        .tools()
        .iter()
        .map(|exposed| {
            let mut tool = json!({
                "name": exposed.tool.name(),
                "label": exposed.label,
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
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&tools).unwrap_or_default().hash(&mut hasher);
    (tools, format!("{:x}", hasher.finish()))
}

/// The listing once it is not `after` any more (at once without `after`);
/// None when `cancel` came first.
async fn changed_listing(
    mcp: &McpManager,
    after: Option<&str>,
    cancel: &CancellationToken,
) -> Option<(Vec<Value>, String)> {
    loop {
        // Watched before listing, so a change in between is not missed.
        let changed = mcp.state_changed();
        let (tools, version) = listing(mcp);
        if after != Some(version.as_str()) {
            return Some((tools, version));
        }
        tokio::select! {
            _ = changed => {}
            _ = cancel.cancelled() => return None,
        }
    }
}

impl Agent {
    /// The manager of the SDK session `params.session`: opened when
    /// `params.open` (`{cwd, projectTrusted}`) says where the session is,
    /// then its registered servers made `params.registered` when given.
    fn sdk_session_manager(&self, ext_id: usize, params: &Value) -> Result<Arc<McpManager>, String> {
        let id = params.get("session").and_then(Value::as_str).ok_or("mcpTools: no session")?;
        let open = params.get("open");
        let place = SessionPlace {
            agent_dir: self.workspace.agent_dir(),
            cwd: open
                .and_then(|o| o.get("cwd"))
                .and_then(Value::as_str)
                .map_or_else(|| self.workspace.cwd().to_path_buf(), |cwd| self.workspace.cwd().join(cwd)),
            project_trusted: open.and_then(|o| o.get("projectTrusted")).and_then(Value::as_bool).unwrap_or(false),
            opening: open,
        };
        let manager = match open {
            Some(opening) => {
                // The sub-session's `createTransport`, `credentials` and `openUrl`, in the process of extension `ext_id`.
                let owner = self.ext.handle().get(ext_id);
                let hosted = |manager: &McpManager| {
                    if let Some(owner) = owner {
                        super::sdk_session_hosted::apply(manager, opening, owner, id);
                    }
                };
                let manager = self.ext.sdk_mcp().open(id, &place, hosted);
                manager.factories.set_provider_token(super::mcp_provider_token::reader(&self.channels.internal()));
                manager
            }
            None => self.ext.sdk_mcp().get(id).ok_or("this SDK session's MCP connections are closed")?,
        };
        if let Some(registered) = params.get("registered").and_then(Value::as_array) {
            sync_registered(&manager, registered, &place);
        }
        Ok(manager)
    }

    /// `mcpTools` `{session, open?, registered?, close?, report?, only?,
    /// wait?, after?}` of an SDK session: with `close` its connections are
    /// shut down (answered `{}` once they are); with `report` pi's start-up
    /// warning once its servers settled (`{report}`, null when all is
    /// well), of the registered servers `only` names when given (pi's
    /// report of servers registered while the session runs); otherwise, once the servers `wait` names settled
    /// ([`wait_for_servers`]) and the tools changed from the listing
    /// version `after`, every tool they offer with its `version`; which
    /// discovery tool the servers' exposures ask for (`needsCodemode`,
    /// `needsToolSearch`), `autoEnableCodemode`, pi's warnings when neither
    /// is active (`unreachable`, `unreachableAutoOff`), and the `mcp_servers`
    /// section of its system prompt (pi's, `McpManager::servers_section`).
    pub(super) fn sdk_session_mcp_tools(
        &self,
        ext_id: usize,
        params: &Value,
        cancel: CancellationToken,
        reply: Sender<Result<Value, String>>,
    ) {
        if params.get("close").and_then(Value::as_bool) == Some(true) {
            let id = params.get("session").and_then(Value::as_str).unwrap_or_default().to_string();
            let conns = self.ext.sdk_mcp().clone();
            tokio::spawn(async move {
                conns.close(&id).await;
                let _ = reply.send(Ok(json!({})));
            });
            return;
        }
        let mcp = match self.sdk_session_manager(ext_id, params) {
            Ok(mcp) => mcp,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        if params.get("report").and_then(Value::as_bool) == Some(true) {
            // `only`: the servers registered while the session runs, which pi reports alone.
            let only: Option<Vec<String>> = params
                .get("only")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect());
            tokio::spawn(async move {
                let report = async {
                    match &only {
                        Some(names) => mcp.report_registered(names).await,
                        None => mcp.report_all().await,
                    }
                };
                let report = tokio::select! {
                    report = report => report,
                    _ = cancel.cancelled() => None,
                };
                let _ = reply.send(Ok(json!({ "report": report })));
            });
            return;
        }
        let wait = params.get("wait").cloned();
        let after = params.get("after").and_then(Value::as_str).map(str::to_string);
        tokio::spawn(async move {
            let still_connecting = tokio::select! {
                note = wait_for_servers(&mcp, wait.as_ref()) => note,
                _ = cancel.cancelled() => None,
            };
            let Some((tools, version)) = changed_listing(&mcp, after.as_deref(), &cancel).await else {
                let _ = reply.send(Err("withdrawn".to_string()));
                return;
            };
            let answer = json!({
                "tools": tools,
                "version": version,
                "needsCodemode": mcp.wants(Exposure::Codemode),
                "needsToolSearch": mcp.wants(Exposure::Deferred),
                "autoEnableCodemode": mcp.auto_enable_codemode(),
                "unreachable": crate::mcp::UNREACHABLE_WARNING,
                "unreachableAutoOff": crate::mcp::UNREACHABLE_WARNING_AUTO_OFF,
                "section": mcp.servers_section(),
                "stillConnecting": still_connecting,
            });
            let _ = reply.send(Ok(answer));
        });
    }

    /// `mcpCallTool` `{session, name, args, toolCallId}`: the SDK session's
    /// MCP tool `name` run with `args` on its connections, answered
    /// `{content, details?, isError}`. Its progress goes to `updates`;
    /// `cancel` cancels it (the server is sent MCP's cancellation).
    pub(super) fn sdk_session_mcp_call(
        &self,
        params: &Value,
        cancel: CancellationToken,
        updates: Option<UnboundedSender<ToolUpdate>>,
        reply: Sender<Result<Value, String>>,
    ) {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let args = params.get("args").cloned().unwrap_or_else(|| json!({}));
        let call_id = params.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let cwd = self.workspace.cwd().to_path_buf();
        let session = params.get("session").and_then(Value::as_str).unwrap_or_default();
        let Some(mcp) = self.ext.sdk_mcp().get(session) else {
            let _ = reply.send(Err(format!("MCP tool \"{name}\" is no longer available.")));
            return;
        };
        tokio::spawn(async move {
            let Some(exposed) = mcp.tools().into_iter().find(|t| t.tool.name() == name) else {
                let _ = reply.send(Err(format!("MCP tool \"{name}\" is no longer available.")));
                return;
            };
            let mut ctx = crate::tools::ToolContext::new(cwd);
            ctx.tool_call_id = call_id;
            ctx.cancel = cancel;
            ctx.updates = updates;
            let out = exposed.tool.execute(args, ctx).await;
            let _ = reply.send(Ok(crate::extensions::tool_output_json(&out)));
        });
    }
}
