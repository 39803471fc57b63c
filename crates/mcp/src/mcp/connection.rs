//! One MCP server connection on the official Rust SDK (`rmcp`): a child
//! process over stdio (in its own process group, so wrappers such as `npx`
//! are stopped with it) or streamable HTTP. It connects in the background,
//! reconnects on the next call after a drop, bounds every request by the
//! server's timeout (progress notifications reset it) and never lets a
//! server's failure escape as anything but an error string.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientConfig, Implementation};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, Transport};
use super::failure::{self, short_error};

/// How long a stdio server gets to exit after its stdin closes, and again after SIGTERM.
const STOP_GRACE: Duration = Duration::from_millis(500);
/// Starting and initializing a server gets at least this long (a cold `npx`
/// or `node` start can take seconds), whatever its request timeout.
const MIN_CONNECT_TIME: Duration = Duration::from_secs(10);
/// Lines of a failed server's stderr kept for its error message.
const STDERR_TAIL_LINES: usize = 10;
/// How long a failed request waits to learn why the connection closed.
const LOST_WAIT: Duration = Duration::from_millis(300);

/// A server tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Option<Value>,
}

/// What is known about the server right now.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Connecting,
    Connected,
    /// Could not connect (or initialize); the next call tries again.
    Failed(String),
    /// An OAuth server the user has to sign in to (`/mcp login`); the next call tries the stored credentials again.
    NeedsAuth,
    /// The connection dropped; the next call reconnects.
    Disconnected(String),
    Stopped,
}

impl Status {
    /// Connecting is over (for better or worse).
    pub fn is_settled(&self) -> bool {
        !matches!(self, Status::Connecting)
    }
}

/// A snapshot of a server for the tool catalog.
#[derive(Debug, Clone)]
pub struct ServerState {
    pub status: Status,
    pub tools: Arc<Vec<RemoteTool>>,
    pub instructions: Option<String>,
    pub has_resources: bool,
}

struct Live {
    /// Which connection of the server this is (one more at each connect).
    epoch: u64,
    service: RunningService<RoleClient, Handler>,
    child: Option<ChildGuard>,
    /// A stdio server's first line that was not JSON-RPC.
    garbage: Option<Arc<Mutex<Option<String>>>>,
    /// An HTTP server's sessions it answered 404: not deleted when the
    /// connection is let go ([`Connection::let_go`]), deleted when it is
    /// closed (pi's closing client sends its `DELETE` whatever the server said).
    expired: Option<super::http_client::ExpiredSessions>,
}

/// A failed connect attempt: what is recorded, whether pi would try again,
/// and whether the server asked for authentication (pi-mcp's `McpAuthRequiredError`).
struct ConnectFailure {
    message: String,
    transient: bool,
    auth_required: bool,
}

impl From<String> for ConnectFailure {
    fn from(message: String) -> ConnectFailure {
        ConnectFailure { message, transient: false, auth_required: false }
    }
}

impl ConnectFailure {
    /// An HTTP failure: pi's words for it, else `otherwise`.
    fn of_http(http: Option<super::retry::HttpFailure>, otherwise: impl FnOnce() -> String) -> ConnectFailure {
        ConnectFailure {
            message: http.as_ref().and_then(|h| h.status_message()).unwrap_or_else(otherwise),
            transient: http.as_ref().is_some_and(|h| h.is_transient()),
            auth_required: http.is_some_and(|h| h.is_auth_required()),
        }
    }
}

/// A failed initialize: pi's words for an HTTP status, else rmcp's error made readable.
fn initialize_failure(error: &rmcp::service::ClientInitializeError) -> ConnectFailure {
    ConnectFailure::of_http(super::retry::of_initialize(error), || {
        format!("initialize failed: {}", short_error(&error.to_string()))
    })
}

/// A connect attempt that succeeded.
struct Opened {
    live: Live,
    tools: Vec<RemoteTool>,
    instructions: Option<String>,
    has_resources: bool,
}

