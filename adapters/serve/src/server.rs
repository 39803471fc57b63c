//! The HTTP side of `pi serve` (axum): the WebSocket endpoint `/rpc`,
//! `/healthz` and `/readyz`, the bearer token, the `Origin` allowlist and
//! the connection limit. Each refusal is an HTTP status with a sentence
//! saying why. TLS is the load balancer's job: this server speaks plain
//! HTTP/WebSocket, on loopback unless a token protects it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::registry::Registry;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listen {
    /// `HOST:PORT` (port 0 picks a free one) or `unix:PATH`.
    pub fn parse(text: &str) -> Result<Listen, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            return if path.is_empty() { Err("unix: needs a path".into()) } else { Ok(Listen::Unix(path.into())) };
        }
        let text = text.strip_prefix("ws://").unwrap_or(text);
        use std::net::ToSocketAddrs;
        let mut addrs =
            text.to_socket_addrs().map_err(|e| format!("--listen {text}: {e} (expected HOST:PORT or unix:PATH)"))?;
        addrs.next().map(Listen::Tcp).ok_or_else(|| format!("--listen {text}: no address"))
    }

    /// Loopback addresses and unix sockets are reachable from this machine only.
    pub fn is_local(&self) -> bool {
        match self {
            Listen::Tcp(addr) => addr.ip().is_loopback(),
            Listen::Unix(_) => true,
        }
    }
}

/// How the server admits connections.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: Listen,
    /// Required on the upgrade (`Authorization: Bearer`, or `?token=`).
    pub token: Option<String>,
    /// Origins browser clients may connect from (exact, case-insensitive).
    pub allowed_origins: Vec<String>,
    pub max_connections: usize,
    /// Largest message accepted (bytes); a larger one closes the connection with 1009.
    pub max_message_bytes: usize,
    /// Messages queued for a connection before it counts as not reading.
    pub queue_messages: usize,
}

impl ServeOptions {
    /// Refuse a configuration that would expose the agent without a token.
    pub fn check(&self) -> Result<(), String> {
        if self.token.as_deref().is_some_and(str::is_empty) {
            return Err("the token is empty".into());
        }
        if self.token.is_none() && !self.listen.is_local() {
            return Err(format!(
                "refusing to listen on {:?} without a token: pass --token-file FILE or set PI_SERVE_TOKEN (without one only loopback addresses and unix sockets are allowed)",
                self.listen
            ));
        }
        Ok(())
    }
}

struct Shared {
    registry: Arc<Registry>,
    options: ServeOptions,
    connections: AtomicUsize,
    stopping: CancellationToken,
}

