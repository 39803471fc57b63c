//! One running extension: its child process, the tasks that read its
//! stdout (messages), write its stdin (one line per message) and log its
//! stderr, request/response correlation with a timeout that waits while the
//! extension waits on the user, and isolation when it crashes, hangs or
//! writes garbage.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::protocol::{self, Registration};
use super::ui::UiBroker;
use super::{HostSignal, Signals, Timeouts};
use crate::tools::ToolUpdate;

/// Longest line accepted from an extension.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// Lines queued for an extension that does not read them before it counts as stuck.
const OUTBOX: usize = 4096;
/// Stderr lines kept for the death message.
const STDERR_TAIL: usize = 5;

mod messages;

use messages::handle_message;

/// Answers an extension's `streamService` calls about one stream (its params, the call's answer).
pub type StreamService = Arc<dyn Fn(Value) -> futures::future::BoxFuture<'static, Result<Value, String>> + Send + Sync>;

const STARTING: u8 = 0;
const READY: u8 = 1;
const DEAD: u8 = 2;

/// Why a call to an extension did not return a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The extension answered with an error.
    Failed(String),
    /// The extension is (now) gone; an `extension_error` was already reported.
    Dead(String),
    /// The caller stopped waiting (abort).
    Cancelled,
}

struct PendingCall {
    method: String,
    tx: oneshot::Sender<Result<Value, CallError>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running (or dead) extension.
pub struct Extension {
    /// Index in load order.
    pub id: usize,
    pub path: PathBuf,
    name: RwLock<String>,
    registration: RwLock<Option<Registration>>,
    status: AtomicU8,
    out: Mutex<Option<mpsc::Sender<String>>>,
    pending: Mutex<HashMap<String, PendingCall>>,
    next_id: AtomicU64,
    last_activity: Mutex<Instant>,
    /// Cancelled to kill the process.
    kill: CancellationToken,
    /// Cancelled once the process has exited and the extension is cleaned up.
    exited: CancellationToken,
    /// Cancelled once its factory has run: it registered, died or was unloaded.
    settled: CancellationToken,
    /// Cancelled to give its factory its turn, when pi-rpc gives it
    /// ([`SpawnContext::turn_on_request`]: an extension a reload loads).
    turn: CancellationToken,
    /// The first recorded reason to stop it: (event, error).
    death: Mutex<Option<(String, String)>>,
    tool_updates: Mutex<HashMap<String, mpsc::UnboundedSender<ToolUpdate>>>,
    /// Running tool calls whose tool may call other tools, by call id.
    pub(super) nested: Mutex<HashMap<String, super::nested::NestedScope>>,
    /// Data the extension streams (`streamData`), by stream name.
    streams: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
    /// What watches the model call of a provider stream (pi's provider
    /// events for the stream options' `onPayload`, `onResponse`,
    /// `onProviderStreamEvent`), by stream name.
    stream_observers: Mutex<HashMap<String, Arc<dyn crate::provider::observe::RequestObserver>>>,
    /// What answers the extension's `streamService` calls about a stream, by stream name.
    stream_services: Mutex<HashMap<String, StreamService>>,
    /// Where built-in tools run for it write their full-output files.
    temp_dir: PathBuf,
    /// Open dialogs by the extension's request id (it may dismiss them).
    dialogs: Mutex<HashMap<String, CancellationToken>>,
    stderr_tail: Mutex<VecDeque<String>>,
    /// Cancelled when stderr reaches its end.
    stderr_done: CancellationToken,
    ui: Arc<UiBroker>,
    signals: Signals,
    timeouts: Timeouts,
    quiet: Arc<std::sync::atomic::AtomicBool>,
    /// Unloaded by a reload (its package or file went): no longer offered
    /// anything, and its exit is not reported.
    retired: std::sync::atomic::AtomicBool,
    /// The process's extension provider refreshes (`providerRefresh`).
    provider_refreshes: Option<Arc<super::provider_refreshes::ProviderRefreshes>>,
}

/// What an extension's process needs to start.
#[derive(Clone)]
pub(super) struct SpawnContext {
    pub cwd: PathBuf,
    pub hello: Value,
    pub ui: Arc<UiBroker>,
    pub signals: Signals,
    pub timeouts: Timeouts,
    /// Set during shutdown: deaths are then not reported.
    pub quiet: Arc<std::sync::atomic::AtomicBool>,
    /// The TypeScript extension host (for pi modules), prepared when the first needs it.
    pub host: Option<Arc<super::host::SharedHost>>,
    pub agent_dir: PathBuf,
    /// Where built-in tools run for extensions write their full-output files.
    pub temp_dir: PathBuf,
    /// The pi module loaded before this one (pi loads its extensions one
    /// after another): this one's factory runs once that one's has run.
    pub after: Option<Arc<Extension>>,
    /// The factory runs when pi-rpc gives it its turn ([`Extension::give_turn`]),
    /// as a reload's new runtime runs its factories in load order.
    pub turn_on_request: bool,
    pub provider_refreshes: Option<Arc<super::provider_refreshes::ProviderRefreshes>>,
}

impl Extension {
    /// The display name: the registered name, else the file name.
    pub fn name(&self) -> String {
        self.name.read().map(|n| n.clone()).unwrap_or_default()
    }

