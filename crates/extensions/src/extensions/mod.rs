//! Extensions as separate processes, in any language, speaking a small JSONL
//! protocol over their stdin/stdout ([`protocol`]; `README-extensions.md`).
//!
//! An extension registers commands, tools and event subscriptions; the host
//! sends it events, asks it to run its commands and tools and to decide its
//! hooks (`tool_call`, `session_before_switch`, `session_before_fork`); the
//! extension may make UI calls (routed to the client as
//! `extension_ui_request`) and send messages into the conversation.
//!
//! Nothing here runs inside the agent actor's loop: processes have their own
//! reader/writer tasks, and everything the actor must do arrives as a
//! [`HostSignal`] on a channel. Every call to an extension is bounded by a
//! timeout; an extension that crashes, hangs or writes garbage is stopped and
//! reported once (`extension_error`), and its tools and commands go away.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::event::AgentEvent;
use crate::tools::ToolCallGate;

/// The hook of pi's awaited `agent_end` handlers (a pi module subscribes to it for `agent_end`).
pub const AGENT_END_HOOK: &str = "agent_end_hook";

pub mod awaited;
pub mod boundary;
mod builtin_tools;
mod cache_warming;
pub mod discovery;
pub mod hooks;
pub mod host;
mod host_install;
mod nested;
mod preload;
mod preload_mcp;
mod process;
mod project_trust;
pub mod protocol;
mod provider_events;
pub mod provider_refreshes;
pub mod provider_stream;
mod session_codemode;
mod tool;
mod tool_content;
pub mod ui;

pub use builtin_tools::{UserBashOperations, output_json as tool_output_json};
pub use discovery::{DiscoverOptions, Discovered, discover};
pub use host::HostConfig;
pub use preload::{PreloadedExtensions, SessionlessAnswer, SessionlessRequests};
pub use process::{CallError, Extension};
pub use project_trust::TrustAnswer;
pub use session_codemode::described_tool;
pub use tool::ExtensionTool;
pub use ui::{Routed, UiBroker};

/// Time limits for extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From start to the `register` message.
    pub startup: Duration,
    /// Longest silence while the host waits for an answer (not counting
    /// time the extension spends waiting on a dialog).
    pub call: Duration,
    /// After its input is closed at shutdown, before it is killed.
    pub shutdown_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            startup: Duration::from_secs(10),
            call: Duration::from_secs(30),
            shutdown_grace: Duration::from_millis(500),
        }
    }
}

impl Timeouts {
    /// Defaults, overridden by `extensionStartupTimeoutMs` / `extensionTimeoutMs`
    /// in a settings file (pi-rpc's own keys; positive numbers only).
    pub fn from_settings(settings_file: &std::path::Path) -> Timeouts {
        let mut t = Timeouts::default();
        let Ok(text) = std::fs::read_to_string(settings_file) else { return t };
        let Ok(v) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) else { return t };
        let ms = |key: &str| v.get(key).and_then(Value::as_u64).filter(|n| *n > 0).map(Duration::from_millis);
        if let Some(d) = ms("extensionStartupTimeoutMs") {
            t.startup = d;
        }
        if let Some(d) = ms("extensionTimeoutMs") {
            t.call = d;
        }
        t
    }
}

