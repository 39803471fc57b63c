//! MCP: the tools of the Model Context Protocol servers a user configured
//! (`mcp.json`) or a front end handed a session (ACP's `session/new`).
//!
//! An [`McpManager`] belongs to one agent session. It connects every server
//! in the background when started (nothing waits for it at start-up), keeps
//! each server's state and tools, and is asked at each model call which tools
//! to declare ([`turn::turn_tools`]): `direct` tools like built-ins, the
//! `codemode` tool for servers with `codemode` exposure (pi's default), and
//! `tool_search` for `deferred` ones. A failing server gives error results and
//! one warning, never a failed session; its children are stopped at shutdown.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub mod command;
pub mod config;
mod config_checks;
mod config_entry;
pub mod connection;
pub mod factories;
pub mod failure;
pub mod host_transport;
pub mod http_client;
pub mod naming;
pub mod oauth;
pub mod registration;
mod registry;
pub mod result;
pub mod retry;
pub mod search;
pub mod section;
pub mod server_log;
pub mod sign_in_command;
pub mod tools;
pub mod turn;

pub use config::{ConfigSources, Exposure, McpConfig, ServerConfig, Transport};
use connection::{Connection, Status};
use search::SearchDoc;
use tools::{McpTool, ResourceTool, ResourceToolKind};

use crate::tools::Tool;

/// How long the first prompt waits for servers with `direct` tools.
pub const DIRECT_WAIT: Duration = Duration::from_secs(10);
/// pi's note when the first prompt stopped waiting for `direct` servers.
pub const STILL_CONNECTING: &str = "MCP servers are still connecting; their tools become available once connected.";
/// pi's warning when the servers' tools are reachable only through
/// `codemode` or `tool_search` and neither tool is active.
pub const UNREACHABLE_WARNING: &str =
    "MCP tools are only reachable from the codemode or tool_search tool, but neither is active; they cannot be called.";
/// [`UNREACHABLE_WARNING`] when `codemode` is there but `autoEnableCodemode`
/// is false, so the servers' `codemode` exposure did not activate it.
pub const UNREACHABLE_WARNING_AUTO_OFF: &str = "MCP tools are only reachable from the codemode or tool_search tool, but neither is active (autoEnableCodemode is false); they cannot be called.";

/// How long codemode, `tool_search` and the resource tools wait for servers.
pub const TOOL_WAIT: Duration = Duration::from_secs(10);
/// Servers start at the latest this long after the session.
pub(crate) const START_DELAY: Duration = Duration::from_millis(50);

/// `--tools` / `--exclude-tools` as they apply to MCP tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFilter {
    /// A `--tools` list (not only `+name` / `-name` edits): only the MCP
    /// tools it matches may be declared directly (pi's `_isActivatable`).
    pub allow: Option<Vec<String>>,
    /// `--exclude-tools` patterns (MCP tools included).
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// From the `--tools` list and the `--exclude-tools` patterns.
    pub fn from_cli(tools: Option<&[String]>, exclude: &[String]) -> ToolFilter {
        let edits = |list: &[String]| list.iter().any(|t| t.starts_with(['+', '-']));
        let allow = tools.filter(|list| !edits(list)).map(|list| list.to_vec());
        ToolFilter { allow, exclude: exclude.to_vec() }
    }

    fn matches(patterns: &[String], name: &str) -> bool {
        pi_types::tool_name::Wildcards::new(patterns.iter().map(String::as_str)).matches(name)
    }

    pub fn excluded(&self, name: &str) -> bool {
        Self::matches(&self.exclude, name)
    }

    /// May this MCP tool be declared to the model directly?
    pub fn declarable(&self, name: &str) -> bool {
        self.allow.as_ref().is_none_or(|allow| Self::matches(allow, name))
    }
}

/// What servers wait for once they may start ([`McpManager::begin`]): the
/// front end's output is written and flushed, so the answer that let them
/// start is with the client before a server's process competes for the CPU
/// (and, on a single-threaded runtime, blocks the thread while it is loaded).
#[derive(Clone)]
pub struct StartGate(Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>);

