//! The agent's side of MCP: the built-in `/mcp` command, which indirect
//! tools (`codemode`, `tool_search`) are on, and the servers extensions
//! register (`pi.registerMcpServer()`, announced as `mcp_servers_change`). Starting the servers is
//! `mcp_start.rs`; a run's MCP tools and first-prompt wait are in `run.rs`.

use super::Agent;
use crate::agent::extension_state::ExtSignal;
use crate::agent::internal::Internal;
use serde_json::{Value, json};

use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::mcp::command::{self as mcp_command, Notice};
use crate::mcp::turn::{CODEMODE, Reach};
use crate::op::{CommandInfo, CommandSource, RequestTag};

/// The notification a `/mcp` command answers with.
pub(super) fn notice_event(notice: Notice) -> AgentEvent {
    AgentEvent::ExtensionUiRequest(Box::new(ExtensionUiRequest {
        id: uuid::Uuid::new_v4().to_string(),
        extension: mcp_command::NAME.to_string(),
        kind: ExtensionUiKind::Notify { message: notice.text, notify_type: Some(notice.level.to_string()) },
    }))
}

impl Agent {
    /// The built-in commands `get_commands` lists after the extensions' (pi
    /// 1.6.0 lists its built-in `mcp` there; `llama` is left out: in RPC mode
    /// pi only answers that it needs the terminal UI).
    pub(super) fn builtin_commands(&self) -> Vec<CommandInfo> {
        if !self.mcp.command_available() || self.ext.handle().find_command("/mcp").is_some() {
            return Vec::new();
        }
        let path = self.mcp_command_path();
        vec![CommandInfo {
            name: mcp_command::NAME.to_string(),
            description: Some(mcp_command::DESCRIPTION.to_string()),
            source: CommandSource::Extension,
            location: None,
            source_info: Some(crate::resources::extension_source_info(
                &path,
                self.workspace.agent_dir(),
                self.workspace.cwd(),
            )),
            path: Some(path),
        }]
    }