/// What to start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtensionOptions {
    /// Extension files, in load order.
    pub paths: Vec<PathBuf>,
    /// Named paths that could not be loaded: `(path, error)`, reported as
    /// `extension_error` once the agent runs.
    pub load_errors: Vec<(String, String)>,
    pub timeouts: Timeouts,
    /// `--no-tools`: extension tools are registered but not activated.
    pub no_tools: bool,
    /// `--tools` as pi's allowlist (names and `*` patterns): an extension
    /// tool it does not match is not registered, one it matches is activated
    /// (`None`: no allowlist).
    pub tool_allowlist: Option<Vec<String>>,
    /// The active tools `--tools` asks for, in order, those no tool has
    /// at start included: an extension tool it names is activated when
    /// registered, in its place in this order.
    pub requested_tools: Vec<String>,
    /// Where the TypeScript extension host finds Node.js and its packages.
    pub host: HostConfig,
    /// The agent directory (pi modules read it as `PI_CODING_AGENT_DIR`).
    pub agent_dir: PathBuf,
    /// Whether project-local resources load (pi's `ctx.isProjectTrusted()`).
    pub project_trusted: bool,
    /// pi runs offline (`--offline`, `PI_OFFLINE`): a native provider's
    /// model refresh does not use the network.
    pub offline: bool,
    /// The process's extension provider refreshes (`refreshModels` with
    /// the network), shared by its sessions (`None`: each host runs its own).
    pub provider_refreshes: Option<Arc<provider_refreshes::ProviderRefreshes>>,
    /// The command line's options pi-rpc does not know, for the extensions'
    /// flags (`registerFlag`), in order: `(name, value)`, no value for a
    /// bare `--name`.
    pub flags: Vec<(String, Option<String>)>,
    /// What found `paths`, for pi's reload to find the extensions again
    /// with the settings' packages as they are then (`None`: the front end
    /// named them itself and a reload keeps them).
    pub discovery: Option<DiscoverOptions>,
    /// The `defaultTools` setting chooses the active tools (`--tools` named
    /// none, or only `+name` / `-name` edits, given here; never with
    /// `--no-tools`): pi's reload activates the tools newly added to it.
    pub default_tool_edits: Option<Vec<String>>,
    /// Extensions already running (asked about project trust), which the
    /// start adopts instead of starting them again.
    pub preloaded: PreloadedExtensions,
}

/// Something an extension asks the agent to do.
#[derive(Debug)]
pub enum ExtRequest {
    /// `{content: string | blocks, deliverAs?: "steer" | "followUp"}`
    SendUserMessage(Value),
    /// `{customType, content, display?, details?, triggerTurn?, deliverAs?}`
    SendMessage(Value),
    /// `{customType, data?}`
    AppendEntry(Value),
    /// `{name}`
    SetSessionName(Value),
    GetState,
    GetMessages,
    GetCommands,
    /// pi's `ctx.getSystemPromptOptions()`: the structured inputs of the
    /// session's system prompt.
    GetSystemPromptOptions,
    /// `{names}`: the active tools (unknown names are ignored, as in pi).
    SetActiveTools(Value),
    /// Every registered tool with its schema and owner.
    GetAllTools,
    /// The session: header, entries, leaf, file, name.
    GetSession,
    /// `{entryId, label}` (`label: null` clears it).
    SetLabel(Value),
    /// `{provider, id}`; answers whether the model was set.
    SetModel(Value),
    /// `{level}`
    SetThinkingLevel(Value),
    /// Abort the current run.
    Abort,
    /// End pi-rpc once idle (pi's `ctx.shutdown()`).
    Shutdown,
    /// `{channel, data}` for the other extensions' `pi.events` listeners.
    Emit(Value),
    /// The models of the registry.
    GetModels,
    /// `{fn, args}`: one of pi's helper functions, computed by pi-rpc.
    Library(Value),
    /// `{customInstructions?, ticket}`: compact (pi's `ctx.compact()`); the
    /// outcome comes later as a `compactDone` notification with the ticket.
    Compact(Value),
    /// pi's MCP registrations: `registerMcpServer` `{name, config}`,
    /// `unregisterMcpServer` `{name}`, `getMcpServers`; answered with `{servers}`.
    /// Also `useBuiltinExtension` `{name, options}`: one of pi's built-in
    /// extension factories (codemode, MCP, `tool_search`) applied by the extension;
    /// and `mcpCommand` `{args}`: an SDK session's `/mcp`, answered `{text, level}`.
    Mcp {
        method: String,
        params: Value,
    },
    /// An SDK session's MCP tools (pi's `createMcpExtension()` in its
    /// resource loader, sdk_session_mcp.rs): `mcpTools` `{wait?, after?}`
    /// lists them, `mcpCallTool` `{name, args, toolCallId}` runs one.
    /// `cancel`: the extension withdrew the request (the call's signal
    /// aborted); `updates`: where the call's progress goes.
    SessionMcp {
        method: String,
        params: Value,
        cancel: tokio_util::sync::CancellationToken,
        updates: Option<tokio::sync::mpsc::UnboundedSender<crate::tools::ToolUpdate>>,
    },
    /// `{op, args}`: pi's `ctx.modelRegistry` calls of the classifier and
    /// image APIs (`getModelsOfType`, `getAvailableOfType`, `getModelOfType`,
    /// `classify`, `generateImages`), served as codemode's `models.*` are;
    /// cancelled when the extension withdraws the call (the `signal` of its
    /// options aborted).
    Models(Value, tokio_util::sync::CancellationToken),
    /// `{action: "new" | "fork" | "switch" | "navigate", …}`: a command's
    /// `ctx.newSession()`, `ctx.fork()`, `ctx.switchSession()`,
    /// `ctx.navigateTree()`; answered `{cancelled}` once done.
    SessionOp(Value),
    /// `{kind, …}`: a write of pi's `SessionManager` (`ctx.sessionManager`,
    /// the `setup` of `newSession`): `kind` `"message"` (`message`),
    /// `"custom"` (`customType`, `data`), `"custom_message"` (`customType`,
    /// `content`, `display`, `details`), `"label"` (`targetId`, `label`),
    /// `"session_info"` (`name`); answered `{id}`.
    SessionAppend(Value),
}

