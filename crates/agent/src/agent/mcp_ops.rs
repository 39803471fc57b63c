//! The agent's side of MCP: starting the session's servers (with the one
//! start-up warning), the tools of each model call, the first prompt's
//! wait for servers whose tools must be declared in its request, and the
//! built-in `/mcp` command.

use std::sync::Arc;

use super::actor::Agent;
use super::extension_hooks::ExtSignal;
use super::internal::Internal;
use super::run::RunSetup;
use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::mcp::McpManager;
use crate::mcp::command::{self as mcp_command, Notice};
use crate::mcp::turn::{CODEMODE, Reach};
use crate::message::AgentMessage;
use crate::op::{CommandInfo, CommandSource, RequestTag};
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

/// Wait for `direct` servers, then add the `mcp_servers` section.
pub(super) async fn before_prompt(s: &mut RunSetup) {
    let Some(mcp) = &s.mcp else { return };
    mcp.wait_direct().await;
    if let Some(section) = mcp.prompt_section(s.reach.codemode, s.reach.tool_search) {
        let inner = section.strip_prefix("<mcp_servers>\n").and_then(|t| t.strip_suffix("\n</mcp_servers>"));
        let inner = inner.unwrap_or(&section).to_string();
        s.extra_sections.push((MCP_SERVERS_SECTION.to_string(), inner));
    }
}

/// The prompt section naming the MCP servers whose tools are not declared.
const MCP_SERVERS_SECTION: &str = "mcp_servers";

/// The tools of the next model call.
/// `context`: the conversation the call is made with (tools found by
/// `tool_search` on this branch are declared).
pub(super) fn turn_tools(s: &RunSetup, context: &[AgentMessage]) -> (ToolRegistry, Vec<ToolSpec>) {
    crate::mcp::turn::turn_tools(&s.tools, &s.tool_specs, s.mcp.as_ref(), s.reach, context)
}

/// The notification a `/mcp` command answers with.
fn notice_event(notice: Notice) -> AgentEvent {
    AgentEvent::ExtensionUiRequest(ExtensionUiRequest {
        id: uuid::Uuid::new_v4().to_string(),
        extension: mcp_command::NAME.to_string(),
        kind: ExtensionUiKind::Notify { message: notice.text, notify_type: Some(notice.level.to_string()) },
    })
}

impl Agent {
    /// The built-in commands `get_commands` lists after the extensions' (pi
    /// 1.6.0 lists its built-in `mcp` there; `llama` is left out: in RPC mode
    /// pi only answers that it needs the terminal UI).
    pub(super) fn builtin_commands(&self) -> Vec<CommandInfo> {
        if !self.mcp.command_available() || self.ext.handle.find_command("/mcp").is_some() {
            return Vec::new();
        }
        vec![CommandInfo {
            name: mcp_command::NAME.to_string(),
            description: Some(mcp_command::DESCRIPTION.to_string()),
            source: CommandSource::Extension,
            location: None,
            path: Some(mcp_command::PATH.to_string()),
        }]
    }

    /// The arguments when `message` invokes a built-in command (an extension's
    /// own command of that name comes first).
    pub(super) fn builtin_invocation<'m>(&self, message: &'m str) -> Option<&'m str> {
        let args = mcp_command::invocation(message)?;
        (self.mcp.command_available() && self.ext.handle.find_command(message).is_none()).then_some(args)
    }

    /// Run `/mcp <args>`: its notification, then the prompt's `handled` reply
    /// (as an extension command's).
    pub(super) fn run_builtin_command(&mut self, tag: Option<RequestTag>, args: String) {
        self.ext.command_started();
        let (mcp, agent_dir, internal) = (self.mcp.clone(), self.agent_dir.clone(), self.internal_tx.clone());
        tokio::spawn(async move {
            let notice = mcp.command(&args, &agent_dir).await;
            let _ = internal.send(Internal::Event(Box::new(notice_event(notice)))).await;
            let done = ExtSignal::CommandDone { tag, invocation: mcp_command::NAME.to_string(), error: None };
            let _ = internal.send(Internal::Extension(Box::new(done))).await;
        });
    }

    /// Whether `codemode` and `tool_search` are on.
    pub(super) fn reach(&self) -> Reach {
        Reach::of(&self.active_tools, Some(&self.mcp))
    }

    /// The system prompt's entries for the indirect tools that are on.
    pub(super) fn reach_tools(&self) -> Vec<crate::system_prompt::PromptTool> {
        let reach = self.reach();
        [(reach.codemode, CODEMODE), (reach.tool_search, crate::mcp::search::TOOL_SEARCH)]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| crate::system_prompt::PromptTool::builtin(name))
            .collect()
    }
}
