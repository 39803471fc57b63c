//! pi's built-in extension factories applied by an extension
//! (`createCodemodeExtension`, `createMcpExtension`,
//! `createToolSearchExtension`, or a `default` export of one): pi then loads
//! that extension's copy of the built-in in place of its own. pi-rpc keeps
//! its own codemode, MCP client and `tool_search`, and the factory makes the
//! extension their owner: `getAllTools()` lists `codemode`/`tool_search` as
//! the extension's (inactive until `setActiveTools()` or `--tools` names
//! them), `/mcp` is the extension's command. The options pi-rpc honours
//! take effect (and MCP turned off only as pi's built-in extension wakes
//! up with the extension's); those it cannot are refused with a clear error, which the
//! host throws from the factory (so the extension's load fails with an
//! `extension_error`).

use serde_json::{Map, Value, json};

use super::Agent;
use crate::mcp::search::TOOL_SEARCH;
use crate::mcp::turn::CODEMODE;

/// What the host's `createMcpExtension({ loadConfig })` sends, in place of a
/// built-in's name, with what `loadConfig(ctx)` returned at `session_start`.
const LOADED_MCP_CONFIG: &str = "mcp:loadedConfig";

/// The name `getAllTools()` gives a built-in tool's source, as pi's built-in extensions.
fn builtin_path(tool: &str) -> &'static str {
    if tool == CODEMODE { "builtin:codemode" } else { "builtin:tool-search" }
}

impl Agent {
    /// `useBuiltinExtension` `{name, options}` of extension `id`: the
    /// factory of built-in `name` was applied to its `pi`.
    pub(super) fn use_builtin_extension(&mut self, id: usize, params: &Value) -> Result<Value, String> {
        let ext = self.ext.handle().get(id).ok_or("unknown extension")?;
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let empty = Map::new();
        let options = params.get("options").and_then(Value::as_object).unwrap_or(&empty);
        if name == LOADED_MCP_CONFIG {
            return self.load_mcp_config(&ext.path_string(), params.get("options").unwrap_or(&Value::Null));
        }
        let first_claim = self.mcp.factories.owner(name).is_none();
        match name {
            CODEMODE => self.codemode_options(options)?,
            "mcp" => {
                self.mcp_options(options, &ext)?;
                if first_claim {
                    self.mcp_auth_options(&ext, options);
                }
                if first_claim {
                    let before = params.get("commandsBefore").and_then(Value::as_u64).unwrap_or(0);
                    self.mcp.factories.set_mcp_command_slot(before);
                }
            }
            TOOL_SEARCH => {}
            other => return Err(format!("pi has no built-in extension \"{other}\"")),
        }
        self.mcp.factories.claim(name, &ext.path_string())?;
        if first_claim && let Some(warning) = self.mcp.factories.replacement_warning(name, &ext.path_string()) {
            // pi writes it to stderr at start-up, as a warning diagnostic.
            tracing::warn!("{warning}");
        }
        Ok(Value::Null)
    }

    /// The `codemode.mode` / `codemode.inlineBudget` settings, which pi's
    /// codemode reads when the factory's options do not say.
    pub(super) fn apply_codemode_settings(&self) {
        let settings = self.prefs.settings();
        self.mcp.factories.set_codemode_settings(settings.codemode_mode.as_deref(), settings.codemode_inline_budget);
    }

    /// `credentials` and `openUrl`: the extension's store and URL opener
    /// (host calls `mcp_auth`) in place of `mcp-auth.json` and the browser.
    fn mcp_auth_options(&self, ext: &std::sync::Arc<crate::extensions::Extension>, options: &Map<String, Value>) {
        if options.get("credentials").is_some_and(|v| v == &Value::Bool(true)) {
            let store = super::mcp_credentials::ExtensionCredentials::new(ext.clone(), None);
            self.mcp.factories.use_extension_credentials(std::sync::Arc::new(store));
        }
        if options.get("openUrl").is_some_and(|v| v == &Value::Bool(true)) {
            self.mcp.factories.set_open_url(super::mcp_credentials::open_url_of(ext.clone(), None));
        }
    }