    pub fn path_string(&self) -> String {
        self.path.display().to_string()
    }

    pub fn registration(&self) -> Option<Registration> {
        self.registration.read().ok().and_then(|r| r.clone())
    }

    /// Its factory may run now (one started with [`SpawnContext::turn_on_request`]).
    pub fn give_turn(&self) {
        self.turn.cancel();
    }

    /// Once its factory has run: it registered, died or was unloaded.
    pub async fn factory_ran(&self) {
        tokio::select! {
            _ = self.settled.cancelled() => {}
            _ = self.exited.cancelled() => {}
        }
    }

    pub fn is_ready(&self) -> bool {
        self.status.load(Ordering::SeqCst) == READY
    }

    pub fn is_dead(&self) -> bool {
        self.status.load(Ordering::SeqCst) == DEAD || self.kill.is_cancelled() || self.is_retired()
    }

    /// Unloaded by a reload ([`Extension::retire`]).
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    /// Unload the extension (pi's reload of a package or file that went):
    /// from now on it is offered no events, commands or tools, and its exit
    /// is not reported; [`Extension::stop`] closes its input.
    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        self.settled.cancel();
    }

    /// Registered and alive, subscribed to `event`.
    pub fn subscribes(&self, event: &str) -> bool {
        !self.is_dead()
            && self.registration.read().ok().is_some_and(|r| r.as_ref().is_some_and(|r| r.subscribes(event)))
    }

    /// Whether it gets `event` as a request it answers once its handlers are
    /// done ([`protocol::AWAITED_EVENTS`]), not as a notification.
    pub fn awaits(&self, event: &str) -> bool {
        !self.is_dead() && self.registration.read().ok().is_some_and(|r| r.as_ref().is_some_and(|r| r.awaits(event)))
    }

    /// Queue one message; never waits. An extension that stopped reading is stopped.
    pub fn send(&self, message: &Value) -> bool {
        let Some(out) = lock(&self.out).clone() else { return false };
        let line = message.to_string();
        match out.try_send(line) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.fail("protocol", "the extension stopped reading its input".to_string());
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Stop the extension for `error` (reported once, as `extension_error`).
    pub fn fail(&self, event: &str, error: String) {
        {
            let mut death = lock(&self.death);
            if death.is_none() {
                *death = Some((event.to_string(), error));
            }
        }
        self.kill.cancel();
    }

    fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
    }

    /// Count now as the extension's last activity: it waits on pi-rpc's own
    /// long work (an OAuth login waiting for the user), it is not hung.
    pub fn keep_alive(&self) {
        self.touch();
    }

    /// Why it stopped, once recorded: `(event, error)`.
    pub(super) fn death(&self) -> Option<(String, String)> {
        lock(&self.death).clone()
    }

    pub(super) fn death_message(&self) -> String {
        lock(&self.death)
            .as_ref()
            .map(|(_, e)| e.clone())
            .unwrap_or_else(|| format!("extension {} is not running", self.name()))
    }