impl ExtRequest {
    /// The request an extension's `method` names, beyond the original ones.
    pub fn from_method(method: &str, params: Value) -> Option<ExtRequest> {
        Some(match method {
            "setActiveTools" => ExtRequest::SetActiveTools(params),
            "getAllTools" => ExtRequest::GetAllTools,
            "getSession" => ExtRequest::GetSession,
            "setLabel" => ExtRequest::SetLabel(params),
            "setModel" => ExtRequest::SetModel(params),
            "setThinkingLevel" => ExtRequest::SetThinkingLevel(params),
            "abort" => ExtRequest::Abort,
            "shutdown" => ExtRequest::Shutdown,
            "emit" => ExtRequest::Emit(params),
            "getModels" => ExtRequest::GetModels,
            "getSystemPromptOptions" => ExtRequest::GetSystemPromptOptions,
            "lib" => ExtRequest::Library(params),
            "compact" => ExtRequest::Compact(params),
            "registerMcpServer" | "unregisterMcpServer" | "getMcpServers" | "useBuiltinExtension" | "mcpCommand" => {
                ExtRequest::Mcp { method: method.to_string(), params }
            }
            "sessionOp" => ExtRequest::SessionOp(params),
            "sessionAppend" => ExtRequest::SessionAppend(params),
            "models" => ExtRequest::Models(params, tokio_util::sync::CancellationToken::new()),
            _ => return None,
        })
    }
}

/// A message from the extension host to the agent actor.
#[derive(Debug)]
pub enum HostSignal {
    /// Extension `id` (re)registered.
    Registered { id: usize },
    /// Extension `id` stopped; `event`/`error` go into `extension_error`.
    Died { id: usize, event: String, error: String },
    /// An `extension_error` that does not stop anything.
    Error { path: String, event: String, error: String },
    /// An event to emit (UI requests).
    Event(Box<AgentEvent>),
    /// A request only the actor can serve; answer on `reply`.
    Request { id: usize, request: ExtRequest, reply: oneshot::Sender<Result<Value, String>> },
    /// `modelStream` of extension `id`: `{stream, model, systemPrompt, tools,
    /// messages, options}`, a model call by one of pi-rpc's providers for
    /// pi-ai's `stream`/`complete` and `…Api()` (an extension's provider may
    /// delegate to them). Its events go back as `streamData`; the answer,
    /// once it ended, is `{message}`. `cancel`: the extension withdrew it.
    ModelStream {
        id: usize,
        params: Value,
        cancel: tokio_util::sync::CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    },
}

/// Where host signals go (the agent actor's queue, so that a death is
/// queued before anything its callers do afterwards).
#[async_trait::async_trait]
pub trait SignalSink: Send + Sync {
    /// Deliver a signal; false when nobody listens any more.
    async fn deliver(&self, signal: HostSignal) -> bool;
}

#[async_trait::async_trait]
impl SignalSink for mpsc::Sender<HostSignal> {
    async fn deliver(&self, signal: HostSignal) -> bool {
        self.send(signal).await.is_ok()
    }
}

/// A shared signal sink.
pub type Signals = Arc<dyn SignalSink>;

/// A command as `get_commands` and `prompt` see it.
#[derive(Clone)]
pub struct RegisteredCommand {
    /// What the user types after `/` (`name`, or `name:N` when several extensions use the name).
    pub invocation: String,
    /// The name the extension registered.
    pub name: String,
    pub description: Option<String>,
    pub extension: Arc<Extension>,
}