/// One configured server.
pub struct Connection {
    pub config: ServerConfig,
    state: watch::Sender<ServerState>,
    live: tokio::sync::Mutex<Option<Live>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stopping: CancellationToken,
    /// Where progress notifications of running calls go, by progress token.
    progress: Mutex<HashMap<String, mpsc::UnboundedSender<String>>>,
    /// The session's working directory: the root the server is given.
    root: super::SharedRoot,
    /// Where the server's `notifications/message` go.
    log: Arc<super::server_log::ServerLog>,
    /// The session's factory state: an extension's transport factory, when
    /// one was given, carries the messages ([`super::host_transport`]).
    factories: Arc<super::factories::FactoryState>,
    /// The stored OAuth credentials of an HTTP server that signs in with OAuth.
    pub auth: Option<Arc<super::oauth::TokenSource>>,
    /// The stored tokens when the server came to need a sign-in ([`sign_in_watch`]).
    tokens_at_sign_in: Mutex<Option<String>>,
    /// How many connections were made (each [`Live`] knows which it is).
    epochs: std::sync::atomic::AtomicU64,
}

impl Connection {
    pub fn new(config: ServerConfig) -> Arc<Connection> {
        Connection::with_root(config, Arc::default(), Arc::default())
    }

    /// A connection whose server is given `root` (the process's working
    /// directory while it holds none), logging and finding its OAuth
    /// credentials where the session's `shared` state says.
    pub fn with_root(
        config: ServerConfig,
        root: super::SharedRoot,
        factories: Arc<super::factories::FactoryState>,
    ) -> Arc<Connection> {
        let log = factories.server_log.clone();
        let auth = match (&config.transport, factories.credentials()) {
            (Transport::Http { url, oauth: Some(settings), .. }, Some(store)) => Some(Arc::new(
                super::oauth::TokenSource::new(&config.name, url, settings.clone(), factories.clone(), store),
            )),
            _ => None,
        };
        let (state, _) = watch::channel(ServerState {
            status: Status::Connecting,
            tools: Arc::new(Vec::new()),
            instructions: None,
            has_resources: false,
        });
        Arc::new(Connection {
            config,
            state,
            live: tokio::sync::Mutex::new(None),
            stderr_tail: Arc::default(),
            stopping: CancellationToken::new(),
            root,
            log,
            factories,
            auth,
            progress: Mutex::default(),
            tokens_at_sign_in: Mutex::default(),
            epochs: Default::default(),
        })
    }

    pub fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    /// The server's state from now on (its changes are awaited).
    pub fn watch(&self) -> watch::Receiver<ServerState> {
        self.state.subscribe()
    }