    /// Ask the extension to do `method` and wait for its answer. The wait is
    /// bounded by the call timeout, counted from the extension's last message
    /// and suspended while it waits on a dialog; past it the extension is
    /// stopped as hung.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, CallError> {
        self.call_bounded(method, params, cancel, true).await
    }

    /// [`Extension::call`] for work that may be silent longer than the call
    /// timeout (a model stream that thinks): no limit but the extension's
    /// death and `cancel`.
    pub async fn call_streaming(
        &self,
        method: &str,
        params: Value,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, CallError> {
        self.call_bounded(method, params, cancel, false).await
    }

    async fn call_bounded(
        &self,
        method: &str,
        params: Value,
        cancel: Option<&CancellationToken>,
        bounded: bool,
    ) -> Result<Value, CallError> {
        if self.is_dead() {
            return Err(self.dead().await);
        }
        let id = format!("h{}", self.next_id.fetch_add(1, Ordering::SeqCst) + 1);
        let (tx, mut rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), PendingCall { method: method.to_string(), tx });
        if !self.send(&protocol::request(&id, method, params)) {
            lock(&self.pending).remove(&id);
            return Err(self.dead().await);
        }
        let started = Instant::now();
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        loop {
            let deadline = self.deadline(started);
            tokio::select! {
                answer = &mut rx => {
                    return answer.unwrap_or_else(|_| Err(CallError::Dead(self.death_message())));
                }
                _ = cancel.cancelled() => {
                    lock(&self.pending).remove(&id);
                    self.send(&protocol::cancel(&id));
                    return Err(CallError::Cancelled);
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if !bounded || Instant::now() < self.deadline(started) {
                        continue;
                    }
                    if self.ui.pending_for(self.id) > 0 {
                        self.touch();
                        continue;
                    }
                    lock(&self.pending).remove(&id);
                    let ms = self.timeouts.call.as_millis();
                    self.fail(method, format!("no answer to \"{method}\" within {ms} ms: the extension was stopped"));
                    return Err(self.dead().await);
                }
            }
        }
    }

    /// The error of a call to a dead extension, once its death is reported.
    async fn dead(&self) -> CallError {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.exited.cancelled()).await;
        CallError::Dead(self.death_message())
    }

    fn deadline(&self, started: Instant) -> Instant {
        let last = *lock(&self.last_activity);
        last.max(started) + self.timeouts.call
    }

    /// Listen for `toolUpdate` messages about `tool_call_id`.
    pub fn watch_tool(&self, tool_call_id: &str, tx: mpsc::UnboundedSender<ToolUpdate>) {
        lock(&self.tool_updates).insert(tool_call_id.to_string(), tx);
    }

    /// Let the tool of call `tool_call_id` call other tools while it runs (`ctx.executeTool()`).
    pub fn watch_nested(&self, tool_call_id: &str, scope: super::nested::NestedScope) {
        lock(&self.nested).insert(tool_call_id.to_string(), scope);
    }

    /// The nested-call scope of the running call `params.toolCallId`.
    fn nested_scope(&self, params: &Value) -> Option<super::nested::NestedScope> {
        let caller = params.get("toolCallId").and_then(Value::as_str)?;
        lock(&self.nested).get(caller).cloned()
    }

    pub fn unwatch_tool(&self, tool_call_id: &str) {
        lock(&self.tool_updates).remove(tool_call_id);
        lock(&self.nested).remove(tool_call_id);
    }

    /// A partial result of a tool run for the extension (a built-in tool
    /// or a nested call), as a `builtinToolUpdate` notification for `call_id`.
    pub(super) fn send_tool_update(&self, call_id: &Value, update: ToolUpdate) {
        let mut params = serde_json::json!({"callId": call_id, "content": update.content});
        if let Some(details) = update.details {
            params["details"] = details;
        }
        self.send(&serde_json::json!({"type": "request", "method": "builtinToolUpdate", "params": params}));
    }

    /// Receive what the extension streams under `name` (`streamData`).
    pub fn open_stream(&self, name: &str) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.streams).insert(name.to_string(), tx);
        rx
    }

    pub fn close_stream(&self, name: &str) {
        lock(&self.streams).remove(name);
        lock(&self.stream_observers).remove(name);
        lock(&self.stream_services).remove(name);
    }

    /// `service` answers the extension's `streamService` calls about stream `name` (until it is closed).
    pub fn serve_stream(&self, name: &str, service: StreamService) {
        lock(&self.stream_services).insert(name.to_string(), service);
    }

    /// The service of the stream `params.stream` names.
    pub(super) fn stream_service(&self, params: &Value) -> Option<StreamService> {
        let name = params.get("stream").and_then(Value::as_str)?;
        lock(&self.stream_services).get(name).cloned()
    }

    /// `observer` watches the model call streamed under `name` (until it is closed).
    pub fn observe_stream(&self, name: &str, observer: Arc<dyn crate::provider::observe::RequestObserver>) {
        lock(&self.stream_observers).insert(name.to_string(), observer);
    }

    /// The observer of the stream `params.stream` names.
    pub(super) fn stream_observer(&self, params: &Value) -> Option<Arc<dyn crate::provider::observe::RequestObserver>> {
        let name = params.get("stream").and_then(Value::as_str)?;
        lock(&self.stream_observers).get(name).cloned()
    }

    /// Close the extension's input (it should exit); killed after `grace`.
    pub(super) async fn stop(&self, grace: Duration) {
        lock(&self.out).take();
        if tokio::time::timeout(grace, self.exited.cancelled()).await.is_err() {
            self.kill.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(1), self.exited.cancelled()).await;
        }
    }
}