struct Shared {
    /// In load order; a reload appends the extensions it loads.
    list: RwLock<Arc<Vec<Arc<Extension>>>>,
    ui: Arc<UiBroker>,
    timeouts: Timeouts,
    quiet: Arc<AtomicBool>,
    /// Where hook failures are reported (none when nothing was started).
    signals: Option<Signals>,
    /// What starting one more extension needs (a reload; none when nothing was started).
    template: Option<SpawnTemplate>,
}

/// The options extensions were started with, for those a reload loads.
struct SpawnTemplate {
    options: ExtensionOptions,
    cwd: PathBuf,
    temp_dir: PathBuf,
    /// The TypeScript extension host, prepared when the first pi module needs it.
    host: std::sync::Mutex<Option<Arc<host::SharedHost>>>,
}

impl SpawnTemplate {
    /// The `hello` message of the extension at `path`.
    fn hello(&self, path: &std::path::Path, session_id: &str, session_file: Option<&str>) -> Value {
        let options = &self.options;
        let mut hello =
            protocol::hello(&path.display().to_string(), &self.cwd.display().to_string(), session_id, session_file);
        hello["agentDir"] = Value::String(options.agent_dir.display().to_string());
        hello["projectTrusted"] = Value::Bool(options.project_trusted);
        hello["offline"] = Value::Bool(options.offline);
        // pi's print mode runs no provider's network refresh (the offline phase only).
        let network = options.provider_refreshes.as_ref().is_none_or(|refreshes| refreshes.uses_network());
        hello["catalogNetwork"] = Value::Bool(network);
        // pi's RPC mode: the instances made again for a later session refresh offline only.
        let first_only = options.provider_refreshes.as_ref().is_some_and(|r| r.network_for_first_instances_only());
        hello["catalogNetworkFirstInstance"] = Value::Bool(first_only);
        // pi: a bare `--name` is `true`; the last of a repeated one wins.
        let flags: serde_json::Map<String, Value> = options
            .flags
            .iter()
            .map(|(name, value)| (name.clone(), value.clone().map_or(Value::Bool(true), Value::String)))
            .collect();
        hello["flags"] = Value::Object(flags);
        hello
    }

    /// The host for `path` when it is a pi module (prepared on first use).
    fn host_for(&self, path: &std::path::Path) -> Option<Arc<host::SharedHost>> {
        if !discovery::is_pi_module(path) {
            return self.host.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        }
        let mut host = self.host.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(host.get_or_insert_with(|| Arc::new(host::SharedHost::new(self.options.host.clone()))).clone())
    }

    /// Start the extension at `path`; `loaded`: those loaded before it, in
    /// order (a pi module's factory waits for the last pi module's), or
    /// `None`: a pi module's factory waits for pi-rpc to give it its turn
    /// (a reload's new runtime). A pi module's instance is bound when pi-rpc
    /// says so, once every factory ran.
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        &self,
        id: usize,
        path: &std::path::Path,
        session: (&str, Option<&str>),
        ui: &Arc<UiBroker>,
        signals: &Signals,
        quiet: &Arc<AtomicBool>,
        loaded: Option<&[Arc<Extension>]>,
    ) -> Arc<Extension> {
        let pi_module = discovery::is_pi_module(path);
        let turn_on_request = pi_module && loaded.is_none();
        let after = pi_module
            .then(|| loaded?.iter().rev().find(|e| !e.is_retired() && discovery::is_pi_module(&e.path)).cloned())
            .flatten();
        let mut hello = self.hello(path, session.0, session.1);
        if after.is_some() || turn_on_request {
            // The host runs the factory on pi-rpc's `turn` (process::factory_turn).
            hello["loadTurn"] = Value::Bool(true);
        }
        if pi_module {
            // Its actions stay unbound until pi-rpc's `bind`, as pi binds a runtime (at start-up too) after its last factory.
            hello["bindOnRequest"] = Value::Bool(true);
        }
        let spawn_ctx = process::SpawnContext {
            cwd: self.cwd.clone(),
            hello,
            after,
            ui: ui.clone(),
            signals: signals.clone(),
            timeouts: self.options.timeouts,
            quiet: quiet.clone(),
            host: self.host_for(path),
            agent_dir: self.options.agent_dir.clone(),
            temp_dir: self.temp_dir.clone(),
            turn_on_request,
            provider_refreshes: self.options.provider_refreshes.clone(),
        };
        process::spawn(id, path.to_path_buf(), &spawn_ctx)
    }
}

