//! The fake model server: a scriptable HTTP/1.1 server on 127.0.0.1 that
//! streams model replies byte-accurately and records every request.
//!
//! It picks the wire format from the request path ([`Format`]): OpenAI Chat
//! Completions (`…/chat/completions`), Anthropic Messages (`…/messages`),
//! OpenAI Responses (`…/responses`) and Gemini (`…:streamGenerateContent`),
//! each rendered by its own module from the same API-neutral reply script.
//! Other paths get a 404.
//!
//! Reply selection, per request: the first marker rule whose marker is found
//! (see [`MarkerScope`]), else the next queued reply, else the fallback reply
//! (by default the text `ok`). Streams use chunked transfer encoding, so a
//! cut stream is a real mid-body disconnect; every connection serves one
//! request (`connection: close`, except on a cut stream, where it is left out
//! so that clients see the peer vanish from a keep-alive connection).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use pi_fake_server::{FakeServer, Reply};
//! let server = FakeServer::start().await?;
//! server.push(Reply::error(500, r#"{"error":{"message":"boom"}}"#).header("retry-after", "1"));
//! server.push(Reply::text("hello"));
//! server.on_marker("#tool", Reply::tool_call("call_1", "bash", r#"{"command":"ls"}"#));
//! let url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = url;
//! let requests = server.requests();
//! # let _ = requests;
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod anthropic;
pub mod anthropic_federation;
pub mod aws_services;
pub mod bedrock;
pub mod copilot_api;
pub mod gemini;
mod http;
pub mod llama_router;
pub mod model_catalogs;
pub mod openai;
pub mod pi_messages;
pub mod reply;
pub mod request_info;
pub mod responses;
pub mod typed_models;
mod websocket;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper::Response;
use serde::Deserialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use reply::{Ending, FakeToolCall, FakeUsage, Part, Reply, ReplyBody, ReplySpec, StreamReply};
pub use request_info::RequestInfo;

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path with query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The body as sent (decompressed when it came with `content-encoding: zstd`).
    pub raw_body: Vec<u8>,
}

impl RecordedRequest {
    /// First value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// Text of the conversation's last message (see [`MarkerScope::LastMessage`]).
    pub fn last_message_text(&self) -> String {
        messages(&self.body).last().map(message_text).unwrap_or_default()
    }
}

/// Where a marker must appear for its rule to fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MarkerScope {
    /// In the last message of the conversation: the user prompt on a fresh turn, the
    /// tool result after a tool call. A rule keyed on a prompt thus fires once per
    /// prompt, not again on the follow-up request that carries the tool results.
    #[default]
    LastMessage,
    /// In the last message whose role is `user`.
    LastUser,
    /// Anywhere in the request body.
    Anywhere,
}

#[derive(Debug, Clone)]
struct Rule {
    marker: String,
    scope: MarkerScope,
    reply: Reply,
}

struct State {
    queue: VecDeque<Reply>,
    rules: Vec<Rule>,
    fallback: Reply,
    requests: Vec<RecordedRequest>,
    aws: Option<AwsAuth>,
    /// WebSocket upgrades are served (see [`FakeServer::accept_websockets`]).
    websockets: bool,
    /// How each client ended a WebSocket (see [`FakeServer::websocket_endings`]).
    websocket_endings: Vec<String>,
    /// llama-server's router routes (see [`FakeServer::serve_llama_router`]).
    llama: Option<llama_router::LlamaRouter>,
    /// pi's model catalog server (see [`FakeServer::serve_model_catalogs`]).
    catalogs: Option<model_catalogs::Catalogs>,
}

/// What the Bedrock route accepts (see [`FakeServer::require_aws_auth`]).
#[derive(Debug, Clone)]
struct AwsAuth {
    access_key_id: String,
    secret: String,
    bearer: Option<String>,
}

impl AwsAuth {
    /// Why the request is refused, if it is.
    fn refusal(&self, request: &RecordedRequest) -> Option<String> {
        match request.header("authorization") {
            None => Some("Missing Authentication Token".into()),
            Some(v) if v.starts_with("Bearer ") => {
                (self.bearer.as_deref() != Some(&v[7..])).then(|| "Invalid bearer token".to_string())
            }
            Some(_) => {
                let signed = bedrock::verify_sigv4(request, &self.access_key_id, &self.secret).err();
                // Temporary credentials the fake AWS services issued sign as well.
                let issued = || {
                    aws_services::ALL.iter().any(|c| bedrock::verify_sigv4(request, c.access_key_id, c.secret).is_ok())
                };
                signed.filter(|_| !issued())
            }
        }
    }
}