impl StartGate {
    pub fn new(open: impl Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync + 'static) -> StartGate {
        StartGate(Arc::new(open))
    }

    async fn opened(&self) {
        (self.0)().await
    }
}

impl std::fmt::Debug for StartGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StartGate")
    }
}

/// What a session's MCP support starts with.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    pub config: McpConfig,
    pub filter: ToolFilter,
    /// MCP is turned off (`--no-mcp`, `--no-tools`): no servers, no `/mcp`.
    pub disabled: bool,
    /// With `disabled`: only pi's built-in MCP extension is off (`--no-mcp`,
    /// `--no-extensions`, `-builtin:mcp`), so an extension's
    /// `createMcpExtension` may still turn MCP on with this `config`
    /// ([`McpManager::wake`]).
    pub standby: bool,
    /// The session's working directory, the one root servers are given
    /// (`roots/list`); the process's when unset.
    pub root: Option<std::path::PathBuf>,
    /// Servers start once this opens too (none: at once).
    pub start_gate: Option<StartGate>,
    /// Servers start only once this is cancelled ([`McpManager::release`]):
    /// the session's extensions are loading, and pi connects the servers
    /// after they loaded (an extension's `createMcpExtension` may change how).
    /// None: not held.
    pub hold: Option<CancellationToken>,
    /// Where servers' log messages go (pi's `<agent dir>/mcp.log`) unless an
    /// extension's `createMcpExtension({ logPath })` says otherwise; none: only traced.
    pub log_path: Option<std::path::PathBuf>,
    /// pi's built-in extensions pi would load in this session (`codemode`,
    /// `tool-search`, `mcp`): an extension's factory of one of them replaces
    /// it, with pi's start-up warning ([`factories::FactoryState::claim`]).
    pub loaded_builtins: Vec<String>,
    /// `--no-tools`: no tool is registered, so an extension's
    /// `createMcpExtension` connects the servers (and `/mcp` works) but
    /// offers no MCP tool, as in pi ([`McpManager::unreachable_warning`]).
    pub tools_off: bool,
    /// The agent directory whose `mcp-auth.json` holds the OAuth credentials
    /// of HTTP servers (none: no OAuth, servers that ask for it need sign-in).
    pub credentials_dir: Option<std::path::PathBuf>,
}

/// The session's working directory as every connection of one manager sees
/// it (it follows the session when it moves).
pub type SharedRoot = Arc<Mutex<Option<std::path::PathBuf>>>;

/// An MCP tool as the session may reach it.
#[derive(Clone)]
pub struct ExposedTool {
    pub tool: Arc<dyn Tool>,
    pub exposure: Exposure,
    /// `mcp__<server>` (None for the resource tools).
    pub namespace: Option<String>,
    /// pi's label: `<server>/<tool>` (the server's own tool name), the
    /// name for the resource tools.
    pub label: String,
    pub search: SearchDoc,
    /// The tool's output schema, when the server declared one.
    pub output_schema: Option<Value>,
}

/// Wait until servers may start: [`McpManager::begin`] was called and then
/// the `gate` opened, or [`START_DELAY`] passed. Once `begin` was called, the
/// tasks woken with this one run first (the session's first answer reaches
/// the front end's writer), then the gate (the front end's output flushed)
/// is waited for: a spawn blocks the thread until the new program is loaded,
/// and the new process competes for the CPU with the client reading the
/// answer.
pub(crate) async fn start_signal(go: &CancellationToken, gate: Option<&StartGate>) {
    let may_start = async {
        go.cancelled().await;
        tokio::task::yield_now().await;
        if let Some(gate) = gate {
            gate.opened().await;
        }
    };
    tokio::select! {
        _ = may_start => {}
        _ = tokio::time::sleep(START_DELAY) => tokio::task::yield_now().await,
    }
}