    /// Wait until connecting is over, at most `limit`.
    pub async fn settled(&self, limit: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|s| s.status.is_settled())).await;
    }

    fn set_status(&self, status: Status) {
        self.state.send_modify(|s| s.status = status);
    }

    /// Connect (or reconnect), trying again as pi does after a transient
    /// HTTP failure ([`super::retry`]). Errors are recorded in the state.
    pub async fn connect(self: &Arc<Self>) {
        let mut live = self.live.lock().await;
        if self.stopping.is_cancelled() {
            return;
        }
        if let Some(old) = live.take() {
            stop(old).await;
        }
        self.set_status(Status::Connecting);
        let mut delays = self.connect_retry_delays().iter();
        let result = loop {
            let result = self.connect_once().await;
            match (&result, delays.next()) {
                (Err(failure), Some(delay))
                    if failure.transient && !self.stopping.is_cancelled() && !self.needs_sign_in() =>
                {
                    tracing::info!("MCP server {}: {}; trying again", self.config.describe(), failure.message);
                    tokio::select! {
                        _ = tokio::time::sleep(*delay) => {}
                        _ = self.stopping.cancelled() => {}
                    }
                }
                _ => break result,
            }
        };
        match result {
            Ok(mut opened) => {
                opened.live.epoch = self.epochs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                self.state.send_modify(|s| {
                    s.status = Status::Connected;
                    s.tools = Arc::new(opened.tools);
                    s.instructions = opened.instructions;
                    s.has_resources = opened.has_resources;
                });
                *live = Some(opened.live);
            }
            Err(failure) if self.needs_sign_in() || (failure.auth_required && self.has_auth_provider()) => {
                tracing::warn!("MCP server {}: needs sign-in", self.config.describe());
                self.mark_needs_auth().await;
            }
            Err(failure) => {
                let message = self.with_stderr(failure.message);
                tracing::warn!("MCP server {}: {message}", self.config.describe());
                self.set_status(Status::Failed(message));
            }
        }
    }

    /// pi retries connecting to servers configured by `url`, through its
    /// own transport or an extension's (`createTransport`, whose `send`
    /// threw pi-mcp's HTTP error or a `TypeError`).
    fn connect_retry_delays(&self) -> &'static [Duration] {
        let http = matches!(self.config.transport, Transport::Http { .. });
        if http { &super::retry::CONNECT_DELAYS } else { &[] }
    }

    fn needs_sign_in(&self) -> bool {
        self.auth.as_ref().is_some_and(|a| a.needs_sign_in())
    }

    /// pi gives this server an auth provider (OAuth, or `auth.provider`'s
    /// token): a request it refuses for want of authentication then means
    /// the user has to sign in.
    fn has_auth_provider(&self) -> bool {
        match &self.config.transport {
            Transport::Http { oauth, .. } => oauth.is_some() || self.config.auth_provider().is_some(),
            Transport::Stdio { .. } => false,
        }
    }

    /// pi's words for a server that needs sign-in: `/login <provider>` for
    /// an `auth.provider` server, else `/mcp`.
    fn sign_in_required(&self) -> String {
        match self.config.auth_provider() {
            Some(provider) => {
                format!("MCP server \"{}\" requires sign-in. Run /login {provider} to sign in.", self.config.name)
            }
            None => super::oauth::sign_in_required(&self.config.name),
        }
    }

    /// One attempt: initialize, then the server's tools.
    async fn connect_once(self: &Arc<Self>) -> Result<Opened, ConnectFailure> {
        let limit = self.config.timeout.max(MIN_CONNECT_TIME);
        let attempt = tokio::time::timeout(limit, self.open());
        let opened = tokio::select! {
            r = attempt => r.unwrap_or_else(|_| Err(format!("no answer to initialize within {} s", limit.as_secs_f64()).into()))?,
            _ = self.stopping.cancelled() => return Err("stopped".to_string().into()),
        };
        let info = opened.service.peer().peer_info();
        let instructions = info.as_ref().and_then(|i| i.instructions.clone());
        let has_resources = info.as_ref().is_some_and(|i| i.capabilities.resources.is_some());
        match list_tools(opened.service.peer()).await {
            Ok(tools) => Ok(Opened { live: opened, tools, instructions, has_resources }),
            Err(e) => {
                stop(opened).await;
                let mut failure =
                    ConnectFailure::of_http(super::retry::of_service(&e), || failure::service_error(&e, None));
                failure.message = format!("tools/list failed: {}", failure.message);
                Err(failure)
            }
        }
    }

    fn with_stderr(&self, message: String) -> String {
        let tail =
            self.stderr_tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n")).unwrap_or_default();
        if tail.is_empty() { message } else { format!("{message}\nstderr:\n{tail}") }
    }

    async fn open(self: &Arc<Self>) -> Result<Live, ConnectFailure> {
        let handler = Handler { conn: Arc::downgrade(self) };
        if let Some(host) = self.factories.transport_host() {
            let cwd = self.root.lock().ok().and_then(|root| root.clone());
            let cwd = cwd.or_else(|| std::env::current_dir().ok()).unwrap_or_default();
            let transport =
                super::host_transport::open(host, &self.config, cwd, self.auth.clone()).await.map_err(|thrown| {
                    let message = thrown.message.clone();
                    ConnectFailure::of_http(Some(super::retry::HttpFailure::Thrown(thrown)), || message)
                })?;
            let service = handler.serve(transport).await.map_err(|e| initialize_failure(&e))?;
            return Ok(Live { epoch: 0, service, child: None, garbage: None, expired: None });
        }
        match &self.config.transport {
            Transport::Stdio { command, args, env, cwd } => {
                if command.as_os_str().is_empty() {
                    // node's `spawn` refuses an empty command so, and pi reports its message.
                    Err("The argument 'file' cannot be empty. Received ''".to_string())?;
                }
                let env = resolve(env).await?;
                // A new process: what the last one wrote no longer applies.
                if let Ok(mut tail) = self.stderr_tail.lock() {
                    tail.clear();
                }
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .current_dir(cwd)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .process_group(0)
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", command.display()))?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err("child process has no stdio".to_string().into());
                };
                let mut stderr_task = None;
                if let Some(stderr) = child.stderr.take() {
                    let tail = self.stderr_tail.clone();
                    stderr_task = Some(tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            if let Ok(mut t) = tail.lock() {
                                if t.len() == STDERR_TAIL_LINES {
                                    t.pop_front();
                                }
                                t.push_back(line);
                            }
                        }
                    }));
                }
                let mut guard = ChildGuard { pgid: child.id(), child };
                let (stdout, garbage) = json_lines_only(stdout);
                match handler.serve((stdout, stdin)).await {
                    Ok(service) => {
                        Ok(Live { epoch: 0, service, child: Some(guard), garbage: Some(garbage), expired: None })
                    }
                    Err(e) => {
                        // A server that died says more by its exit status than the broken pipe does.
                        let _ = tokio::time::timeout(Duration::from_millis(200), guard.child.wait()).await;
                        let bad_line = garbage.lock().ok().and_then(|g| g.clone());
                        let message = match (bad_line, guard.child.try_wait()) {
                            (Some(line), _) => format!("the server wrote a line that is not JSON-RPC: {line}"),
                            (None, Ok(Some(status))) => {
                                format!("the server exited ({status}) before it was initialized")
                            }
                            _ => format!("initialize failed: {}", short_error(&e.to_string())),
                        };
                        guard.stop().await;
                        if let Some(task) = stderr_task {
                            let _ = tokio::time::timeout(Duration::from_millis(200), task).await;
                        }
                        Err(message.into())
                    }
                }
            }
            Transport::Http { url, headers, .. } => {
                let headers = resolve(headers).await?;
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                crate::provider::http::install_crypto_provider();
                let client = reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .build()
                    .map_err(|e| format!("HTTP client: {e}"))?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                // An expired session is renewed as pi renews it ([`Connection::with_client`]), not by rmcp.
                config.reinit_on_expired_session = false;
                for (name, value) in &headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("bad header name {name}"))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| format!("bad value for header {name}"))?;
                    config.custom_headers.insert(name, value);
                }
                let initialize_failed = |e: rmcp::service::ClientInitializeError| initialize_failure(&e);
                let expired;
                let service = match &self.auth {
                    Some(auth) => {
                        auth.reset();
                        let client = super::http_client::QuotingHttpClient::new(client);
                        expired = Some(client.expired_sessions());
                        let client = super::oauth::client::OAuthHttpClient::new(client, auth.clone());
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        handler.serve(transport).await.map_err(initialize_failed)?
                    }
                    None => {
                        let mut client = super::http_client::QuotingHttpClient::new(client);
                        if let (Some(provider), Some(read)) =
                            (self.config.auth_provider(), self.factories.provider_token())
                        {
                            client = client.with_provider_token(provider, read);
                        }
                        expired = Some(client.expired_sessions());
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        handler.serve(transport).await.map_err(initialize_failed)?
                    }
                };
                Ok(Live { epoch: 0, service, child: None, garbage: None, expired })
            }
        }
    }

    /// The peer and its connection's epoch, reconnecting first when the
    /// connection failed or dropped.
    async fn peer(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), String> {
        if let Some(peer) = self.live_peer().await {
            return Ok(peer);
        }
        if self.stopping.is_cancelled() {
            return Err("the MCP connection is closed".to_string());
        }
        self.connect().await;
        if let Some(peer) = self.live_peer().await {
            return Ok(peer);
        }
        match self.state().status {
            Status::Failed(e) | Status::Disconnected(e) => Err(e),
            Status::NeedsAuth => Err(self.sign_in_required()),
            _ => Err("not connected".to_string()),
        }
    }

    async fn live_peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        let live = self.live.lock().await;
        live.as_ref().filter(|l| !l.service.is_transport_closed()).map(|l| (l.service.peer().clone(), l.epoch))
    }

    /// Let connection `epoch` go (its session expired), unless it was
    /// replaced meanwhile: the next request connects again.
    async fn let_go(&self, epoch: u64) {
        let mut live = self.live.lock().await;
        if live.as_ref().is_some_and(|l| l.epoch == epoch)
            && let Some(old) = live.take()
        {
            let_go_of(old).await;
        }
    }

    /// A request failed: the error as the model reads it. When the transport
    /// went away, why (the line that was not JSON-RPC, the server's exit
    /// status, its last stderr lines) is said and recorded.
    async fn failed(&self, error: &rmcp::ServiceError) -> String {
        let refused = super::retry::of_service(error).is_some_and(|h| h.is_auth_required());
        if self.needs_sign_in() || (refused && self.has_auth_provider()) {
            if let Some(old) = self.live.lock().await.take() {
                stop(old).await;
            }
            self.mark_needs_auth().await;
            return self.sign_in_required();
        }
        // The server answered: the connection stays.
        if let Some(message) = super::retry::of_service(error).and_then(|h| h.status_message()) {
            return message;
        }
        if !failure::is_lost(error) {
            return failure::service_error(error, None);
        }
        let why = self.why_lost(matches!(error, rmcp::ServiceError::TransportClosed)).await;
        let message = self.with_stderr(failure::service_error(error, why.as_deref()));
        self.set_status(Status::Disconnected(message.clone()));
        message
    }

    /// Why a stdio server's connection closed: the line that was not
    /// JSON-RPC, or the exit status (waiting a moment for the process to
    /// end). None for HTTP, or when the server is still running.
    async fn why_lost(&self, closed: bool) -> Option<String> {
        let mut live = tokio::time::timeout(LOST_WAIT, self.live.lock()).await.ok()?;
        let live = live.as_mut()?;
        if let Some(line) = live.garbage.as_ref().and_then(|g| g.lock().ok().and_then(|g| g.clone())) {
            return Some(format!("the MCP server wrote a line that is not JSON-RPC: {line}"));
        }
        let child = live.child.as_mut()?;
        let status = match tokio::time::timeout(LOST_WAIT, child.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => child.child.try_wait().ok().flatten(),
        };
        match status {
            Some(status) => Some(format!("the MCP server exited ({status}) during the request")),
            None if closed => Some("the MCP server closed its output".to_string()),
            None => None,
        }
    }

    async fn refresh_tools(self: Arc<Self>) {
        let peer = match self.live.lock().await.as_ref() {
            Some(l) => l.service.peer().clone(),
            None => return,
        };
        match list_tools(&peer).await {
            Ok(tools) => self.state.send_modify(|s| s.tools = Arc::new(tools)),
            // Closed meanwhile: nothing to tell.
            Err(_) if self.stopping.is_cancelled() => {}
            Err(e) => tracing::warn!(
                "MCP server {}: cannot refresh its tools: {}",
                self.config.name,
                failure::service_error(&e, None)
            ),
        }
    }

    /// The stored credentials were removed: disconnect, and wait for a sign-in.
    pub async fn signed_out(&self) {
        if let Some(live) = self.live.lock().await.take() {
            stop(live).await;
        }
        if !self.stopping.is_cancelled() {
            self.mark_needs_auth().await;
        }
    }

    /// Close the connection: stdin closed, then SIGTERM, then SIGKILL to the
    /// process group; the child is reaped.
    pub async fn shutdown(&self) {
        self.stopping.cancel();
        if let Some(live) = self.live.lock().await.take() {
            stop(live).await;
        }
        self.set_status(Status::Stopped);
    }
}