impl State {
    fn select(&mut self, req: &RecordedRequest) -> Reply {
        for rule in &self.rules {
            let found = match rule.scope {
                MarkerScope::LastMessage => req.last_message_text().contains(&rule.marker),
                MarkerScope::LastUser => messages(&req.body)
                    .iter()
                    .rev()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                    .is_some_and(|m| message_text(m).contains(&rule.marker)),
                MarkerScope::Anywhere => String::from_utf8_lossy(&req.raw_body).contains(&rule.marker),
            };
            if found {
                return rule.reply.clone();
            }
        }
        self.queue.pop_front().unwrap_or_else(|| self.fallback.clone())
    }
}

/// The wire format a request path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI Chat Completions (`…/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`…/messages`).
    Anthropic,
    /// OpenAI Responses (`…/responses`).
    Responses,
    /// Gemini `…:streamGenerateContent`.
    Gemini,
    /// Amazon Bedrock `/model/{id}/converse-stream` (AWS event stream).
    Bedrock,
    /// pi's own protocol (`…/messages` with a `context`, see [`pi_messages`]).
    PiMessages,
}

impl Format {
    /// The format served on `path` (query ignored), if any.
    pub fn of_path(path: &str) -> Option<Format> {
        let path = path.split('?').next().unwrap_or("");
        if path.ends_with("/chat/completions") {
            Some(Format::OpenAi)
        } else if path.ends_with("/messages") {
            Some(Format::Anthropic)
        } else if path.ends_with("/responses") {
            Some(Format::Responses)
        } else if path.ends_with(":streamGenerateContent") {
            Some(Format::Gemini)
        } else if path.ends_with("/converse-stream") {
            Some(Format::Bedrock)
        } else {
            None
        }
    }

    /// The format of a request: by its path, and for `…/messages` by its
    /// body (pi's protocol carries a `context`, Anthropic's `messages`).
    pub fn of_request(path: &str, body: &Value) -> Option<Format> {
        match Format::of_path(path) {
            Some(Format::Anthropic) if pi_messages::is_pi_messages(body) => Some(Format::PiMessages),
            other => other,
        }
    }

    /// The response frames of a streamed reply to a request with this body.
    pub fn render(self, script: &StreamReply, body: &Value) -> Vec<openai::Frame> {
        match self {
            Format::OpenAi => openai::render(script, &openai::RequestInfo::from_body(body)),
            Format::Anthropic => anthropic::render(script, &RequestInfo::of(body, anthropic::PROMPT)),
            Format::Responses => responses::render(script, &RequestInfo::of(body, responses::PROMPT)),
            Format::PiMessages => pi_messages::render(script, &RequestInfo::of(body, pi_messages::PROMPT)),
            Format::Gemini => gemini::render(script, &RequestInfo::of(body, gemini::PROMPT)),
            Format::Bedrock => bedrock::render(script, &RequestInfo::of(body, bedrock::PROMPT)),
        }
    }

    /// The content type of a streamed answer.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Bedrock => bedrock::CONTENT_TYPE,
            _ => "text/event-stream; charset=utf-8",
        }
    }
}

/// The conversation of a request in any format: `messages` (OpenAI,
/// Anthropic), `input` items (Responses), `contents` (Gemini) or
/// `context.messages` (pi-messages).
fn messages(body: &Value) -> Vec<Value> {
    ["messages", "input", "contents"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_array))
        .or_else(|| body.pointer("/context/messages").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default()
}

