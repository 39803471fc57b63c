//! Codex's WebSocket transport, pi 1.6.0's default (`auto`) for the
//! `openai-codex-responses` API.
//!
//! * The socket goes to the SSE endpoint with a `ws`/`wss` scheme, with the
//!   SSE headers less `accept`/`content-type`, `OpenAI-Beta:
//!   responses_websockets=2026-02-06`, and the session id (else a UUIDv7) as
//!   `session-id` and `x-client-request-id`. A call is one text message
//!   `{"type": "response.create", …body}` (uncompressed JSON); every answer
//!   message is one event of the Responses stream, decoded by the same Codex
//!   decoder as the SSE body.
//! * Sockets are kept per session and account: reused while idle for less
//!   than 5 minutes and younger than 45 (a busy one is not shared: a second
//!   call opens its own). After a completed answer, the next call whose body
//!   equals the last one but for `input`, and whose `input` starts with the
//!   last input plus the answer's own items, sends only the new items with
//!   `previous_response_id`.
//! * A transport failure (no connection, a refused upgrade, the socket
//!   closing before the answer began) switches the session to SSE for good
//!   and the call is made over SSE; after the answer began it fails the call.
//!   API errors (`error` events, `response.failed`) fail the call as they do
//!   over SSE, except `previous_response_not_found` (retried once with the
//!   whole input) and `websocket_connection_limit_reached` before the answer
//!   began (retried once).
//!
//! * An idle socket is closed after 5 minutes by a timer, with code 1000 and
//!   reason `idle_timeout`, as pi closes it (a socket found stale when next
//!   looked at is closed then too).
//!
//! * When a proxy applies to the endpoint (`HTTP(S)_PROXY`, `NO_PROXY`, the
//!   settings' `httpProxy`), the socket goes through it in a `CONNECT`
//!   tunnel, as undici tunnels pi's WebSocket.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::Message;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use super::responses::Decoder;
use super::responses_request::{ResponsesCompat, convert_input, normalize_tool_call_id};
use crate::message::{AgentMessage, AssistantMessage};
use crate::provider::convert;
use crate::provider::driver::{Out, Wire};
use crate::provider::http::HttpClient;
use crate::provider::shared::set_header;
use crate::provider::sse::SseEvent;
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest, ProviderStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

const BETA: &str = "responses_websockets=2026-02-06";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const IDLE_LIMIT: Duration = Duration::from_secs(5 * 60);
const AGE_LIMIT: Duration = Duration::from_secs(45 * 60);
const PREVIOUS_RESPONSE_NOT_FOUND: &str = "previous_response_not_found";
const CONNECTION_LIMIT_REACHED: &str = "websocket_connection_limit_reached";

/// The `ws`/`wss` URL of a Codex endpoint (pi's `resolveCodexWebSocketUrl`).
pub fn websocket_url(endpoint: &str) -> String {
    if let Some(rest) = endpoint.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = endpoint.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        endpoint.to_string()
    }
}

/// The handshake's headers, from the SSE ones (pi's `buildWebSocketHeaders`).
pub fn websocket_headers(sse: &[(String, String)], request_id: &str) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = sse
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            !matches!(k.as_str(), "accept" | "content-type" | "openai-beta" | "session-id" | "x-client-request-id")
        })
        .cloned()
        .collect();
    // What Node's WebSocket (pi's) sends on every handshake.
    set_header(&mut headers, "pragma", "no-cache");
    set_header(&mut headers, "cache-control", "no-cache");
    set_header(&mut headers, "OpenAI-Beta", BETA);
    set_header(&mut headers, "x-client-request-id", request_id);
    set_header(&mut headers, "session-id", request_id);
    headers
}

/// What the last completed call on a socket leaves for the next one.
#[derive(Clone)]
struct Continuation {
    body: Value,
    response_id: String,
    items: Vec<Value>,
}

struct Idle {
    socket: Socket,
    created: Instant,
    released: Instant,
    continuation: Option<Continuation>,
    /// Which release this is: the idle timer closes only the socket it was set for.
    generation: u64,
}