/// The server's stdout with a guard: the first line that is not JSON ends the
/// stream (recorded, cut to 200 characters), so garbage fails the connection
/// at once instead of leaving requests to time out.
fn json_lines_only(stdout: tokio::process::ChildStdout) -> (tokio::io::DuplexStream, Arc<Mutex<Option<String>>>) {
    use tokio::io::AsyncWriteExt;
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    let garbage = Arc::new(Mutex::new(None));
    let seen = garbage.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if !line.trim().is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(&line).is_err() {
                if let Ok(mut g) = seen.lock() {
                    *g = Some(line.chars().take(200).collect());
                }
                break;
            }
            if writer.write_all(line.as_bytes()).await.is_err() || writer.write_all(b"\n").await.is_err() {
                break;
            }
        }
    });
    (reader, garbage)
}

/// `env`/`headers` values, command values run off the async threads (plain
/// values resolve here: no blocking thread is started for them, so a start
/// with three servers does not create three threads and their allocator arenas).
async fn resolve(values: &super::config::ConfigValues) -> Result<Vec<(String, String)>, String> {
    if !values.iter().any(|(_, value)| matches!(value, super::config::ConfigValue::Command(_))) {
        return super::config::resolve_values(values);
    }
    let values = values.clone();
    tokio::task::spawn_blocking(move || super::config::resolve_values(&values)).await.map_err(|e| e.to_string())?
}