    /// The arguments when `message` invokes a built-in command (an extension's
    /// own command of that name comes first).
    pub(super) fn builtin_invocation<'m>(&self, message: &'m str) -> Option<&'m str> {
        let args = mcp_command::invocation(message)?;
        (self.mcp.command_available() && self.ext.handle().find_command(message).is_none()).then_some(args)
    }

    /// Run `/mcp <args>`: its notifications and dialogs, then the prompt's
    /// `handled` reply (as an extension command's).
    pub(super) fn run_builtin_command(&mut self, tag: Option<RequestTag>, args: String) {
        self.ext.command_started();
        let (mcp, agent_dir, internal) =
            (self.mcp.clone(), self.workspace.agent_dir().to_path_buf(), self.channels.internal());
        let open_url = self.mcp.factories.open_url();
        let ui = super::mcp_command_ui::McpCommandUi::new(self.ext.handle().clone(), internal.clone(), open_url);
        tokio::spawn(async move {
            let cancel = tokio_util::sync::CancellationToken::new();
            if let Some(notice) = mcp.command(&args, &agent_dir, &ui, &cancel).await {
                ui.notify_now(notice_event(notice)).await;
            }
            let done = ExtSignal::CommandDone { tag, invocation: mcp_command::NAME.to_string(), error: None };
            let _ = internal.send(Internal::Extension(Box::new(done))).await;
        });
    }

    /// `/mcp <args>` of an SDK session (the `/mcp` that pi's
    /// `createMcpExtension()` registers inside it): the command run over
    /// that session's own MCP servers (`session`; the running session's
    /// when it has none open), as the session's own `/mcp` runs, its notice
    /// answered as `{text, level}` for the SDK session's UI (`null` when
    /// the command answered through the dialogs).
    pub(super) fn sdk_session_mcp_command(
        &self,
        ext_id: usize,
        params: &Value,
        reply: tokio::sync::oneshot::Sender<Result<Value, String>>,
    ) {
        let args = params.get("args").and_then(Value::as_str).unwrap_or_default().to_string();
        // The SDK session's own servers (sdk_session_conns.rs) while they are open, and the
        // command's UI there (`ui: true`: the shim holds its `ctx.ui`), as pi's MCP extension has it.
        let id = params.get("session").and_then(Value::as_str);
        let session = id.and_then(|id| Some((id, self.ext.sdk_mcp().get(id)?)));
        let owner = self.ext.handle().get(ext_id).filter(|_| params.get("ui").and_then(Value::as_bool) == Some(true));
        let ui: Box<dyn crate::mcp::sign_in_command::CommandUi> = match (&session, owner) {
            (Some((id, mcp)), Some(owner)) => {
                let open_url = mcp.factories.open_url();
                Box::new(super::sdk_session_command_ui::SdkCommandUi::new(owner, id.to_string(), open_url))
            }
            _ => {
                let (internal, open_url) = (self.channels.internal(), self.mcp.factories.open_url());
                Box::new(super::mcp_command_ui::McpCommandUi::new(self.ext.handle().clone(), internal, open_url))
            }
        };
        let mcp = session.map_or_else(|| self.mcp.clone(), |(_, mcp)| mcp);
        let agent_dir = self.workspace.agent_dir().to_path_buf();
        tokio::spawn(async move {
            let cancel = tokio_util::sync::CancellationToken::new();
            let notice = mcp.command(&args, &agent_dir, ui.as_ref(), &cancel).await;
            let answer = notice.map(|n| json!({"text": n.text, "level": n.level})).unwrap_or(Value::Null);
            let _ = reply.send(Ok(answer));
        });
    }

    /// Whether `codemode` and `tool_search` are on: when the session has
    /// them as tools ([`Agent::factory_tools`]) and they are among the active
    /// tools (pi's MCP extension activates them: `mcp_activation.rs`).
    pub(super) fn reach(&self) -> Reach {
        let active = self.toolbox.active_names();
        // As pi's: only a tool the session has, when it is active (a session
        // without it, `--tools` leaving it out or `--no-extensions`, offers none).
        let tools = self.factory_tools();
        let on = |name: &str| tools.contains(&name) && active.iter().any(|t| t == name);
        Reach { codemode: on(CODEMODE), tool_search: on(crate::mcp::search::TOOL_SEARCH) }
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

    /// `registerMcpServer` / `unregisterMcpServer` / `getMcpServers` of
    /// extension `id`: the registered servers after the call, `{servers}`.
    /// A change made once the extension is bound (it finished loading) is
    /// announced to every extension as `mcp_servers_change`, as pi does.
    pub(super) fn extension_mcp_request(&mut self, id: usize, method: &str, params: &Value) -> Result<Value, String> {
        let ext = self.ext.handle().get(id).ok_or("unknown extension")?;
        let path = ext.path_string();
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let changed = match method {
            "registerMcpServer" => {
                let config = params.get("config").cloned().unwrap_or(Value::Null);
                let sources = crate::mcp::ConfigSources {
                    agent_dir: self.workspace.agent_dir(),
                    cwd: self.workspace.cwd(),
                    project_trusted: false,
                    env: None,
                };
                // Checked against the registrations pi has applied: not those of the
                // extensions still loading (this one's own among them).
                self.mcp.register_server(name, &config, &path, &sources, &self.unapplied_registrations())?;
                true
            }
            "unregisterMcpServer" => self.mcp.unregister_server(name, &path),
            _ => false,
        };
        let mut servers = self.mcp.registered_servers();
        // Not while it starts: what one asked about project trust registered before the session is
        // made again here then, unannounced, as pi announces nothing before its session binds.
        if changed && ext.is_ready() && !self.ext.is_starting(id) {
            // The registering extension's own handlers ran in its call, as in pi.
            let event = json!({"type": "mcp_servers_change", "servers": servers});
            self.ext.handle().notify_others(id, "mcp_servers_change", event);
            // pi's MCP extension activates what the new servers' exposures want.
            if self.toolbox.mcp_activation_begun() && self.activate_discovery_tools() {
                self.ext.tools_changed();
            }
        }
        let loading = self.unapplied_registrations();
        servers
            .retain(|server| !server["extensionPath"].as_str().is_some_and(|path| loading.iter().any(|l| l == path)));
        Ok(json!({"servers": servers}))
    }

    /// The extensions whose registrations pi has not applied: pi applies
    /// what an extension registers while its factory runs when the factory
    /// returns (until then `getMcpServers()` leaves it out, and the checks
    /// of a registration do not see it). A reload's or a replacement's new
    /// runtime starts empty: those not made anew yet are left out too.
    fn unapplied_registrations(&self) -> Vec<String> {
        let handle = self.ext.handle();
        handle
            .loaded_paths()
            .into_iter()
            .filter(|(id, _)| {
                handle.get(*id).is_some_and(|e| !e.is_ready() && !e.is_dead()) || self.ext.is_awaiting_replacement(*id)
            })
            .map(|(_, path)| path.to_string_lossy().into_owned())
            .collect()
    }
}