/// The running extensions (cheap to clone; empty when none are configured).
#[derive(Clone)]
pub struct Extensions {
    shared: Arc<Shared>,
}

impl Default for Extensions {
    fn default() -> Self {
        Extensions {
            shared: Arc::new(Shared {
                list: RwLock::default(),
                ui: Arc::new(UiBroker::default()),
                timeouts: Timeouts::default(),
                quiet: Arc::new(AtomicBool::new(false)),
                signals: None,
                template: None,
            }),
        }
    }
}

/// Session facts for the `hello` message.
pub struct StartContext<'a> {
    pub cwd: &'a std::path::Path,
    /// Where built-in tools run for extensions write their full-output files.
    pub temp_dir: &'a std::path::Path,
    pub session_id: &'a str,
    pub session_file: Option<&'a str>,
}

impl Extensions {
    /// Start every extension of `options` (must run inside a tokio runtime
    /// when there are any). Registrations, deaths, UI requests and requests
    /// for the agent arrive on `signals`.
    pub fn start(options: &ExtensionOptions, ctx: &StartContext<'_>, signals: Signals) -> Extensions {
        if let Some(preload) = options.preloaded.take() {
            return Extensions::adopt(preload, options, ctx, signals);
        }
        let ui = Arc::new(UiBroker::default());
        let quiet = Arc::new(AtomicBool::new(false));
        let template = SpawnTemplate {
            options: options.clone(),
            cwd: ctx.cwd.to_path_buf(),
            temp_dir: ctx.temp_dir.to_path_buf(),
            // The host is looked at (and its packages installed) only when a pi module is to be loaded.
            host: std::sync::Mutex::new(None),
        };
        let mut list: Vec<Arc<Extension>> = Vec::with_capacity(options.paths.len());
        for (id, path) in options.paths.iter().enumerate() {
            let ext = template.spawn(id, path, (ctx.session_id, ctx.session_file), &ui, &signals, &quiet, Some(&list));
            list.push(ext);
        }
        if !options.load_errors.is_empty() {
            let errors = options.load_errors.clone();
            let signals = signals.clone();
            tokio::spawn(async move {
                for (path, error) in errors {
                    signals.deliver(HostSignal::Error { path, event: "load".to_string(), error }).await;
                }
            });
        }
        let shared = Arc::new(Shared {
            list: RwLock::new(Arc::new(list)),
            ui,
            timeouts: options.timeouts,
            quiet,
            signals: Some(signals),
            template: Some(template),
        });
        Extensions::with_prompt_listener(shared)
    }

    /// The extensions of `shared`, their dialogs announcing their waiting
    /// span to every subscriber (pi's ui_prompt_start / ui_prompt_end).
    fn with_prompt_listener(shared: Arc<Shared>) -> Extensions {
        let weak = Arc::downgrade(&shared);
        shared.ui.set_prompt_listener(Box::new(move |payload| {
            if let Some(shared) = weak.upgrade() {
                let name = payload["type"].as_str().unwrap_or_default().to_string();
                Extensions { shared }.notify_raw(&name, payload);
            }
        }));
        Extensions { shared }
    }