/// Sockets and SSE fallbacks of the sessions of one process.
pub struct Sessions {
    inner: Mutex<SessionsInner>,
    /// How long a socket may stay idle (pi's 5 minutes).
    idle_limit: Duration,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::with_idle_limit(IDLE_LIMIT)
    }
}

#[derive(Default)]
struct SessionsInner {
    idle: HashMap<(String, String), Idle>,
    busy: HashSet<(String, String)>,
    fallback: HashSet<String>,
    releases: u64,
}

impl Sessions {
    /// Sessions whose idle sockets close after `idle_limit` (tests use a short one).
    pub fn with_idle_limit(idle_limit: Duration) -> Sessions {
        Sessions { inner: Mutex::default(), idle_limit }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionsInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the session already fell back to SSE.
    pub fn falls_back(&self, session: Option<&str>) -> bool {
        session.is_some_and(|s| self.lock().fallback.contains(s))
    }

    fn record_failure(&self, session: Option<&str>) {
        if let Some(s) = session {
            self.lock().fallback.insert(s.to_string());
        }
    }
}

/// A socket for one call.
struct Lease {
    socket: Socket,
    /// Where it goes back to (`None`: closed after the call).
    key: Option<(String, String)>,
    created: Instant,
    continuation: Option<Continuation>,
}

/// Why a WebSocket attempt ended without a live answer.
enum Failure {
    /// No answer could be had over the socket: fall back to SSE.
    Transport(String),
    /// The backend answered with an error event (its code, and the error in pi's words).
    Api(Option<String>, ProviderError),
    /// Fail the call as it is (a malformed message, cancellation).
    Fatal(ProviderError),
}

/// The parts of an answer message the transport looks at.
#[derive(Deserialize, Default)]
struct Head {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    error: Option<ErrorHead>,
    #[serde(default)]
    response: Option<ResponseHead>,
}

#[derive(Deserialize, Default)]
struct ErrorHead {
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Deserialize, Default)]
struct ResponseHead {
    #[serde(default)]
    error: Option<ErrorHead>,
}

impl Head {
    fn is_error(&self) -> bool {
        matches!(self.kind.as_str(), "error" | "response.failed")
    }

    fn is_completion(&self) -> bool {
        matches!(self.kind.as_str(), "response.completed" | "response.done" | "response.incomplete")
    }

    fn error_code(&self) -> Option<String> {
        let nested = |e: &Option<ErrorHead>| e.as_ref().and_then(|e| e.code.as_ref()?.as_str().map(str::to_string));
        match self.kind.as_str() {
            "error" => self.code.clone().or_else(|| nested(&self.error)),
            _ => self.response.as_ref().and_then(|r| nested(&r.error)),
        }
    }
}

/// One call over WebSocket, ready to stream.
pub(crate) struct Attempt {
    pub http: HttpClient,
    pub sessions: Arc<Sessions>,
    pub request: ProviderRequest,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub account: String,
    pub cancel: CancellationToken,
}

/// The live answer after its first event.
struct Live {
    socket: Socket,
    lease_key: Option<(String, String)>,
    created: Instant,
    decoder: Decoder,
    out: Out,
    pending: VecDeque<Result<ProviderEvent, ProviderError>>,
    seen: Vec<ProviderEvent>,
    done: bool,
    /// The answer's first message, decoded once `Opened` is handed out (pi-ai
    /// hands the agent its `start` before the first stream event).
    first: Option<(SseEvent, bool)>,
    /// The consumer's gate: the next message is read once it handed over
    /// the events decoded so far (see [`crate::provider::read_gate`]).
    gate: Option<Arc<crate::provider::read_gate::ReadGate>>,
}