/// Start the extension at `path` (index `id`). A process that cannot be
/// started is reported dead at once.
pub(super) fn spawn(id: usize, path: PathBuf, ctx: &SpawnContext) -> Arc<Extension> {
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (out_tx, out_rx) = mpsc::channel::<String>(OUTBOX);
    let ext = Arc::new(Extension {
        id,
        path: path.clone(),
        name: RwLock::new(file_name),
        registration: RwLock::new(None),
        status: AtomicU8::new(STARTING),
        out: Mutex::new(Some(out_tx)),
        pending: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        last_activity: Mutex::new(Instant::now()),
        kill: CancellationToken::new(),
        streams: Mutex::new(HashMap::new()),
        stream_observers: Mutex::new(HashMap::new()),
        stream_services: Mutex::new(HashMap::new()),
        temp_dir: ctx.temp_dir.clone(),
        exited: CancellationToken::new(),
        settled: CancellationToken::new(),
        turn: CancellationToken::new(),
        death: Mutex::new(None),
        tool_updates: Mutex::new(HashMap::new()),
        nested: Mutex::new(HashMap::new()),
        dialogs: Mutex::new(HashMap::new()),
        stderr_tail: Mutex::new(VecDeque::new()),
        stderr_done: CancellationToken::new(),
        ui: ctx.ui.clone(),
        signals: ctx.signals.clone(),
        timeouts: ctx.timeouts,
        quiet: ctx.quiet.clone(),
        retired: std::sync::atomic::AtomicBool::new(false),
        provider_refreshes: ctx.provider_refreshes.clone(),
    });
    if super::discovery::is_pi_module(&path) {
        // The host may have to be installed first: the process starts (and
        // its startup time counts) once it is ready.
        let ctx = ctx.clone();
        let started = ext.clone();
        tokio::spawn(async move {
            let cmd = match &ctx.host {
                Some(host) => host.get().await.map(|host| host.command(&path, &ctx.agent_dir)),
                None => Err("the TypeScript extension host was not prepared".to_string()),
            };
            start(started, cmd, out_rx, &ctx);
        });
    } else {
        start(ext.clone(), command_for(&path), out_rx, ctx);
    }
    ext
}