    /// The extensions in load order (a snapshot: a reload may add more and
    /// reorder them, so an id is not an index).
    fn list(&self) -> Arc<Vec<Arc<Extension>>> {
        self.shared.list.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Number of extensions started (alive or not).
    pub fn len(&self) -> usize {
        self.list().len()
    }

    pub fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    pub fn get(&self, id: usize) -> Option<Arc<Extension>> {
        self.list().iter().find(|e| e.id == id).cloned()
    }

    /// The paths of the extensions a reload has not unloaded, with their ids.
    pub fn loaded_paths(&self) -> Vec<(usize, PathBuf)> {
        self.list().iter().filter(|e| !e.is_retired()).map(|e| (e.id, e.path.clone())).collect()
    }

    /// Start the extension at `path` after the others (pi's reload of a
    /// package or file added since); its id, or `None` when these
    /// extensions were never started (nothing to start it with). A pi
    /// module's factory waits for its turn ([`Extension::give_turn`]) and
    /// its instance for `bind`, as the reload's new runtime runs them.
    pub fn add(&self, path: &std::path::Path, session_id: &str, session_file: Option<&str>) -> Option<usize> {
        let template = self.shared.template.as_ref()?;
        let signals = self.shared.signals.as_ref()?;
        let mut list = self.shared.list.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = list.len();
        let ext =
            template.spawn(id, path, (session_id, session_file), &self.shared.ui, signals, &self.shared.quiet, None);
        let mut grown = Vec::clone(&list);
        grown.push(ext);
        *list = Arc::new(grown);
        Some(id)
    }

    /// Put the extensions in the order of `paths`, the set a reload found
    /// (pi's reload loads the whole set again, in its order, so an extension
    /// added since start-up takes its place among the others); those
    /// unloaded go last. Handlers, hooks and commands follow this order.
    pub fn reorder(&self, paths: &[PathBuf]) {
        let mut list = self.shared.list.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let rank = |e: &Arc<Extension>| {
            let found = if e.is_retired() { None } else { paths.iter().position(|p| *p == e.path) };
            found.unwrap_or(usize::MAX)
        };
        let mut ordered = Vec::clone(&list);
        ordered.sort_by_key(rank);
        *list = Arc::new(ordered);
    }

    /// Unload extension `id` (pi's reload of a package or file that went):
    /// its `session_shutdown` handlers get reason `"reload"` (unless
    /// `shut_down`: they had it), then it stops; its exit is not reported.
    pub fn retire(&self, id: usize, shut_down: bool) {
        let Some(ext) = self.get(id).filter(|e| !e.is_retired()) else { return };
        if !shut_down && ext.subscribes("session_shutdown") {
            ext.send(&protocol::event_message(serde_json::json!({"type": "session_shutdown", "reason": "reload"})));
        }
        ext.retire();
        let grace = self.shared.timeouts.shutdown_grace;
        tokio::spawn(async move { ext.stop(grace).await });
    }

    pub fn ui(&self) -> &UiBroker {
        &self.shared.ui
    }

    /// Live extensions subscribed to `event`, in load order.
    pub fn subscribers(&self, event: &str) -> Vec<Arc<Extension>> {
        self.list().iter().filter(|e| e.subscribes(event)).cloned().collect()
    }

    /// Send a core event to its subscribers (never waits); those that await
    /// it got it from [`Extensions::deliver_event`].
    pub fn notify(&self, event: &AgentEvent) {
        let list = self.list();
        if list.is_empty() {
            return;
        }
        // Serialise only what someone listens to (message_update is hot).
        let Some(name) = protocol::event_name(event) else { return };
        if !list.iter().any(|e| e.subscribes(name) && !e.awaits(name)) {
            return;
        }
        if let Some((name, payload)) = protocol::event_payload(event) {
            self.notify_raw(name, payload);
        }
    }

    /// The `message_start` and `message_update` events of one read of a
    /// streaming reply, with its message's `fields` as they stand after it
    /// (response id, usage, stop reason once said, signatures), in one
    /// message to each extension that takes them so (a pi module's host,
    /// subscribed to [`protocol::MESSAGE_STREAM`]): the host builds pi's
    /// streaming message from them, the same object at every event of the
    /// read as pi-ai's is once it read them.
    /// (Those that await it had it from [`Extensions::deliver_stream`].)
    pub fn notify_stream(&self, events: &[AgentEvent], fields: Value) {
        let name = protocol::MESSAGE_STREAM;
        let subscribers: Vec<_> = self.subscribers(name).into_iter().filter(|e| !e.awaits(name)).collect();
        if subscribers.is_empty() {
            return;
        }
        let message = protocol::event_message(protocol::message_stream_payload(events, fields));
        for ext in subscribers {
            ext.send(&message);
        }
    }

    /// [`Extensions::notify`] for a streaming reply's event sent with
    /// [`Extensions::notify_stream`]: to the extensions that take it alone
    /// (a process extension, pi-rpc's protocol).
    pub fn notify_unstreamed(&self, event: &AgentEvent) {
        let Some(name) = protocol::event_name(event) else { return };
        let alone = |e: &&Arc<Extension>| e.subscribes(name) && !e.subscribes(protocol::MESSAGE_STREAM);
        let subscribers: Vec<_> = self.list().iter().filter(alone).cloned().collect();
        if subscribers.is_empty() {
            return;
        }
        if let Some((_, payload)) = protocol::event_payload(event) {
            let message = protocol::event_message(payload);
            for ext in subscribers {
                ext.send(&message);
            }
        }
    }

    /// Deliver a `pi.events` message from extension `from` to the others.
    pub fn broadcast_bus(&self, from: usize, channel: &str, data: Value) {
        let message = protocol::event_message(serde_json::json!({"type": "bus", "channel": channel, "data": data}));
        for ext in self.subscribers("bus").into_iter().filter(|e| e.id != from) {
            ext.send(&message);
        }
    }

    /// Send an event payload (`{"type": name, …}`) to the subscribers of `name`.
    pub fn notify_raw(&self, name: &str, payload: Value) {
        self.notify_others(usize::MAX, name, payload);
    }

    /// [`Extensions::notify_raw`] for every subscriber but extension `from`
    /// (which dispatched the event to itself). Those that await `name` get
    /// it from [`Extensions::deliver`] instead.
    pub fn notify_others(&self, from: usize, name: &str, payload: Value) {
        let subscribers: Vec<_> =
            self.subscribers(name).into_iter().filter(|e| e.id != from && !e.awaits(name)).collect();
        if subscribers.is_empty() {
            return;
        }
        let message = protocol::event_message(payload);
        for ext in subscribers {
            ext.send(&message);
        }
    }

    /// [`Extensions::notify_raw`] for extension `id` alone (when it subscribes).
    pub fn notify_one(&self, id: usize, name: &str, payload: Value) {
        if let Some(ext) = self.get(id).filter(|e| e.subscribes(name)) {
            ext.send(&protocol::event_message(payload));
        }
    }

    /// Commands of live extensions in load order; a name registered by
    /// several extensions is invoked as `name:1`, `name:2`, … (as pi does).
    pub fn commands(&self) -> Vec<RegisteredCommand> {
        let mut all = Vec::new();
        for ext in self.list().iter().filter(|e| e.is_ready() && !e.is_dead()) {
            if let Some(reg) = ext.registration() {
                for c in reg.commands {
                    all.push(RegisteredCommand {
                        invocation: c.name.clone(),
                        name: c.name,
                        description: c.description,
                        extension: ext.clone(),
                    });
                }
            }
        }
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for c in &all {
            *seen.entry(c.name.clone()).or_default() += 1;
        }
        let mut counters: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for c in &mut all {
            if seen.get(&c.name).copied().unwrap_or(0) > 1 {
                let n = counters.entry(c.name.clone()).or_default();
                *n += 1;
                c.invocation = format!("{}:{n}", c.name);
            }
        }
        all
    }

    /// The command `text` invokes (`/name args`: the name ends at the first
    /// space), with its arguments.
    pub fn find_command(&self, text: &str) -> Option<(RegisteredCommand, String)> {
        let rest = text.strip_prefix('/')?;
        let (name, args) = match rest.find(' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        if name.is_empty() || self.list().is_empty() {
            return None;
        }
        self.commands().into_iter().find(|c| c.invocation == name).map(|c| (c, args.to_string()))
    }

    /// The `tool_call` gate tools consult before running.
    pub fn gate(&self) -> Option<Arc<dyn ToolCallGate>> {
        if self.list().is_empty() {
            return None;
        }
        Some(Arc::new(tool::ExtensionGate { extensions: self.clone() }))
    }

    /// Stop every extension: `session_shutdown` to the subscribers not
    /// `told` already, input closed, killed after the grace period. Deaths
    /// are no longer reported.
    pub async fn shutdown(&self, told: &[usize]) {
        if self.list().is_empty() {
            return;
        }
        let message = protocol::event_message(serde_json::json!({"type": "session_shutdown", "reason": "quit"}));
        for ext in self.subscribers("session_shutdown").into_iter().filter(|e| !told.contains(&e.id)) {
            ext.send(&message);
        }
        self.shared.quiet.store(true, Ordering::SeqCst);
        self.shared.ui.close();
        let grace = self.shared.timeouts.shutdown_grace;
        let list = self.list();
        let stops = list.iter().map(|e| e.stop(grace));
        futures::future::join_all(stops).await;
    }
}