/// The MCP servers of one session.
pub struct McpManager {
    /// The `mcp.json` (or front end's) servers.
    configured: Vec<Arc<Connection>>,
    /// Servers extensions registered.
    registered: Mutex<Vec<registry::Registered>>,
    /// Cancelled to start connecting now.
    go: CancellationToken,
    /// What starting waits for after `go`.
    gate: Option<StartGate>,
    errors: Vec<String>,
    filter: ToolFilter,
    auto_codemode: bool,
    /// MCP is turned off for the session (no `/mcp` command).
    disabled: bool,
    /// The root servers are given.
    root: SharedRoot,
    /// What extensions asked through pi's built-in extension factories.
    pub factories: Arc<factories::FactoryState>,
    /// The options to start with when an extension turns MCP on ([`McpOptions::standby`]).
    standby: Mutex<Option<McpOptions>>,
    /// [`McpOptions::tools_off`].
    tools_off: bool,
    /// [`McpOptions::hold`] (cancelled when not held).
    hold: CancellationToken,
    /// The session's first prompt waited for the `direct` servers (later ones do not).
    startup_waited: std::sync::atomic::AtomicBool,
}

impl McpManager {
    /// Start connecting every server in the background (needs a Tokio runtime).
    pub fn start(options: McpOptions) -> Arc<McpManager> {
        let factories = factories::FactoryState::default();
        factories.set_loaded_builtins(&options.loaded_builtins);
        Self::start_with(options, Arc::new(factories))
    }

    /// The manager MCP is on with when it was off in [`McpOptions::standby`]
    /// (an extension applied `createMcpExtension`): a new one started with
    /// the loaded config, sharing this one's factory state. None when MCP
    /// was not on standby or already woke. The caller registers this one's
    /// registered servers again.
    pub fn wake(&self) -> Option<Arc<McpManager>> {
        let options = self.standby.lock().ok()?.take()?;
        Some(Self::start_with(options, self.factories.clone()))
    }

    /// A manager for `config` in place of this one's servers (pi's
    /// `createMcpExtension({ loadConfig })`, whose config replaces
    /// `mcp.json`): same tool filter, root, start gate and factory state; it
    /// starts connecting as soon as this one may. The caller shuts this one
    /// down and registers its registered servers again.
    pub fn reconfigured(&self, config: McpConfig) -> Arc<McpManager> {
        let options = McpOptions {
            config,
            filter: self.filter.clone(),
            root: self.root.lock().ok().and_then(|root| root.clone()),
            start_gate: self.gate.clone(),
            tools_off: self.tools_off,
            hold: Some(self.hold.clone()),
            ..McpOptions::default()
        };
        let manager = Self::start_with(options, self.factories.clone());
        if self.go.is_cancelled() {
            manager.begin();
        }
        manager
    }