/// Start the process of `ext` with `cmd` (or report why it cannot run).
fn start(
    ext: Arc<Extension>,
    cmd: Result<tokio::process::Command, String>,
    out_rx: mpsc::Receiver<String>,
    ctx: &SpawnContext,
) {
    let path = ext.path.clone();
    let mut cmd = match cmd {
        Ok(cmd) => cmd,
        Err(e) => {
            ext.fail("startup", e);
            tokio::spawn(finish(ext, None));
            return;
        }
    };
    cmd.current_dir(&ctx.cwd)
        .env("PI_CODING_AGENT", "true")
        .env("PI_RPC_EXTENSION_PROTOCOL", protocol::PROTOCOL_VERSION.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    // From here to the agent's "started" line: the time pi-rpc waits for the
    // extension (bench/run.py measures it apart from pi-rpc's own start). The
    // spawn is part of it: it returns once the kernel has loaded node into
    // the new process, which under load waits for a CPU for milliseconds.
    tracing::debug!("extension {}: process started", ext.name());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            ext.fail("startup", format!("cannot start {}: {e}", path.display()));
            tokio::spawn(finish(ext, None));
            return;
        }
    };
    ext.send(&ctx.hello);
    if let Some(stdin) = child.stdin.take() {
        tokio::spawn(write_lines(stdin, out_rx));
    }
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(read_messages(ext.clone(), BufReader::new(stdout)));
    }
    match child.stderr.take() {
        Some(stderr) => {
            tokio::spawn(log_stderr(ext.clone(), BufReader::new(stderr)));
        }
        None => ext.stderr_done.cancel(),
    }
    tokio::spawn(supervise(ext.clone(), child));
    let after = ctx.after.clone();
    let on_request = ctx.turn_on_request;
    let limit = ctx.timeouts.startup;
    tokio::spawn(async move {
        if let Some(after) = after {
            factory_turn(&ext, after.settled.cancelled()).await;
        } else if on_request {
            let given = ext.turn.clone();
            factory_turn(&ext, given.cancelled()).await;
        }
        watch_startup(ext, limit).await;
    });
}

/// The TypeScript host compiles and imports its module at once (side by
/// side with the others) but runs the factory on its `turn`: once the pi
/// module before it has run its own (registered, died or was unloaded), so
/// every factory sees what pi's sequential loading shows it (the servers,
/// names and bus listeners of those loaded before it, none of those after).
/// Its start-up time counts from then. `due`: its turn came.
async fn factory_turn(ext: &Extension, due: impl std::future::Future<Output = ()>) {
    tokio::select! {
        _ = due => {}
        _ = ext.exited.cancelled() => return,
    }
    ext.touch();
    ext.send(&serde_json::json!({"type": "turn"}));
}

/// How many times the start-up limit an extension may take in all, however
/// often it shows a sign of life.
const STARTUP_BOUND_FACTOR: u32 = 6;

/// Stop `ext` if it does not register in time: within `limit` of its start
/// or of its last sign of life (any line it writes, such as the TypeScript
/// host's `starting` as it goes through its loading steps), and within
/// [`STARTUP_BOUND_FACTOR`] times `limit` in all. On a loaded machine a
/// busy extension keeps going; a silent one (hung, deadlocked) is still
/// stopped after `limit`.
async fn watch_startup(ext: Arc<Extension>, limit: Duration) {
    let began = Instant::now();
    let bound = began + limit * STARTUP_BOUND_FACTOR;
    loop {
        let silent_until = (*lock(&ext.last_activity)).max(began) + limit;
        tokio::time::sleep_until(silent_until.min(bound)).await;
        if ext.status.load(Ordering::SeqCst) != STARTING {
            return;
        }
        let now = Instant::now();
        if now >= bound {
            let total = (limit * STARTUP_BOUND_FACTOR).as_millis();
            ext.fail("startup", format!("the extension did not register within {total} ms"));
            return;
        }
        if now >= (*lock(&ext.last_activity)).max(began) + limit {
            let ms = limit.as_millis();
            ext.fail("startup", format!("the extension did not register within {ms} ms of its last sign of life"));
            return;
        }
    }
}

/// How to run a process extension: an executable directly, else by its
/// interpreter.
fn command_for(path: &std::path::Path) -> Result<tokio::process::Command, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = std::fs::metadata(path).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    let interpreter = match path.extension().and_then(|e| e.to_str()) {
        _ if executable => None,
        Some("py") => Some("python3"),
        Some("sh") => Some("sh"),
        _ => None,
    };
    Ok(match interpreter {
        Some(program) => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.arg(path);
            cmd
        }
        None => tokio::process::Command::new(path),
    })
}

