//! A proxy on 127.0.0.1 in front of a real MCP server's streamable-HTTP
//! endpoint that fails the requests it is told to fail: the next N get an
//! HTTP status (an empty body, or a plain-text one), or their connections are closed before any
//! answer (a network error, as a server that went away looks to a client).
//! It can also end a session as a server whose sessions expire does: from
//! the request that ends it on, every request of that session is answered
//! 404 (`Session not found`, the MCP TypeScript SDK's answer).
//! Every request is recorded (`POST initialize`, `POST tools/call -> 503`,
//! `dropped connection`, …), so a test can say which requests a client
//! retried without timing anything.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// How a request is failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Answered with this HTTP status and an empty body.
    Status(u16),
    /// Answered with this HTTP status and this plain-text body.
    Answer(u16, &'static str),
    /// The next new connection is closed unanswered (requests on a
    /// connection the client keeps open are not affected).
    Drop,
    /// The session of the request (one that names a session) ends: it and
    /// every later request of that session are answered 404.
    ExpireSession,
}

/// What a server answers a request of a session it no longer knows (the MCP TypeScript SDK's words).
const SESSION_NOT_FOUND: &str = r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#;

#[derive(Default)]
struct Flaky {
    upstream: String,
    /// The failures to come, each for any request or only a JSON-RPC method's.
    failures: VecDeque<(Option<String>, Failure)>,
    log: Vec<String>,
    /// The distinct `Authorization` headers of the requests, in the order first seen.
    authorizations: Vec<Option<String>>,
    /// The sessions ended by [`Failure::ExpireSession`].
    expired: HashSet<String>,
}

type Shared = Arc<Mutex<Flaky>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Flaky> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// The running proxy.
pub struct FlakyProxy {
    addr: SocketAddr,
    shared: Shared,
    stop: Option<oneshot::Sender<()>>,
}

impl FlakyProxy {
    /// Start on a free port, forwarding to `upstream` (`http://…/mcp`).
    pub async fn start(upstream: &str) -> std::io::Result<FlakyProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared: Shared = Arc::new(Mutex::new(Flaky { upstream: upstream.to_string(), ..Flaky::default() }));
        let (stop, stopped) = oneshot::channel::<()>();
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let listener = Dropping { listener, shared: shared.clone() };
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(FlakyProxy { addr, shared, stop: Some(stop) })
    }

    /// The MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Fail the next `count` requests (or new connections, for [`Failure::Drop`]) this way.
    pub fn fail_next(&self, count: usize, failure: Failure) {
        lock(&self.shared).failures.extend(std::iter::repeat_n((None, failure), count));
    }

    /// Answer the next `count` requests of JSON-RPC `method` with `failure`
    /// (other requests pass meanwhile).
    pub fn fail_next_of(&self, method: &str, count: usize, failure: Failure) {
        let failure = (Some(method.to_string()), failure);
        lock(&self.shared).failures.extend(std::iter::repeat_n(failure, count));
    }

    /// Every request so far: `METHOD jsonrpc-method`, with ` -> STATUS` when
    /// it was failed; `dropped connection` for a closed one.
    pub fn requests(&self) -> Vec<String> {
        lock(&self.shared).log.clone()
    }

    /// The distinct `Authorization` headers the requests carried (None for
    /// requests without one), in the order first seen.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        lock(&self.shared).authorizations.clone()
    }
}

impl Drop for FlakyProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The proxy's listener: closes new connections while a [`Failure::Drop`] is next.
struct Dropping {
    listener: TcpListener,
    shared: Shared,
}

impl axum::serve::Listener for Dropping {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            let Ok((stream, addr)) = self.listener.accept().await else { continue };
            let mut flaky = lock(&self.shared);
            if flaky.failures.front().is_some_and(|(_, f)| *f == Failure::Drop) {
                flaky.failures.pop_front();
                flaky.log.push("dropped connection".to_string());
                drop(stream);
                continue;
            }
            return (stream, addr);
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// What a request is, for the log (its HTTP method and JSON-RPC method(s)),
/// and its JSON-RPC methods.
fn describe(method: &Method, body: &Bytes) -> (String, Vec<String>) {
    let parsed: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let items = match &parsed {
        serde_json::Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let names: Vec<String> = items.iter().filter_map(|m| m["method"].as_str().map(str::to_string)).collect();
    if names.is_empty() {
        let reply = items.iter().any(|m| m.get("result").is_some() || m.get("error").is_some());
        return (format!("{method}{}", if reply { " reply" } else { "" }), names);
    }
    (format!("{method} {}", names.join(",")), names)
}

async fn handle(State(shared): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let (what, names) = describe(&method, &body);
    let (upstream, failure) = {
        let mut flaky = lock(&shared);
        let authorization =
            headers.get(axum::http::header::AUTHORIZATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if !flaky.authorizations.contains(&authorization) {
            flaky.authorizations.push(authorization);
        }
        let session = headers.get("mcp-session-id").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let failure = match (flaky.failures.front(), session) {
            (_, Some(session)) if flaky.expired.contains(&session) => Some((404, SESSION_NOT_FOUND)),
            (Some((only, failure)), session) if only.as_ref().is_none_or(|m| names.contains(m)) => {
                let answer = match (*failure, session) {
                    (Failure::Answer(status, body), _) => Some((status, body)),
                    (Failure::Status(status), _) => Some((status, "")),
                    (Failure::ExpireSession, Some(session)) => {
                        flaky.expired.insert(session);
                        Some((404, SESSION_NOT_FOUND))
                    }
                    (Failure::ExpireSession, None) | (Failure::Drop, _) => None,
                };
                if answer.is_some() {
                    flaky.failures.pop_front();
                }
                answer
            }
            _ => None,
        };
        flaky.log.push(match failure {
            Some((status, _)) => format!("{what} -> {status}"),
            None => what,
        });
        (flaky.upstream.clone(), failure)
    };
    if let Some((status, body)) = failure {
        let kind = if body.starts_with('{') { "application/json" } else { "text/plain" };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        return (status, [(axum::http::header::CONTENT_TYPE, kind)], body).into_response();
    }
    super::mcp::forward(&upstream, method, &uri, &headers, body).await
}