/// Run the call over WebSocket; `Err` when it should go over SSE instead.
pub(crate) async fn start(attempt: Attempt) -> Result<ProviderStream, Box<ProviderRequest>> {
    let session = attempt.request.session_id.clone();
    let mut retried_continuation = false;
    let mut retried_limit = false;
    let mut drop_continuation = false;
    loop {
        match try_once(&attempt, drop_continuation).await {
            Ok(live) => return Ok(stream_live(live, attempt)),
            Err(Failure::Api(code, err)) => {
                let code = code.as_deref();
                if code == Some(PREVIOUS_RESPONSE_NOT_FOUND) && !retried_continuation {
                    retried_continuation = true;
                    drop_continuation = true;
                    continue;
                }
                if code == Some(CONNECTION_LIMIT_REACHED) && !retried_limit {
                    retried_limit = true;
                    continue;
                }
                return Ok(futures::stream::iter([Err(err)]).boxed());
            }
            Err(Failure::Fatal(err)) => return Ok(futures::stream::iter([Err(err)]).boxed()),
            Err(Failure::Transport(why)) => {
                tracing::debug!("Codex WebSocket failed, SSE for the session from now on: {why}");
                attempt.sessions.record_failure(session.as_deref());
                return Err(Box::new(attempt.request));
            }
        }
    }
}

async fn connect(attempt: &Attempt) -> Result<Socket, Failure> {
    crate::provider::http::install_crypto_provider();
    let target = attempt.http.target(&attempt.url);
    let mut handshake =
        target.as_str().into_client_request().map_err(|e| Failure::Transport(format!("bad WebSocket URL: {e}")))?;
    for (k, v) in &attempt.headers {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) else { continue };
        handshake.headers_mut().insert(name, value);
    }
    let proxy = attempt.http.proxy_for(&attempt.url);
    let connecting = async {
        let Some(proxy) = proxy else {
            return tokio_tungstenite::connect_async(handshake).await.map_err(|e| e.to_string());
        };
        let stream = tunnel(&proxy, &target).await?;
        tokio_tungstenite::client_async_tls_with_config(handshake, stream, None, None).await.map_err(|e| e.to_string())
    };
    tokio::select! {
        _ = attempt.cancel.cancelled() => Err(Failure::Fatal(ProviderError::aborted())),
        r = tokio::time::timeout(CONNECT_TIMEOUT, connecting) => match r {
            Err(_) => Err(Failure::Transport(format!("WebSocket connect timeout after {}ms", CONNECT_TIMEOUT.as_millis()))),
            Ok(Err(e)) => Err(Failure::Transport(e)),
            Ok(Ok((socket, _))) => Ok(socket),
        },
    }
}

/// A connection to `target`'s host through the HTTP proxy `proxy`: a
/// `CONNECT host:port` tunnel (with the proxy URL's credentials as Basic
/// `Proxy-Authorization`), as undici's proxy agent opens one for pi's socket.
async fn tunnel(proxy: &str, target: &str) -> Result<TcpStream, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let proxy = if proxy.contains("://") { proxy.to_string() } else { format!("http://{proxy}") };
    let proxy = reqwest::Url::parse(&proxy).map_err(|e| format!("bad proxy URL: {e}"))?;
    if proxy.scheme() != "http" {
        return Err(format!("a {} proxy cannot carry the WebSocket", proxy.scheme()));
    }
    let target = reqwest::Url::parse(target).map_err(|e| format!("bad WebSocket URL: {e}"))?;
    let (Some(host), Some(port)) = (target.host_str(), target.port_or_known_default()) else {
        return Err(format!("no host in {target}"));
    };
    let authority = format!("{host}:{port}");
    let proxy_host = proxy.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    let proxy_port = proxy.port_or_known_default().unwrap_or(80);
    let mut stream = TcpStream::connect((proxy_host, proxy_port)).await.map_err(|e| format!("proxy: {e}"))?;
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if !proxy.username().is_empty() {
        use base64::Engine;
        let user = format!("{}:{}", percent_decoded(proxy.username()), percent_decoded(proxy.password().unwrap_or("")));
        let encoded = base64::engine::general_purpose::STANDARD.encode(user);
        head.push_str(&format!("Proxy-Authorization: Basic {encoded}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.map_err(|e| format!("proxy: {e}"))?;
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() > 16 * 1024 || stream.read(&mut byte).await.map_err(|e| format!("proxy: {e}"))? == 0 {
            return Err("the proxy ended the CONNECT without an answer".into());
        }
        answer.push(byte[0]);
    }
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some(code) if code.starts_with('2') => Ok(stream),
        _ => Err(format!("the proxy refused the tunnel: {status}")),
    }
}