/// Text of one message: a string content, or the text of its parts (OpenAI
/// `text` parts, Anthropic `text` and `tool_result` blocks, Responses
/// `input_text` parts and `function_call_output`s, Gemini `parts` with
/// `text` or a `functionResponse`).
fn message_text(message: &Value) -> String {
    fn content_text(content: &Value, out: &mut String) {
        match content {
            Value::String(s) => out.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        out.push_str(t);
                    }
                    if let Some(c) = p.get("content") {
                        content_text(c, out);
                    }
                    if let Some(c) = p.pointer("/toolResult/content") {
                        content_text(c, out);
                    }
                    if let Some(r) = p.pointer("/functionResponse/response") {
                        for key in ["output", "error"] {
                            if let Some(c) = r.get(key) {
                                content_text(c, out);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for key in ["content", "output", "parts"] {
        if let Some(c) = message.get(key) {
            content_text(c, &mut out);
        }
    }
    out
}

/// A script for the whole server, as read by the `fake-model-server` binary:
/// `{"replies": [ReplySpec…], "markers": [{"marker", "scope"?, "reply"}], "fallback": ReplySpec?}`
/// or just an array of replies.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Script {
    pub replies: Vec<ReplySpec>,
    pub markers: Vec<MarkerSpec>,
    pub fallback: Option<ReplySpec>,
}

/// One marker rule of a [`Script`].
#[derive(Debug, Clone, Deserialize)]
pub struct MarkerSpec {
    pub marker: String,
    #[serde(default)]
    pub scope: MarkerScope,
    pub reply: ReplySpec,
}

impl Script {
    /// Parse a script: an object as above, or a bare array of replies.
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        let value: Value = serde_json::from_str(text)?;
        if value.is_array() {
            Ok(Script { replies: serde_json::from_value(value)?, ..Script::default() })
        } else {
            serde_json::from_value(value)
        }
    }
}

/// The running server. Dropping it stops it too.
pub struct FakeServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FakeServer {
    /// Bind `127.0.0.1:0` and start serving.
    pub async fn start() -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            queue: VecDeque::new(),
            rules: Vec::new(),
            fallback: Reply::text("ok"),
            requests: Vec::new(),
            aws: None,
            websockets: false,
            websocket_endings: Vec::new(),
            llama: None,
            catalogs: None,
        }));
        let (shutdown, shutdown_rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, state.clone(), shutdown_rx));
        Ok(FakeServer { addr, state, shutdown, task: Some(task) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (an Anthropic-style base URL).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (an OpenAI-style base URL).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Queue a reply for the next request that no marker rule claims.
    pub fn push(&self, reply: Reply) {
        lock(&self.state).queue.push_back(reply);
    }

    /// Answer `reply` whenever `marker` is in the conversation's last message.
    pub fn on_marker(&self, marker: &str, reply: Reply) {
        self.on_marker_scoped(marker, MarkerScope::LastMessage, reply);
    }

    /// Answer `reply` whenever `marker` is found in `scope`. Rules are tried in the order added.
    pub fn on_marker_scoped(&self, marker: &str, scope: MarkerScope, reply: Reply) {
        lock(&self.state).rules.push(Rule { marker: marker.to_string(), scope, reply });
    }

    /// Check the credentials of Bedrock requests: a SigV4 signature by
    /// `access_key_id` with `secret` (verified, see [`bedrock::verify_sigv4`]),
    /// or `Authorization: Bearer <bearer>`. A refused request is answered 403
    /// `InvalidSignatureException` (it is still recorded).
    pub fn require_aws_auth(&self, access_key_id: &str, secret: &str, bearer: Option<&str>) {
        lock(&self.state).aws = Some(AwsAuth {
            access_key_id: access_key_id.to_string(),
            secret: secret.to_string(),
            bearer: bearer.map(str::to_string),
        });
    }

    /// Serve the Codex WebSocket transport (see [`websocket`]): upgrades on
    /// `…/responses` paths open a socket whose `response.create` messages
    /// are recorded (method `WEBSOCKET`) and answered like POSTs. Without it
    /// an upgrade gets a 404.
    pub fn accept_websockets(&self) {
        lock(&self.state).websockets = true;
    }

    /// How clients ended their WebSockets, in order: `"<code> <reason>"`
    /// for a close frame, `"dropped"` for a connection gone without one.
    pub fn websocket_endings(&self) -> Vec<String> {
        lock(&self.state).websocket_endings.clone()
    }

    /// Answer llama-server's model listing routes (`GET /models`, `GET /props`) from `router`.
    pub fn serve_llama_router(&self, router: llama_router::LlamaRouter) {
        lock(&self.state).llama = Some(router);
    }

    /// Answer pi's model catalog route (`GET /api/models/providers/<id>`) from `catalogs`.
    pub fn serve_model_catalogs(&self, catalogs: model_catalogs::Catalogs) {
        lock(&self.state).catalogs = Some(catalogs);
    }

    /// The reply used when no rule matches and the queue is empty.
    pub fn set_fallback(&self, reply: Reply) {
        lock(&self.state).fallback = reply;
    }

    /// Load a whole script (queued replies, marker rules, fallback).
    pub fn load_script(&self, script: Script) {
        let mut state = lock(&self.state);
        state.queue.extend(script.replies.into_iter().map(Reply::from_spec));
        for m in script.markers {
            state.rules.push(Rule { marker: m.marker, scope: m.scope, reply: Reply::from_spec(m.reply) });
        }
        if let Some(f) = script.fallback {
            state.fallback = Reply::from_spec(f);
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.state).requests.len()
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        lock(&self.state).queue.len()
    }

    /// Wait until at least `n` requests arrived; false on timeout.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.request_count() < n {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Stop accepting, end hanging streams, and wait for the accept loop to finish.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                let shutdown = shutdown.clone();
                tokio::spawn(async move {
                    let websockets = lock(&state).websockets;
                    if websockets && websocket::is_upgrade(&stream).await {
                        return websocket::serve(stream, state, shutdown).await;
                    }
                    let handle = move |request| answer(request, state.clone(), shutdown.clone());
                    if let Err(e) = http::serve_connection(stream, handle).await {
                        tracing::debug!("fake server connection ended: {e}");
                    }
                });
            }
        }
    }
}

