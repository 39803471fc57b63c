//! The agent's side of MCP: starting the session's servers (with the one
//! start-up warning), the tools of each model call, and the first prompt's
//! wait for servers whose tools must be declared in its request.

use std::sync::Arc;

use super::actor::Agent;
use super::internal::Internal;
use super::run::RunSetup;
use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::mcp::McpManager;
use crate::mcp::turn::{CODEMODE, Reach};
use crate::message::AgentMessage;
use crate::provider::ToolSpec;
use crate::tools::ToolRegistry;

/// Start connecting; report configuration errors and failed servers once,
/// as a warning notification, when every server has settled.
pub(super) fn start_mcp(
    options: crate::mcp::McpOptions,
    internal: &tokio::sync::mpsc::Sender<Internal>,
) -> Arc<McpManager> {
    let mcp = McpManager::start(options);
    if !mcp.is_empty() {
        let (mcp, internal) = (mcp.clone(), internal.clone());
        tokio::spawn(async move {
            if let Some(message) = mcp.startup_report().await {
                tracing::warn!("{message}");
                let request = ExtensionUiRequest {
                    id: uuid::Uuid::new_v4().to_string(),
                    extension: "mcp".to_string(),
                    kind: ExtensionUiKind::Notify { message, notify_type: Some("warning".to_string()) },
                };
                let _ = internal.send(Internal::Event(Box::new(AgentEvent::ExtensionUiRequest(request)))).await;
            }
        });
    }
    mcp
}

/// Wait for `direct` servers, then add the `<mcp_servers>` section.
pub(super) async fn before_prompt(s: &mut RunSetup) {
    let Some(mcp) = &s.mcp else { return };
    mcp.wait_direct().await;
    if let Some(section) = mcp.prompt_section(s.reach.codemode, s.reach.tool_search) {
        s.system_prompt.push_str("\n\n");
        s.system_prompt.push_str(&section);
    }
}

/// The tools of the next model call.
/// `context`: the conversation the call is made with (tools found by
/// `tool_search` on this branch are declared).
pub(super) fn turn_tools(s: &RunSetup, context: &[AgentMessage]) -> (ToolRegistry, Vec<ToolSpec>) {
    crate::mcp::turn::turn_tools(&s.tools, &s.tool_specs, s.mcp.as_ref(), s.reach, context)
}

impl Agent {
    /// Whether `codemode` and `tool_search` are on.
    pub(super) fn reach(&self) -> Reach {
        Reach::of(&self.active_tools, Some(&self.mcp))
    }

    /// System prompt lines for the indirect tools that are on.
    pub(super) fn reach_summaries(&self) -> Vec<(String, String)> {
        let reach = self.reach();
        [(reach.codemode, CODEMODE), (reach.tool_search, crate::mcp::search::TOOL_SEARCH)]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| (name.to_string(), crate::system_prompt::tool_summary(name).to_string()))
            .collect()
    }
}