/// `%xx` escapes of a URL's user info undone.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%').then(|| text.get(i + 1..i + 3)).flatten();
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether an idle socket is still open (nothing waiting on it but silence).
fn still_open(socket: &mut Socket) -> bool {
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    matches!(socket.poll_next_unpin(&mut cx), std::task::Poll::Pending)
}

async fn acquire(attempt: &Attempt) -> Result<Lease, Failure> {
    let Some(session) = attempt.request.session_id.clone() else {
        return Ok(Lease { socket: connect(attempt).await?, key: None, created: Instant::now(), continuation: None });
    };
    let key = (session, attempt.account.clone());
    let claimed = {
        let mut inner = attempt.sessions.lock();
        if inner.busy.contains(&key) {
            None
        } else {
            inner.busy.insert(key.clone());
            Some(inner.idle.remove(&key))
        }
    };
    let Some(cached) = claimed else {
        // The session's socket is busy: this call gets one of its own.
        let socket = connect(attempt).await?;
        return Ok(Lease { socket, key: None, created: Instant::now(), continuation: None });
    };
    if let Some(mut idle) = cached {
        let fresh = idle.created.elapsed() < AGE_LIMIT && idle.released.elapsed() < attempt.sessions.idle_limit;
        if fresh && still_open(&mut idle.socket) {
            return Ok(Lease {
                socket: idle.socket,
                key: Some(key),
                created: idle.created,
                continuation: idle.continuation,
            });
        }
        let _ = idle.socket.close(None).await;
    }
    match connect(attempt).await {
        Ok(socket) => Ok(Lease { socket, key: Some(key), created: Instant::now(), continuation: None }),
        Err(e) => {
            attempt.sessions.lock().busy.remove(&key);
            Err(e)
        }
    }
}

fn release(sessions: &Arc<Sessions>, key: Option<(String, String)>, kept: Option<Idle>) {
    let Some(key) = key else { return };
    let mut inner = sessions.lock();
    inner.busy.remove(&key);
    if let Some(mut idle) = kept {
        inner.releases += 1;
        idle.generation = inner.releases;
        close_when_idle(sessions, key.clone(), idle.generation);
        inner.idle.insert(key, idle);
    }
}

/// pi's idle timer: the socket released as `generation` is closed once it
/// stayed idle for the limit (not when a call took it meanwhile).
fn close_when_idle(sessions: &Arc<Sessions>, key: (String, String), generation: u64) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let (weak, limit) = (Arc::downgrade(sessions), sessions.idle_limit);
    runtime.spawn(async move {
        tokio::time::sleep(limit).await;
        let Some(sessions) = weak.upgrade() else { return };
        let expired = {
            let mut inner = sessions.lock();
            match inner.idle.get(&key) {
                Some(idle) if idle.generation == generation => inner.idle.remove(&key),
                _ => None,
            }
        };
        if let Some(mut idle) = expired {
            let frame = CloseFrame { code: CloseCode::Normal, reason: "idle_timeout".into() };
            let _ = idle.socket.close(Some(frame)).await;
        }
    });
}

/// pi's `buildCachedWebSocketRequestBody`: the delta after the last answer, when it applies.
fn continued_body(body: &Value, continuation: Option<&Continuation>) -> Value {
    let Some(c) = continuation else { return body.clone() };
    let without_input = |v: &Value| {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("input");
        m.remove("previous_response_id");
        m
    };
    if without_input(body) != without_input(&c.body) {
        return body.clone();
    }
    let input = body.get("input").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut baseline = c.body.get("input").and_then(Value::as_array).cloned().unwrap_or_default();
    baseline.extend(c.items.iter().cloned());
    if input.len() < baseline.len() || input[..baseline.len()] != baseline[..] {
        return body.clone();
    }
    let mut delta = body.clone();
    delta["previous_response_id"] = json!(c.response_id);
    delta["input"] = Value::Array(input[baseline.len()..].to_vec());
    delta
}