    fn codemode_options(&self, options: &Map<String, Value>) -> Result<(), String> {
        // pi takes the options over the `codemode.mode` / `codemode.inlineBudget` settings.
        let mode = match options.get("mode") {
            None | Some(Value::Null) => None,
            Some(Value::String(mode)) => Some(mode.clone()),
            Some(other) => Some(other.to_string()),
        };
        let budget = match options.get("inlineBudget") {
            None | Some(Value::Null) => None,
            Some(budget) => Some(budget.as_f64().filter(|b| b.is_finite()).ok_or_else(|| {
                format!("createCodemodeExtension: `inlineBudget` must be a number of estimated tokens, not {budget}")
            })?),
        };
        self.mcp.factories.set_codemode_options(mode, budget);
        match options.get("models") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(on)) => self.mcp.factories.set_codemode_models(*on),
            Some(other) => return Err(format!("createCodemodeExtension: `models` must be a boolean, not {other}")),
        }
        Ok(())
    }

    fn mcp_options(
        &mut self,
        options: &Map<String, Value>,
        ext: &std::sync::Arc<crate::extensions::Extension>,
    ) -> Result<(), String> {
        let wait = match options.get("startupWaitMs") {
            None | Some(Value::Null) => None,
            Some(ms) => Some(ms.as_f64().filter(|ms| ms.is_finite() && *ms >= 0.0).ok_or_else(|| {
                format!("createMcpExtension: `startupWaitMs` must be a number of milliseconds, not {ms}")
            })?),
        };
        let log_path = match options.get("logPath") {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) => Some(std::path::PathBuf::from(path)),
            Some(other) => return Err(format!("createMcpExtension: `logPath` must be a file path, not {other}")),
        };
        self.wake_mcp();
        if let Some(ms) = wait {
            self.mcp.factories.set_direct_wait(std::time::Duration::from_millis(ms as u64));
        }
        if let Some(path) = log_path {
            self.mcp.factories.server_log.set_path(self.workspace.cwd().join(path));
        }
        let first_claim = self.mcp.factories.owner("mcp").is_none();
        let given = |key: &str| options.get(key).is_some_and(|v| !v.is_null());
        if first_claim && given("createTransport") {
            // Every server connects through the extension's transports from now on.
            let host = super::mcp_transport_host::ExtensionTransports { owner: ext.clone(), session: None };
            self.mcp.factories.set_transport_host(std::sync::Arc::new(host));
        }
        if first_claim && given("loadConfig") {
            // pi reads no mcp.json then: its servers wait for `loadConfig(ctx)` at `session_start`.
            let none = crate::mcp::McpConfig::from_loaded(&json!({ "servers": [] }), &self.mcp_sources());
            self.replace_mcp(self.mcp.reconfigured(none));
        } else if first_claim && given("createTransport") {
            // mcp.json's servers may have connected already: again, through the transports.
            self.replace_mcp(self.mcp.restarted());
        }
        Ok(())
    }

    /// What `loadConfig(ctx)` of the MCP owner `path` returned: its servers
    /// replace the session's (pi calls it at every `session_start`).
    fn load_mcp_config(&mut self, path: &str, loaded: &Value) -> Result<Value, String> {
        if self.mcp.factories.owner("mcp").as_deref() != Some(path) {
            return Err("loadConfig: this extension does not own MCP".to_string());
        }
        let config = crate::mcp::McpConfig::from_loaded(loaded, &self.mcp_sources());
        self.replace_mcp(self.mcp.reconfigured(config));
        Ok(Value::Null)
    }

    fn mcp_sources(&self) -> crate::mcp::ConfigSources<'_> {
        crate::mcp::ConfigSources {
            agent_dir: self.workspace.agent_dir(),
            cwd: self.workspace.cwd(),
            project_trusted: false,
            env: None,
        }
    }

    /// Use `manager` from now on: the registered servers move to it, and the
    /// old one's servers are stopped.
    fn replace_mcp(&mut self, manager: std::sync::Arc<crate::mcp::McpManager>) {
        self.adopt_registered(&manager);
        let old = std::mem::replace(
            &mut self.mcp,
            crate::agent::mcp_start::watch_startup(manager, self.toolbox.active_names(), &self.channels.internal()),
        );
        tokio::spawn(async move { old.shutdown().await });
    }

    /// Register the servers extensions registered so far with `manager` too.
    fn adopt_registered(&self, manager: &crate::mcp::McpManager) {
        let sources = self.mcp_sources();
        let servers = self.mcp.registered_servers();
        // Checked when they were registered (two of one factory may share a namespace, as in pi).
        let checked: Vec<String> =
            servers.iter().filter_map(|s| s["extensionPath"].as_str().map(str::to_string)).collect();
        for server in servers {
            let (name, path) = (server["name"].as_str().unwrap_or_default(), server["extensionPath"].as_str());
            if let Err(error) =
                manager.register_server(name, &server["config"], path.unwrap_or_default(), &sources, &checked)
            {
                tracing::warn!("MCP server {name} registered by {path:?}: {error}");
            }
        }
    }

    /// Turn MCP on when only pi's built-in MCP extension was off (`--no-mcp`,
    /// `--no-extensions`, `-builtin:mcp`): pi then connects the servers
    /// through the extension's copy. The servers extensions registered so
    /// far move to the new manager.
    fn wake_mcp(&mut self) {
        let Some(woken) = self.mcp.wake() else { return };
        self.adopt_registered(&woken);
        self.mcp =
            crate::agent::mcp_start::watch_startup(woken, self.toolbox.active_names(), &self.channels.internal());
    }

    /// `codemode` and `tool_search` when an extension registered them
    /// through pi's factories, or pi's built-in extensions register them
    /// ([`Agent::builtin_extension_tools`]): names `setActiveTools()` may
    /// activate.
    pub(super) fn factory_tools(&self) -> Vec<&'static str> {
        let mut tools: Vec<&'static str> =
            [CODEMODE, TOOL_SEARCH].into_iter().filter(|tool| self.mcp.factories.owner(tool).is_some()).collect();
        tools.extend(self.builtin_extension_tools());
        tools
    }

    /// `codemode` and `tool_search` as pi's built-in extensions
    /// (`builtin:codemode`, `builtin:tool-search`) register them, inactive,
    /// when no extension's factory took them over: unless the built-in is
    /// off (`--no-extensions`, `-builtin:…`), or `--tools`' allowlist does
    /// not match it, as pi registers no tool it does not name (`--no-tools`: none).
    fn builtin_extension_tools(&self) -> Vec<&'static str> {
        let factories = &self.mcp.factories;
        if self.ext.no_tools() {
            return Vec::new();
        }
        [(CODEMODE, "codemode"), (TOOL_SEARCH, "tool-search")]
            .into_iter()
            .filter(|(tool, extension)| {
                factories.owner(tool).is_none() && factories.builtin_loaded(extension) && self.ext.tool_allowed(tool)
            })
            .map(|(tool, _)| tool)
            .collect()
    }

    /// `getAllTools()` entries of the tools of pi's built-in extensions, after
    /// the session's own, as pi lists them: `codemode`, `tool_search` (see
    /// [`Agent::builtin_extension_tools`]), then the MCP servers' tools,
    /// which pi's MCP extension (or the extension owning MCP through its
    /// factory) registers as they connect, with each one's exposure.
    pub(super) fn builtin_tool_listing(&self) -> Vec<Value> {
        let builtins = self.builtin_extension_tools().into_iter().map(|name| {
            let tool: std::sync::Arc<dyn crate::tools::Tool> = match name {
                CODEMODE => std::sync::Arc::new(pi_mcp::codemode::CodemodeTool::new(Vec::new(), None)),
                _ => std::sync::Arc::new(crate::mcp::search::ToolSearch::new(Vec::new(), None)),
            };
            json!({
                "name": tool.name(),
                "description": tool.description(),
                "parameters": tool.parameters(),
                "promptGuidelines": tool.prompt_guidelines(),
                // pi registers both as `model-only`: the model calls them, scripts do not.
                "exposure": "model-only",
                "path": Value::Null,
                "builtinPath": builtin_path(tool.name()),
            })
        });
        let owner = self.mcp.factories.owner("mcp");
        // pi lists them whatever `--tools` names (the allowlist leaves MCP's own alone).
        let mcp = self.mcp.tools().into_iter().map(|exposed| {
            let tool = &exposed.tool;
            json!({
                "name": tool.name(),
                "description": tool.description(),
                "parameters": tool.parameters(),
                "promptGuidelines": tool.prompt_guidelines(),
                // pi's MCP extension registers a `codemode` server's tools as `deferred`
                // (both keep them from the model and codemode's listing).
                "exposure": match exposed.exposure {
                    crate::mcp::Exposure::Codemode => "deferred",
                    other => other.as_str(),
                },
                "path": owner,
                "builtinPath": crate::mcp::command::PATH,
            })
        });
        builtins.chain(mcp).collect()
    }

    /// `getAllTools()` entries of the tools [`Agent::factory_tools`] names,
    /// with their owner's path, in the order the factories were applied.
    pub(super) fn factory_tool_listing(&self) -> Vec<Value> {
        let factories = &self.mcp.factories;
        factories
            .owned()
            .into_iter()
            .filter_map(|name| {
                let tool: std::sync::Arc<dyn crate::tools::Tool> = match name.as_str() {
                    CODEMODE => std::sync::Arc::new(pi_mcp::codemode::CodemodeTool::new(Vec::new(), None)),
                    TOOL_SEARCH => std::sync::Arc::new(crate::mcp::search::ToolSearch::new(Vec::new(), None)),
                    _ => return None,
                };
                Some(json!({
                    "name": tool.name(),
                    "description": tool.description(),
                    "parameters": tool.parameters(),
                    "promptGuidelines": tool.prompt_guidelines(),
                    // pi's codemode and tool_search are `model-only`, whoever registers them.
                    "exposure": "model-only",
                    "path": factories.owner(&name),
                    "builtinPath": builtin_path(tool.name()),
                }))
            })
            .collect()
    }

    /// Where `get_commands` lists built-in command `builtin` among the
    /// extensions' commands `list`: pi's own after them all; the copy an
    /// extension's factory registered among that extension's commands, after
    /// those it had registered before applying the factory (extensions in
    /// load order, as pi lists them).
    pub(super) fn builtin_command_index(
        &self,
        list: &[crate::op::CommandInfo],
        builtin: &crate::op::CommandInfo,
    ) -> usize {
        let Some(owner) =
            builtin.path.as_deref().filter(|path| self.mcp.factories.owner("mcp").as_deref() == Some(*path))
        else {
            return list.len();
        };
        let order: Vec<String> =
            self.ext.handle().loaded_paths().into_iter().map(|(_, path)| path.to_string_lossy().into_owned()).collect();
        let rank = |path: &str| order.iter().position(|p| p == path);
        let owner_rank = rank(owner);
        let slot = self.mcp.factories.mcp_command_slot();
        let mut owners_seen = 0;
        for (index, command) in list.iter().enumerate() {
            let path = command.path.as_deref().unwrap_or_default();
            if path == owner {
                if owners_seen == slot {
                    return index;
                }
                owners_seen += 1;
            } else if owners_seen > 0 || (owner_rank.is_some() && rank(path) > owner_rank) {
                // Past the owner's commands, or at a later extension's.
                return index;
            }
        }
        list.len()
    }

    /// The path `/mcp` is listed with: the extension that applied
    /// `createMcpExtension`, else pi's built-in `builtin:mcp`.
    pub(super) fn mcp_command_path(&self) -> String {
        self.mcp.factories.owner("mcp").unwrap_or_else(|| crate::mcp::command::PATH.to_string())
    }
}