/// In a streamed part, this text becomes the time it is written (microseconds
/// since the Unix epoch): benchmarks measure each delta's latency with it.
pub const SENT_TIME_MARK: &str = "@@SENT_US@@";

fn stamp_sent_time(bytes: Vec<u8>) -> Vec<u8> {
    let mark = SENT_TIME_MARK.as_bytes();
    if !bytes.windows(mark.len()).any(|w| w == mark) {
        return bytes;
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    String::from_utf8_lossy(&bytes).replace(SENT_TIME_MARK, &now.to_string()).into_bytes()
}

/// The answer to one request; a streamed one goes on in a task of its own.
async fn answer(
    request: RecordedRequest,
    state: Arc<Mutex<State>>,
    mut shutdown: watch::Receiver<bool>,
) -> Response<http::Answer> {
    let service = {
        let mut st = lock(&state);
        let keys = st.aws.as_ref().map(|a| (a.access_key_id.clone(), a.secret.clone()));
        let answer = aws_services::answer(&request, keys.as_ref().map(|(k, s)| (k.as_str(), s.as_str())))
            .or_else(|| anthropic_federation::answer(&request))
            .or_else(|| typed_models::answer(&request))
            .or_else(|| copilot_api::answer(&request))
            .or_else(|| st.llama.as_ref().and_then(|router| llama_router::answer(&request, router)))
            .or_else(|| st.catalogs.as_ref().and_then(|catalogs| model_catalogs::answer(&request, catalogs)));
        if answer.is_some() {
            st.requests.push(request.clone());
        }
        answer
    };
    if let Some((status, headers, body)) = service {
        return http::plain(status, &headers, &body);
    }
    let format = if request.method == "POST" { Format::of_request(&request.path, &request.body) } else { None };
    // Only model calls take a reply: a stray GET (a WebSocket upgrade) leaves the queue alone.
    let (reply, refusal) = {
        let mut st = lock(&state);
        st.requests.push(request.clone());
        let refusal = match (&st.aws, format) {
            (Some(aws), Some(Format::Bedrock)) => aws.refusal(&request),
            _ => None,
        };
        let reply = if format.is_some() && refusal.is_none() { st.select(&request) } else { Reply::text("") };
        (reply, refusal)
    };
    if let Some(message) = refusal {
        let headers = [(
            "x-amzn-errortype".to_string(),
            "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/".to_string(),
        )];
        let body = serde_json::json!({"message": message});
        return http::plain(403, &headers, &body.to_string());
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let Some(format) = format else {
        let msg = format!("fake server: no route for {} {}", request.method, request.path);
        let body = serde_json::json!({"error": {"message": msg, "type": "invalid_request_error", "param": null, "code": null}});
        return http::plain(404, &[], &body.to_string());
    };
    let script = match reply.body {
        ReplyBody::Error { status, body } => return http::plain(status, &reply.headers, &body),
        ReplyBody::Stream(script) => script,
    };
    let frames = format.render(&script, &request.body);
    let (response, writer) = http::stream(format.content_type(), &reply.headers, script.ending != Ending::Cut);
    let (delay, every_frame) = (reply.delay, reply.delay_every_frame);
    tokio::spawn(async move {
        for frame in frames {
            if (frame.is_part || every_frame) && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if !writer.chunk(stamp_sent_time(frame.bytes)).await {
                return;
            }
        }
        match script.ending {
            // Close without the terminating chunk: the client sees a truncated body.
            Ending::Cut => writer.cut().await,
            // Stall until the server stops (then cut) or the client goes away.
            Ending::Hang => {
                let stopped = tokio::select! {
                    _ = shutdown.wait_for(|stop| *stop) => true,
                    _ = writer.closed() => false,
                };
                if stopped {
                    writer.cut().await;
                }
            }
            // Dropping the writer sends the terminating chunk: paced, a pause
            // before it too, so a client reads the last frame on its own.
            _ if every_frame && !delay.is_zero() => tokio::time::sleep(delay).await,
            _ => {}
        }
    });
    response
}

#[cfg(test)]
mod tests;