fn message_text(message: Message) -> Result<Option<String>, Failure> {
    match message {
        Message::Text(t) => Ok(Some(t.to_string())),
        Message::Binary(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Message::Close(frame) => Err(Failure::Transport(match frame {
            Some(f) if !f.reason.is_empty() => format!("WebSocket closed {} {}", u16::from(f.code), f.reason),
            Some(f) => format!("WebSocket closed {}", u16::from(f.code)),
            None => "WebSocket closed".to_string(),
        })),
        _ => Ok(None),
    }
}

fn sse_event(text: String, head: &Head) -> SseEvent {
    SseEvent { event: head.kind.clone(), data: text, ..SseEvent::default() }
}

async fn try_once(attempt: &Attempt, drop_continuation: bool) -> Result<Live, Failure> {
    let mut lease = acquire(attempt).await?;
    if drop_continuation {
        lease.continuation = None;
    }
    let continuation = lease.continuation.as_ref().filter(|_| super::codex_transport::transport().continues());
    let body = continued_body(&attempt.body, continuation);
    let mut message = Map::new();
    message.insert("type".into(), json!("response.create"));
    if let Value::Object(fields) = body {
        message.extend(fields);
    }
    let failed = |lease: Lease, f: Failure| {
        release(&attempt.sessions, lease.key, None);
        Err(f)
    };
    if let Err(e) = lease.socket.send(Message::text(Value::Object(message).to_string())).await {
        return failed(lease, Failure::Transport(e.to_string()));
    }
    let mut decoder = Decoder::codex();
    let mut out = Out::default();
    loop {
        let next = tokio::select! {
            _ = attempt.cancel.cancelled() => return failed(lease, Failure::Fatal(ProviderError::aborted())),
            n = lease.socket.next() => n,
        };
        let text = match next {
            None => return failed(lease, Failure::Transport("WebSocket closed".into())),
            Some(Err(e)) => return failed(lease, Failure::Transport(e.to_string())),
            Some(Ok(m)) => match message_text(m) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(f) => return failed(lease, f),
            },
        };
        let Ok(head) = serde_json::from_str::<Head>(&text) else {
            let err = ProviderError::new(
                ProviderErrorKind::Transient,
                format!("Invalid Codex WebSocket JSON: {}", text.chars().take(200).collect::<String>()),
            );
            return failed(lease, Failure::Fatal(err));
        };
        if head.kind.is_empty() {
            continue;
        }
        let event = sse_event(text, &head);
        if head.is_error() {
            let err = match decoder.on_event(&event, &mut out) {
                Err(e) => e,
                Ok(_) => ProviderError::new(ProviderErrorKind::Transient, "Codex response failed"),
            };
            return failed(lease, Failure::Api(head.error_code(), err));
        }
        return Ok(Live {
            socket: lease.socket,
            lease_key: lease.key,
            created: lease.created,
            decoder,
            out,
            pending: VecDeque::from([Ok(ProviderEvent::Opened)]),
            seen: Vec::new(),
            done: false,
            first: Some((event, head.is_completion())),
            gate: crate::provider::read_gate::current(),
        });
    }
}

impl Live {
    /// Decode one message; after the completion, the closing events. An
    /// extension's `provider_stream_event` handlers see it first and are
    /// awaited (as pi-ai awaits them), and cancellation ends that wait as it
    /// ends the HTTP transports' (the call is then aborted).
    async fn feed(&mut self, event: &SseEvent, completion: bool, cancel: &CancellationToken) {
        if let Some(observer) = crate::provider::observe::current().filter(|o| o.wants_stream_events()) {
            let data = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            let seen = tokio::select! {
                biased;
                _ = cancel.cancelled() => false,
                _ = observer.stream_event(data) => true,
            };
            if !seen {
                self.pending.push_back(Err(ProviderError::aborted()));
                self.done = true;
                return;
            }
        }
        let mut result = self.decoder.on_event(event, &mut self.out).map(|_| ());
        if completion && result.is_ok() {
            result = self.decoder.finish(&mut self.out);
        }
        for item in self.out.take() {
            if let Ok(e) = &item {
                self.seen.push(e.clone());
            }
            self.pending.push_back(item);
        }
        if let Err(e) = result {
            self.pending.push_back(Err(e));
            self.done = true;
        }
        if completion {
            self.done = true;
        }
    }
}