async fn write_lines(mut stdin: tokio::process::ChildStdin, mut lines: mpsc::Receiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

async fn log_stderr<R: AsyncBufRead + Unpin>(ext: Arc<Extension>, mut reader: R) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => {
                ext.stderr_done.cancel();
                break;
            }
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                tracing::info!("extension {}: {line}", ext.name());
                let mut tail = lock(&ext.stderr_tail);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        }
    }
}

/// Read one LF-terminated line (without the LF; a trailing CR is dropped).
/// `Ok(None)` at end of input; an over-long line is an error.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        line.extend_from_slice(chunk);
        let used = found.unwrap_or(available.len());
        reader.consume(used);
        if line.len() > MAX_LINE {
            return Err(std::io::Error::other(format!("a line longer than {MAX_LINE} bytes")));
        }
        if found.is_some() {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

async fn read_messages<R: AsyncBufRead + Unpin>(ext: Arc<Extension>, mut reader: R) {
    loop {
        let line = match read_line(&mut reader).await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                ext.fail("protocol", format!("unreadable output: {e}"));
                break;
            }
        };
        ext.touch();
        let Ok(text) = String::from_utf8(line) else {
            ext.fail("protocol", "output is not valid UTF-8".to_string());
            break;
        };
        if text.trim().is_empty() {
            continue;
        }
        match protocol::parse_line(&text) {
            Ok(message) => handle_message(&ext, message).await,
            Err(e) => {
                ext.fail("protocol", e);
                break;
            }
        }
    }
}

/// Wait for the process to exit (or kill it when asked), then clean up.
async fn supervise(ext: Arc<Extension>, mut child: tokio::process::Child) {
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        _ = ext.kill.cancelled() => {
            if let Some(pid) = child.id() {
                crate::tools::shell::kill_process_group(pid);
            }
            let _ = child.kill().await;
            child.wait().await.ok()
        }
    };
    finish(ext, status).await;
}

/// Mark dead, fail what waits on it, and report why.
async fn finish(ext: Arc<Extension>, status: Option<std::process::ExitStatus>) {
    let was = ext.status.swap(DEAD, Ordering::SeqCst);
    ext.settled.cancel();
    lock(&ext.out).take();
    let pending: Vec<PendingCall> = lock(&ext.pending).drain().map(|(_, c)| c).collect();
    let recorded = lock(&ext.death).clone();
    if recorded.is_none() && status.is_some() {
        // Its last words explain the exit: let stderr drain first.
        let _ = tokio::time::timeout(Duration::from_millis(500), ext.stderr_done.cancelled()).await;
    }
    let (event, error) = recorded.unwrap_or_else(|| {
        let event = pending
            .first()
            .map(|c| c.method.clone())
            .unwrap_or_else(|| if was == STARTING { "startup".to_string() } else { "exit".to_string() });
        let status = status.map_or_else(|| "unknown status".to_string(), |s| s.to_string());
        let tail: Vec<String> = lock(&ext.stderr_tail).iter().cloned().collect();
        let mut error = format!("the extension exited unexpectedly ({status})");
        if let Some(last) = tail.last() {
            error.push_str(": ");
            error.push_str(last);
        }
        (event, error)
    });
    *lock(&ext.death) = Some((event.clone(), error.clone()));
    ext.ui.drop_owner(ext.id);
    lock(&ext.tool_updates).clear();
    lock(&ext.nested).clear();
    lock(&ext.streams).clear();
    // The death is queued for the actor before any waiting caller learns of
    // it, so its `extension_error` precedes what the callers do next.
    if !ext.quiet.load(Ordering::SeqCst) && !ext.is_retired() {
        ext.signals.deliver(HostSignal::Died { id: ext.id, event, error: error.clone() }).await;
    }
    for call in pending {
        let _ = call.tx.send(Err(CallError::Dead(error.clone())));
    }
    ext.exited.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_split_on_lf_and_drop_cr() {
        let data: &[u8] = b"{\"a\":1}\r\n\n{\"b\":2}";
        let mut reader = BufReader::new(data);
        assert_eq!(read_line(&mut reader).await.unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(read_line(&mut reader).await.unwrap().unwrap(), b"");
        assert_eq!(read_line(&mut reader).await.unwrap().unwrap(), b"{\"b\":2}");
        assert!(read_line(&mut reader).await.unwrap().is_none());
    }
}