    fn start_with(options: McpOptions, factories: Arc<factories::FactoryState>) -> Arc<McpManager> {
        if options.disabled && options.standby {
            let on = McpOptions { disabled: false, standby: false, ..options };
            let off = McpOptions {
                disabled: true,
                root: on.root.clone(),
                tools_off: on.tools_off,
                hold: on.hold.clone(),
                ..McpOptions::default()
            };
            let manager = Self::start_with(off, factories);
            if let Ok(mut standby) = manager.standby.lock() {
                *standby = Some(on);
            }
            return manager;
        }
        let root: SharedRoot = Arc::new(Mutex::new(options.root));
        if let Some(path) = options.log_path.filter(|_| factories.server_log.path().is_none()) {
            factories.server_log.set_path(path);
        }
        if let Some(dir) = options.credentials_dir.as_deref() {
            factories.use_credentials_file(dir);
        }
        let conns: Vec<Arc<Connection>> = options
            .config
            .servers
            .into_iter()
            .map(|server| Connection::with_root(server, root.clone(), factories.clone()))
            .collect();
        let go = CancellationToken::new();
        let hold = options.hold.unwrap_or_else(|| {
            let released = CancellationToken::new();
            released.cancel();
            released
        });
        if !conns.is_empty() {
            // Servers start once the session answered its first command (or
            // after START_DELAY): starting node or npx competes for the CPU,
            // and the first answer must not wait for that. Not before the
            // extensions loaded, though, as in pi.
            let (conns, go, gate, hold) = (conns.clone(), go.clone(), options.start_gate.clone(), hold.clone());
            tokio::spawn(async move {
                hold.cancelled().await;
                start_signal(&go, gate.as_ref()).await;
                for conn in conns {
                    // Boxed: a connection's future is about 9 KB, and each
                    // hand-off inside `tokio::spawn` copied it on the stack.
                    tokio::spawn(Box::pin(async move { conn.connect().await }));
                }
            });
        }
        Arc::new(McpManager {
            go,
            gate: options.start_gate,
            configured: conns,
            registered: Mutex::new(Vec::new()),
            errors: options.config.errors,
            filter: options.filter,
            auto_codemode: options.config.auto_enable_codemode,
            disabled: options.disabled,
            root,
            factories,
            standby: Mutex::new(None),
            tools_off: options.tools_off,
            hold,
            startup_waited: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The session now works in `dir`: the root servers are given from now on.
    pub fn set_root(&self, dir: std::path::PathBuf) {
        if let Ok(mut root) = self.root.lock() {
            *root = Some(dir);
        }
    }

    /// A connection to `server`, given this session's root.
    pub(super) fn connection(&self, server: ServerConfig) -> Arc<Connection> {
        Connection::with_root(server, self.root.clone(), self.factories.clone())
    }

    /// A manager for this one's configured servers, connected afresh (an
    /// extension's `createMcpExtension({ createTransport })` was applied
    /// after they may have connected: they connect through its transport).
    pub fn restarted(&self) -> Arc<McpManager> {
        let config = McpConfig {
            servers: self.configured.iter().map(|c| c.config.clone()).collect(),
            auto_enable_codemode: self.auto_codemode,
            ..McpConfig::default()
        };
        self.reconfigured(config)
    }

    /// The session's extensions loaded: servers held for them may start
    /// ([`McpOptions::hold`]).
    pub fn release(&self) {
        if !self.hold.is_cancelled() {
            self.hold.cancel();
        }
    }

    /// Start connecting now (the session answered its first command).
    pub fn begin(&self) {
        // Called after every op: once started, an atomic load, not the token's lock.
        if !self.go.is_cancelled() {
            self.go.cancel();
        }
    }

    /// pi's `turn_start` check: servers waiting for a sign-in that another
    /// process made since connect again. Whether any did.
    pub async fn reconnect_signed_in(&self) -> bool {
        connection::reconnect_signed_in(self.conns()).await
    }

    pub fn is_empty(&self) -> bool {
        self.configured.is_empty() && self.errors.is_empty()
    }

    /// Every server in use: the configured ones, then those extensions registered.
    fn conns(&self) -> Vec<Arc<Connection>> {
        let mut all = self.configured.clone();
        all.extend(self.registered_conns());
        all
    }

    /// The one warning about configuration errors and failed servers, once
    /// every server has settled (None when all is well).
    pub async fn startup_report(&self) -> Option<String> {
        self.report_of(&self.configured).await
    }

    /// [`Self::startup_report`] over every server in use, the registered
    /// ones too (an SDK session's, whose extensions registered theirs
    /// before its servers started, as pi reports them).
    pub async fn report_all(&self) -> Option<String> {
        self.report_of(&self.conns()).await
    }

    /// pi's warning about servers registered while the session runs, once
    /// they settled: the registered servers named `names` alone, without
    /// the configuration's errors (None when all is well).
    pub async fn report_registered(&self, names: &[String]) -> Option<String> {
        let conns: Vec<Arc<Connection>> =
            self.registered_conns().into_iter().filter(|c| names.contains(&c.config.name)).collect();
        self.report_lines(&conns, Vec::new()).await
    }

    async fn report_of(&self, conns: &[Arc<Connection>]) -> Option<String> {
        let errors = self.errors.iter().map(|e| format!("  config: {e}")).collect();
        self.report_lines(conns, errors).await
    }

    /// The warning: `lines` first, then each of `conns` that failed, needs a
    /// sign-in or still connects once they settled.
    async fn report_lines(&self, conns: &[Arc<Connection>], mut lines: Vec<String>) -> Option<String> {
        futures::future::join_all(conns.iter().map(|c| c.settled(TOOL_WAIT + DIRECT_WAIT))).await;
        for conn in conns {
            match conn.state().status {
                Status::Failed(e) => lines.push(format!("  {}: failed: {}", conn.config.name, first_line(&e))),
                Status::Connecting => lines.push(format!("  {}: still connecting", conn.config.name)),
                Status::NeedsAuth => lines.push(format!("  {}: needs sign-in", conn.config.name)),
                _ => {}
            }
        }
        (!lines.is_empty()).then(|| format!("MCP servers need attention:\n{}\nRun /mcp to fix.", lines.join("\n")))
    }

    /// Some server's tools (or some of them) have `exposure`.
    pub fn wants(&self, exposure: Exposure) -> bool {
        self.conns()
            .iter()
            .any(|c| c.config.exposure == exposure || c.config.tool_exposure.iter().any(|(_, e)| *e == exposure))
    }

    /// Whether `--tools` lets MCP tool `name` be declared to the model.
    pub fn may_declare(&self, name: &str) -> bool {
        self.filter.declarable(name)
    }

    /// `autoEnableCodemode` (true unless `mcp.json` turned it off).
    pub fn auto_enable_codemode(&self) -> bool {
        self.auto_codemode
    }

    /// A server with `codemode` exposure activates the `codemode` tool.
    pub fn codemode_wanted(&self) -> bool {
        !self.tools_off && self.auto_codemode && self.wants(Exposure::Codemode)
    }

    /// A server with `deferred` exposure activates `tool_search`.
    pub fn tool_search_wanted(&self) -> bool {
        !self.tools_off && self.wants(Exposure::Deferred)
    }

    /// pi's warning at start when servers' tools are to be reached through
    /// `codemode` or `tool_search` but neither tool is active (`active`: the
    /// session's first active tools): none exists (`--no-tools` with an
    /// extension's `createMcpExtension`), or pi's built-in codemode is there
    /// but `autoEnableCodemode: false` kept it off and no `deferred` server
    /// activates `tool_search` (pi then gives its reason). None otherwise.
    pub fn unreachable_warning(&self, active: &[String]) -> Option<&'static str> {
        let (codemode, deferred) = (self.wants(Exposure::Codemode), self.wants(Exposure::Deferred));
        if self.disabled || !(codemode || deferred) {
            return None;
        }
        if self.tools_off {
            return Some(UNREACHABLE_WARNING);
        }
        let named = |tool: &str| active.iter().any(|name| name == tool);
        let has_codemode = self.factories.builtin_loaded("codemode");
        let has_tool_search = self.factories.builtin_loaded("tool-search");
        let tool_search_on = has_tool_search && (deferred || named(search::TOOL_SEARCH));
        let kept_off = codemode && has_codemode && !self.auto_codemode && !named(turn::CODEMODE);
        (kept_off && !tool_search_on).then_some(UNREACHABLE_WARNING_AUTO_OFF)
    }

    /// pi's first-prompt wait: at the first prompt since the session
    /// started, [`Self::wait_direct`]; later prompts do not wait, as pi's
    /// MCP extension waits once per `session_start`.
    pub async fn startup_wait(&self) -> Option<&'static str> {
        if self.startup_waited.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        self.wait_direct().await
    }

    /// A session started (a new, resumed, forked or cloned one, a reload):
    /// its first prompt waits for the `direct` servers again, and notes
    /// one still connecting, as pi's MCP extension does at each `session_start`.
    pub fn session_started(&self) {
        self.startup_waited.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Wait (at most [`DIRECT_WAIT`], or the `startupWaitMs` of an
    /// extension's `createMcpExtension`) for the servers with `direct` tools:
    /// pi's [`STILL_CONNECTING`] note when one had not settled by then.
    pub async fn wait_direct(&self) -> Option<&'static str> {
        self.begin();
        let conns = self.conns();
        let direct: Vec<_> = conns
            .iter()
            .filter(|c| {
                c.config.exposure == Exposure::Direct
                    || c.config.tool_exposure.iter().any(|(_, e)| *e == Exposure::Direct)
            })
            .collect();
        let wait = self.factories.direct_wait();
        futures::future::join_all(direct.iter().map(|c| c.settled(wait))).await;
        direct.iter().any(|c| !c.state().status.is_settled()).then_some(STILL_CONNECTING)
    }

    /// Wait for every server (or those whose namespace `names` mention).
    pub async fn wait_for(&self, names: Option<&[String]>) {
        self.begin();
        let conns = self.conns();
        let wanted = conns
            .iter()
            .filter(|c| names.is_none_or(|names| names.iter().any(|n| naming::namespace_matches(n, &c.config.name))));
        futures::future::join_all(wanted.map(|c| c.settled(TOOL_WAIT))).await;
    }

    /// Resolves once a server's state changed (connected, failed, its tools
    /// listed again…) after this call; never when there is no server.
    pub fn state_changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut watches: Vec<_> = self.conns().iter().map(|c| c.watch()).collect();
        async move {
            if watches.is_empty() {
                return futures::future::pending().await;
            }
            let changes = watches.iter_mut().map(|w| Box::pin(w.changed()));
            if futures::future::select_all(changes).await.0.is_err() {
                // The connection is gone: nothing changes any more.
                futures::future::pending::<()>().await;
            }
        }
    }

    /// Server namespaces mentioned in `code` (`mcp__<server>` prefixes).
    pub fn servers_named_in(&self, code: &str) -> Vec<String> {
        self.conns()
            .iter()
            .map(|c| naming::namespace(&c.config.name))
            .filter(|ns| code.contains(ns.as_str()) || code.contains(&ns.replace('_', "-")))
            .collect()
    }

    /// The `mcp_servers` section of the system prompt (without tags), as
    /// pi's MCP extension renders it before each prompt of the running
    /// session and of an SDK session, whatever tool is active and whatever
    /// state each server is in (starting, failed, needing sign-in): every
    /// enabled server some of whose tools are configured `codemode` or
    /// `deferred` (its `exposure` or a `toolExposure`), reached by `codemode`
    /// when one is `codemode`, else by `tool_search`.
    pub fn servers_section(&self) -> Option<String> {
        let listed = self.conns().into_iter().filter_map(|conn| {
            let config = &conn.config;
            let exposures: Vec<Exposure> =
                std::iter::once(config.exposure).chain(config.tool_exposure.iter().map(|(_, e)| *e)).collect();
            let how = if exposures.contains(&Exposure::Codemode) {
                "codemode"
            } else if exposures.contains(&Exposure::Deferred) {
                "tool_search"
            } else {
                return None;
            };
            Some(listed_server(&conn, how))
        });
        section::render(listed.collect())
    }

    /// The names of every tool the servers registered, `hidden` and
    /// excluded ones too (pi's MCP extension registers them all, and each
    /// registration is a change of pi's tool registry).
    pub fn registered_tool_names(&self) -> Vec<String> {
        let mut taken: Vec<String> = Vec::new();
        if self.tools_off {
            return taken;
        }
        for conn in &self.conns() {
            let state = conn.state();
            if state.status != Status::Connected && state.tools.is_empty() {
                continue;
            }
            let remote_names: Vec<&str> = state.tools.iter().map(|t| t.name.as_str()).collect();
            let names = naming::tool_names(&conn.config.name, &remote_names, |n| taken.iter().any(|t| t == n));
            taken.extend(names);
        }
        taken
    }

    /// Every reachable MCP tool (connected servers; hidden and excluded tools
    /// left out), then the resource tools.
    pub fn tools(&self) -> Vec<ExposedTool> {
        let mut out = Vec::new();
        if self.tools_off {
            // `--no-tools`: pi registers none of the servers' tools.
            return out;
        }
        let mut taken: Vec<String> = Vec::new();
        let mut resource_servers = Vec::new();
        let mut resource_exposure: Option<Exposure> = None;
        for conn in &self.conns() {
            let state = conn.state();
            if state.status != Status::Connected && state.tools.is_empty() {
                continue;
            }
            let server = &conn.config.name;
            let remote_names: Vec<&str> = state.tools.iter().map(|t| t.name.as_str()).collect();
            let names = naming::tool_names(server, &remote_names, |n| taken.iter().any(|t| t == n));
            let ns = naming::namespace(server);
            for (remote, name) in state.tools.iter().zip(names) {
                let exposure = conn.config.exposure_of(&remote.name);
                taken.push(name.clone());
                if exposure == Exposure::Hidden || self.filter.excluded(&name) {
                    continue;
                }
                let extra =
                    parameter_text(&remote.input_schema) + " " + conn.config.description.as_deref().unwrap_or("");
                let tool = McpTool::new(name.clone(), conn.clone(), remote.clone(), state.has_resources);
                out.push(ExposedTool {
                    label: format!("{server}/{}", remote.name),
                    search: SearchDoc {
                        name: name.clone(),
                        description: tool.description().to_string(),
                        extra,
                        namespace: Some(ns.clone()),
                    },
                    tool: Arc::new(tool),
                    exposure,
                    namespace: Some(ns.clone()),
                    output_schema: remote.output_schema.clone(),
                });
            }
            if state.has_resources && conn.config.exposure != Exposure::Hidden {
                resource_servers.push(conn.clone());
                resource_exposure = Some(match (resource_exposure, conn.config.exposure) {
                    (Some(Exposure::Direct), _) | (_, Exposure::Direct) => Exposure::Direct,
                    (Some(e), _) => e,
                    (None, e) => e,
                });
            }
        }
        if let Some(exposure) = resource_exposure {
            for kind in ResourceToolKind::ALL {
                if self.filter.excluded(kind.name()) {
                    continue;
                }
                let tool = ResourceTool::new(kind, resource_servers.clone());
                out.push(ExposedTool {
                    label: kind.name().into(),
                    search: SearchDoc {
                        name: kind.name().into(),
                        description: tool.description().into(),
                        extra: String::new(),
                        namespace: None,
                    },
                    tool: Arc::new(tool),
                    exposure,
                    namespace: None,
                    output_schema: None,
                });
            }
        }
        out
    }

    /// What `tool_search` searches: tools with `deferred` or `codemode` exposure.
    pub fn search_docs(&self) -> Vec<SearchDoc> {
        self.tools()
            .into_iter()
            .filter(|t| matches!(t.exposure, Exposure::Deferred | Exposure::Codemode))
            .map(|t| t.search)
            .collect()
    }

    /// `describeNamespace()`: a server's description, instructions and tools.
    pub fn namespace_info(&self, query: &str) -> Option<Value> {
        let conns = self.conns();
        let conn = conns.iter().find(|c| naming::namespace_matches(query, &c.config.name))?;
        let ns = naming::namespace(&conn.config.name);
        let tools: Vec<Value> = self
            .tools()
            .into_iter()
            .filter(|t| t.namespace.as_deref() == Some(ns.as_str()))
            .map(|t| Value::String(t.tool.name().to_string()))
            .collect();
        let mut info = Map::new();
        info.insert("name".into(), Value::String(ns));
        if let Some(d) = &conn.config.description {
            info.insert("description".into(), Value::String(d.clone()));
        }
        if let Some(i) = conn.state().instructions {
            info.insert("instructions".into(), Value::String(i));
        }
        info.insert("tools".into(), Value::Array(tools));
        Some(Value::Object(info))
    }

    /// Stop every server (children reaped).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.conns().iter().map(|c| c.shutdown())).await;
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Parameter names and descriptions, for ranking.
fn parameter_text(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return String::new() };
    props
        .iter()
        .map(|(k, v)| format!("{k} {}", v.get("description").and_then(Value::as_str).unwrap_or("")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Server `conn` in the `mcp_servers` section, reached by `how`.
fn listed_server(conn: &Connection, how: &'static str) -> section::ListedServer {
    let state = conn.state();
    let summary = naming::summary(conn.config.description.as_deref(), state.instructions.as_deref());
    section::ListedServer { name: conn.config.name.clone(), how, summary }
}

#[cfg(test)]
mod tests;