/// The answer's own items, as the next call's input holds them (pi converts
/// the finished message alone).
async fn answer_items(request: &ProviderRequest, events: Vec<ProviderEvent>) -> (Option<String>, Vec<Value>) {
    struct Replay(Mutex<Vec<ProviderEvent>>);
    impl Provider for Replay {
        fn api(&self) -> &str {
            "openai-codex-responses"
        }
        fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
            let events = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
            futures::stream::iter(events.into_iter().map(Ok)).boxed()
        }
    }
    let mut bare = request.clone();
    bare.messages.clear();
    bare.tools.clear();
    bare.system_prompt.clear();
    let replay: Arc<dyn Provider> = Arc::new(Replay(Mutex::new(events)));
    let model = request.model.clone();
    let outcome =
        crate::stream::stream_assistant(None, replay, bare.clone(), CancellationToken::new(), &model, None).await;
    let message: AssistantMessage = outcome.message;
    let response_id = message.response_id.clone();
    let compat = ResponsesCompat::resolve(&model);
    let normalize = |id: &str, source: &AssistantMessage| normalize_tool_call_id(&model, id, source);
    let llm = convert::transform_with(convert::to_llm(&[AgentMessage::Assistant(message)]), &model, Some(&normalize));
    let items = convert_input(&model, &compat, &bare, &llm, None)
        .into_iter()
        .filter(|i| {
            !matches!(i.get("type").and_then(Value::as_str), Some("function_call_output" | "custom_tool_call_output"))
        })
        .collect();
    (response_id, items)
}

fn stream_live(live: Live, attempt: Attempt) -> ProviderStream {
    let state = (Some(live), attempt);
    futures::stream::unfold(state, |(live, attempt)| async move {
        let mut live = live?;
        loop {
            if let Some(item) = live.pending.pop_front() {
                let failed = item.is_err();
                if failed {
                    live.pending.clear();
                    live.done = true;
                    let _ = live.socket.close(None).await;
                    release(&attempt.sessions, live.lease_key.take(), None);
                    return Some((item, (None, attempt)));
                }
                return Some((item, (Some(live), attempt)));
            }
            if let Some((event, completion)) = live.first.take() {
                live.feed(&event, completion, &attempt.cancel).await;
                continue;
            }
            if live.done {
                finish(live, &attempt).await;
                return None;
            }
            if let Some(gate) = &live.gate {
                tokio::select! {
                    biased;
                    _ = attempt.cancel.cancelled() => {}
                    _ = std::future::poll_fn(|cx| gate.poll_open(cx)) => {}
                }
            }
            let next = tokio::select! {
                _ = attempt.cancel.cancelled() => None,
                n = live.socket.next() => Some(n),
            };
            let failure = match next {
                None => Some(ProviderError::aborted()),
                Some(None) => Some(transport_failure("WebSocket stream closed before response.completed")),
                Some(Some(Err(e))) => Some(transport_failure(&e.to_string())),
                Some(Some(Ok(m))) => match message_text(m) {
                    Ok(None) => None,
                    Err(Failure::Transport(why)) => Some(transport_failure(&why)),
                    Err(_) => Some(transport_failure("WebSocket closed")),
                    Ok(Some(text)) => {
                        let head = serde_json::from_str::<Head>(&text).unwrap_or_default();
                        let event = sse_event(text, &head);
                        live.feed(&event, head.is_completion(), &attempt.cancel).await;
                        None
                    }
                },
            };
            if let Some(err) = failure {
                if err.kind != ProviderErrorKind::Aborted {
                    attempt.sessions.record_failure(attempt.request.session_id.as_deref());
                }
                live.pending.push_back(Err(err));
            }
        }
    })
    .boxed()
}