/// Counts an open connection until dropped.
struct Admitted(Arc<Shared>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The query of `/rpc`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Connect {
    /// The token, for browsers (they cannot set `Authorization` on a WebSocket).
    token: Option<String>,
    /// Attach to this session at once (created when it does not exist); also the
    /// load balancer's routing key.
    session: Option<String>,
    /// With `session`: re-send the events after this number.
    after_seq: Option<u64>,
    /// Force the dialect (`jsonl` or `jsonrpc`) instead of detecting it.
    protocol: Option<String>,
}

fn refuse(status: StatusCode, text: String) -> Response {
    tracing::info!("refused a connection ({}): {text}", status.as_u16());
    (status, text).into_response()
}

/// Equal tokens, compared in constant time (on their SHA-256 digests, so
/// the length does not show either).
fn token_matches(expected: &str, given: &str) -> bool {
    use ring::digest::{SHA256, digest};
    use subtle::ConstantTimeEq;
    let (a, b) = (digest(&SHA256, expected.as_bytes()), digest(&SHA256, given.as_bytes()));
    a.as_ref().ct_eq(b.as_ref()).into()
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

async fn rpc(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<Connect>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if shared.stopping.is_cancelled() {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down".into());
    }
    if let Some(expected) = &shared.options.token {
        let given = bearer(&headers).or(query.token.as_deref()).unwrap_or("");
        if !token_matches(expected, given) {
            let text = "missing or wrong token: send `Authorization: Bearer <token>` (browsers: `?token=`)";
            let mut response = refuse(StatusCode::UNAUTHORIZED, text.into());
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !shared.options.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return refuse(
                StatusCode::FORBIDDEN,
                format!("origin '{origin}' is not allowed (the server allows: {})", allowed(&shared.options)),
            );
        }
    }
    let protocol = match query.protocol.as_deref() {
        None | Some("auto") => None,
        Some("jsonl") => Some(pi_transport::detect::Detected::Native),
        Some("jsonrpc") => Some(pi_transport::detect::Detected::JsonRpc),
        Some(other) => {
            return refuse(StatusCode::BAD_REQUEST, format!("unknown protocol '{other}' (auto, jsonl or jsonrpc)"));
        }
    };
    let open = shared.connections.fetch_add(1, Ordering::SeqCst);
    let admitted = Admitted(shared.clone());
    if open >= shared.options.max_connections {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("connection limit reached: {open} connections are open (--max-connections)"),
        );
    }
    let attach = query.session.map(|id| (id, query.after_seq));
    let limit = shared.options.max_message_bytes;
    upgrade.max_message_size(limit).max_frame_size(limit).on_upgrade(move |socket: WebSocket| async move {
        let shared = admitted.0.clone();
        crate::socket::serve_socket(
            socket,
            shared.registry.clone(),
            shared.options.queue_messages,
            attach,
            protocol,
            shared.stopping.clone(),
        )
        .await;
        drop(admitted);
    })
}

fn allowed(options: &ServeOptions) -> String {
    if options.allowed_origins.is_empty() {
        "no browser origin; see --allow-origin".into()
    } else {
        options.allowed_origins.join(", ")
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let connections = shared.connections.load(Ordering::SeqCst);
    let sessions = shared.registry.len();
    let ready = !shared.stopping.is_cancelled() && connections < shared.options.max_connections;
    let body = serde_json::json!({"ready": ready, "connections": connections, "sessions": sessions}).to_string();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Serve until `stop` resolves: `bound` is told the address (a `ws://…/rpc`
/// URL or `unix:PATH`) once listening. On stop, new connections are
/// refused, open ones are closed, and every session is ended and flushed.
pub async fn run(
    registry: Arc<Registry>,
    options: ServeOptions,
    bound: impl FnOnce(String),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    options.check().map_err(std::io::Error::other)?;
    if options.token.is_none() {
        tracing::warn!("pi serve: no token (--token-file or PI_SERVE_TOKEN): anyone on this machine can connect");
    }
    let stopping = CancellationToken::new();
    let shared = Arc::new(Shared {
        registry: registry.clone(),
        options: options.clone(),
        connections: AtomicUsize::new(0),
        stopping: stopping.clone(),
    });
    let app = Router::new()
        .route("/rpc", get(rpc))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(shared);
    let graceful = {
        let stopping = stopping.clone();
        async move {
            stop.await;
            tracing::info!("pi serve: stopping");
            stopping.cancel();
        }
    };
    match &options.listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            bound(format!("ws://{}/rpc", listener.local_addr()?));
            axum::serve(listener, app).with_graceful_shutdown(graceful).await?;
        }
        Listen::Unix(path) => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
            {
                let _ = std::fs::remove_file(path);
            }
            let listener = tokio::net::UnixListener::bind(path)?;
            bound(format!("unix:{}", path.display()));
            axum::serve(listener, app).with_graceful_shutdown(graceful).await?;
            let _ = std::fs::remove_file(path);
        }
    }
    registry.shut_down().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_listen_addresses() {
        assert!(token_matches("s3cret", "s3cret"));
        assert!(!token_matches("s3cret", "s3cre"));
        assert!(!token_matches("s3cret", ""));
        assert_eq!(Listen::parse("unix:/tmp/x.sock"), Ok(Listen::Unix("/tmp/x.sock".into())));
        assert!(Listen::parse("127.0.0.1:0").unwrap().is_local());
        assert!(!Listen::parse("0.0.0.0:8080").unwrap().is_local());
        assert!(Listen::parse("nonsense").is_err());
    }

    #[test]
    fn no_token_means_loopback_only() {
        let mut options = ServeOptions {
            listen: Listen::parse("0.0.0.0:0").unwrap(),
            token: None,
            allowed_origins: Vec::new(),
            max_connections: 1,
            max_message_bytes: 1,
            queue_messages: 1,
        };
        assert!(options.check().unwrap_err().contains("without a token"));
        options.token = Some("t".into());
        assert!(options.check().is_ok());
        options.token = None;
        options.listen = Listen::parse("127.0.0.1:0").unwrap();
        assert!(options.check().is_ok());
    }
}