async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, rmcp::ServiceError> {
    let tools = peer.list_all_tools().await?;
    Ok(tools
        .into_iter()
        .map(|t| {
            let v = serde_json::to_value(&t).unwrap_or_default();
            // pi falls back to the tool's title when it has no description.
            let title = v.get("title").or_else(|| v.pointer("/annotations/title")).and_then(Value::as_str);
            let description = t.description.as_deref().map(str::trim).filter(|d| !d.is_empty());
            RemoteTool {
                name: t.name.to_string(),
                description: description.or(title).unwrap_or_default().to_string(),
                input_schema: v.get("inputSchema").cloned().unwrap_or_else(|| serde_json::json!({"type": "object"})),
                output_schema: v.get("outputSchema").cloned(),
                annotations: v.get("annotations").cloned(),
            }
        })
        .collect())
}

/// Close a connection: its HTTP session is deleted (`DELETE`), also one the
/// server answered 404 while it was the current one, as pi's closing client.
async fn stop(live: Live) {
    if let Some(expired) = &live.expired
        && let Ok(mut expired) = expired.lock()
    {
        expired.clear();
    }
    let_go_of(live).await;
}

/// Drop a connection whose session expired without deleting that session
/// (pi lets go of the client unclosed); a stdio child is still reaped.
async fn let_go_of(live: Live) {
    let Live { service, child, .. } = live;
    // Cancelling the service drops the transport, which closes the child's stdin.
    let _ = tokio::time::timeout(STOP_GRACE, service.cancel()).await;
    if let Some(child) = child {
        child.stop().await;
    }
}