fn transport_failure(why: &str) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Transient, why.to_string())
}

/// A completed answer: the socket goes back to its session with what the next call continues from.
async fn finish(live: Live, attempt: &Attempt) {
    let Live { socket, lease_key, created, seen, .. } = live;
    if lease_key.is_none() {
        let mut socket = socket;
        let _ = socket.close(None).await;
        return;
    }
    let (response_id, items) = answer_items(&attempt.request, seen).await;
    let continuation = response_id.map(|response_id| Continuation { body: attempt.body.clone(), response_id, items });
    let idle = Idle { socket, created, released: Instant::now(), continuation, generation: 0 };
    release(&attempt.sessions, lease_key, Some(idle));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_headers() {
        assert_eq!(
            websocket_url("https://chatgpt.com/backend-api/codex/responses"),
            "wss://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(websocket_url("http://127.0.0.1:9/codex/responses"), "ws://127.0.0.1:9/codex/responses");
        let sse: Vec<(String, String)> = [
            ("originator", "pi"),
            ("authorization", "Bearer t"),
            ("OpenAI-Beta", "responses=experimental"),
            ("accept", "text/event-stream"),
            ("content-type", "application/json"),
            ("session-id", "s"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let ws = websocket_headers(&sse, "req-1");
        let names: Vec<&str> = ws.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "originator",
                "authorization",
                "pragma",
                "cache-control",
                "OpenAI-Beta",
                "x-client-request-id",
                "session-id"
            ]
        );
        assert_eq!(ws[4].1, BETA);
        assert_eq!(ws[6].1, "req-1");
    }

    #[test]
    fn a_continuation_sends_only_the_new_items() {
        let first = json!({"model": "m", "input": [{"role": "user", "content": "a"}], "store": false});
        let c = Continuation {
            body: first.clone(),
            response_id: "resp_1".into(),
            items: vec![json!({"type": "function_call", "call_id": "c1"})],
        };
        let next = json!({"model": "m", "input": [{"role": "user", "content": "a"},
            {"type": "function_call", "call_id": "c1"}, {"type": "function_call_output", "call_id": "c1"}], "store": false});
        let sent = continued_body(&next, Some(&c));
        assert_eq!(sent["previous_response_id"], "resp_1");
        assert_eq!(sent["input"], json!([{"type": "function_call_output", "call_id": "c1"}]));
        // Another body (a changed option) or another history: the whole input.
        let changed = json!({"model": "m2", "input": next["input"].clone(), "store": false});
        assert_eq!(continued_body(&changed, Some(&c)), changed);
        let edited = json!({"model": "m", "input": [{"role": "user", "content": "b"}], "store": false});
        assert_eq!(continued_body(&edited, Some(&c)), edited);
        assert_eq!(continued_body(&next, None), next);
    }

    #[test]
    fn error_codes_of_error_events() {
        let head: Head =
            serde_json::from_str(r#"{"type":"error","error":{"code":"previous_response_not_found"}}"#).unwrap();
        assert!(head.is_error());
        assert_eq!(head.error_code().as_deref(), Some(PREVIOUS_RESPONSE_NOT_FOUND));
        let head: Head =
            serde_json::from_str(r#"{"type":"error","code":"websocket_connection_limit_reached"}"#).unwrap();
        assert_eq!(head.error_code().as_deref(), Some(CONNECTION_LIMIT_REACHED));
        let head: Head =
            serde_json::from_str(r#"{"type":"response.failed","response":{"error":{"code":"x"}}}"#).unwrap();
        assert_eq!(head.error_code().as_deref(), Some("x"));
        let head: Head = serde_json::from_str(r#"{"type":"response.done","response":{}}"#).unwrap();
        assert!(head.is_completion() && !head.is_error());
    }
}

#[cfg(test)]
#[path = "codex_ws/tests.rs"]
mod transport_tests;