/// A stdio server's process; its whole group is killed when dropped.
struct ChildGuard {
    child: tokio::process::Child,
    pgid: Option<u32>,
}

impl ChildGuard {
    fn signal_group(&self, signal: nix::sys::signal::Signal) {
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
        }
    }

    async fn stop(mut self) {
        use nix::sys::signal::Signal;
        if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            self.signal_group(Signal::SIGTERM);
            if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
                self.signal_group(Signal::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        // Whatever the leader did, nothing of its group may outlive it.
        self.signal_group(Signal::SIGKILL);
        self.pgid = None;
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.signal_group(nix::sys::signal::Signal::SIGKILL);
    }
}

/// The MCP root of directory `dir`: its `file://` URI and its name.
#[allow(deprecated)] // see `Handler::list_roots`
fn root(dir: &std::path::Path) -> Option<rmcp::model::Root> {
    let uri = reqwest::Url::from_directory_path(dir).ok()?;
    let uri = uri.as_str().trim_end_matches('/').to_string();
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Some(rmcp::model::Root::new(uri).with_name(name))
}

/// Receives the server's notifications and answers its requests (roots).
struct Handler {
    conn: std::sync::Weak<Connection>,
}

impl rmcp::ClientHandler for Handler {
    /// As pi declares itself: `roots` (without `listChanged`).
    fn get_info(&self) -> ClientConfig {
        let capabilities = serde_json::from_value(serde_json::json!({"roots": {}})).unwrap_or_default();
        ClientConfig::new(capabilities, Implementation::new("pi", env!("CARGO_PKG_VERSION")))
    }

    /// pi's one root: the session's working directory, named by its last component.
    #[allow(deprecated)] // MCP roots are deprecated by SEP-2577; pi 1.6.0 still offers them.
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        let session_root = self.conn.upgrade().and_then(|c| c.root.lock().ok().and_then(|r| r.clone()));
        let dir = session_root.or_else(|| std::env::current_dir().ok());
        Ok(rmcp::model::ListRootsResult::new(dir.and_then(|dir| root(&dir)).into_iter().collect()))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(conn) = self.conn.upgrade() {
            tokio::spawn(conn.refresh_tools());
        }
    }

    /// A `notifications/message`: appended to the session's server log, as pi does.
    #[allow(deprecated)] // MCP logging is deprecated by SEP-2577; pi 1.6.0 still writes it.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(conn) = self.conn.upgrade() {
            let params = serde_json::to_value(&params).unwrap_or_default();
            conn.log.write(&conn.config.name, &params);
        }
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(conn) = self.conn.upgrade() {
            conn.on_progress(&params);
        }
    }
}

#[path = "requests.rs"]
mod requests;
#[path = "sign_in_watch.rs"]
mod sign_in_watch;
pub(super) use sign_in_watch::reconnect_signed_in;
#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
