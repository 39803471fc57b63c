//! The HTTP side of `pi serve` (axum): the WebSocket endpoint `/rpc`,
//! `/healthz` and `/readyz`, the bearer token, the `Origin` allowlist and
//! the connection limit. Each refusal is an HTTP status with a sentence
//! saying why. TLS is the load balancer's job: this server speaks plain
//! HTTP/WebSocket, on loopback unless a token protects it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::listener::{Admitted, Counter, ListenLimits};
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
    /// How long a connection holds a live event before writing it, so the
    /// events of the next deltas share its write (zero: written at once).
    pub write_delay: Duration,
    /// Backlog, header-read timeout, handshake deadline.
    pub limits: ListenLimits,
    /// In a cluster: on stop, how long running turns may take to finish
    /// before the sessions are handed over (0: no drain).
    pub drain: Duration,
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
    /// Every open connection, from its accept on (upgraded or not).
    connections: Arc<Counter>,
    stopping: CancellationToken,
    /// Set when a drain starts: no new connection, `/readyz` says 503.
    draining: CancellationToken,
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
    Extension(admitted): Extension<Arc<Admitted>>,
    Query(query): Query<Connect>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if shared.stopping.is_cancelled() || shared.draining.is_cancelled() {
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
        Some("acp") => Some(pi_transport::detect::Detected::Acp),
        Some(other) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("unknown protocol '{other}' (auto, jsonl, jsonrpc or acp)"),
            );
        }
    };
    // This connection is counted since its accept.
    let open = shared.connections.open();
    if open > shared.options.max_connections {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("connection limit reached: {} connections are open (--max-connections)", open - 1),
        );
    }
    let attach = query.session.map(|id| (id, query.after_seq));
    let limit = shared.options.max_message_bytes;
    let upgrade = upgrade.read_buffer_size(READ_BUFFER_BYTES);
    upgrade.max_message_size(limit).max_frame_size(limit).on_upgrade(move |socket: WebSocket| async move {
        crate::socket::serve_socket(
            socket,
            shared.registry.clone(),
            shared.options.queue_messages,
            shared.options.write_delay,
            attach,
            protocol,
            shared.stopping.clone(),
        )
        .await;
        drop(admitted);
    })
}

/// A WebSocket's read buffer. tungstenite's default (128 KiB) is zero-filled
/// whole on the first read, so it was most of an idle connection's memory;
/// a message longer than this still arrives whole (the buffer grows to the
/// frame's length), in reads of this size.
const READ_BUFFER_BYTES: usize = 4 * 1024;

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
    let connections = shared.connections.open();
    let sessions = shared.registry.len();
    let draining = shared.draining.is_cancelled();
    let ready = !shared.stopping.is_cancelled() && !draining && connections < shared.options.max_connections;
    let body =
        serde_json::json!({"ready": ready, "connections": connections, "sessions": sessions, "draining": draining})
            .to_string();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// How long stopping waits for open WebSockets to close before the sessions end.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Serve until `stop` resolves: `bound` is told the address (a `ws://…/rpc`
/// URL or `unix:PATH`) once listening. On stop, in a cluster with a drain
/// time, the worker drains first ([`Registry::drain`]: new connections get
/// 503, running turns finish, the sessions are handed over, their clients
/// here get close 1012). Then new connections are refused, connections not
/// yet upgraded are dropped, open WebSockets are closed (waiting at most
/// [`CLOSE_WAIT`]), and every session is ended and flushed.
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
    log_capacity(options.max_connections);
    let stopping = CancellationToken::new();
    let draining = CancellationToken::new();
    let connections = Arc::new(Counter::default());
    let shared = Arc::new(Shared {
        registry: registry.clone(),
        options: options.clone(),
        connections: connections.clone(),
        stopping: stopping.clone(),
        draining: draining.clone(),
    });
    let peers_stop = CancellationToken::new();
    if let Some(cluster) = registry.cluster() {
        crate::cluster::peer::serve(
            cluster.clone(),
            Arc::downgrade(&registry),
            options.queue_messages,
            peers_stop.clone(),
        );
        tell_hubs_of_lost_leases(cluster.losses.clone(), Arc::downgrade(&registry), peers_stop.clone());
    }
    let app = Router::new()
        .route("/rpc", get(rpc))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(shared);
    let limits = options.limits;
    let (max, token) = (options.max_connections, stopping.clone());
    let accepting = match &options.listen {
        Listen::Tcp(addr) => {
            let listener = crate::listener::bind_tcp(*addr, limits.backlog)?;
            bound(format!("ws://{}/rpc", listener.local_addr()?));
            tokio::spawn(crate::listener::accept_loop(listener, app, connections.clone(), max, limits, token))
        }
        Listen::Unix(path) => {
            let listener = crate::listener::bind_unix(path, limits.backlog)?;
            bound(format!("unix:{}", path.display()));
            tokio::spawn(crate::listener::accept_loop(listener, app, connections.clone(), max, limits, token))
        }
    };
    stop.await;
    if registry.cluster().is_some() && !options.drain.is_zero() {
        tracing::info!("pi serve: draining (at most {:?} for running turns)", options.drain);
        draining.cancel();
        registry.drain(options.drain).await;
    }
    tracing::info!("pi serve: stopping");
    stopping.cancel();
    let _ = accepting.await;
    if let Listen::Unix(path) = &options.listen {
        let _ = std::fs::remove_file(path);
    }
    let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
    while connections.open() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if connections.open() > 0 {
        tracing::warn!("pi serve: {} connections did not close in {CLOSE_WAIT:?}; stopping anyway", connections.open());
    }
    registry.shut_down().await;
    peers_stop.cancel();
    Ok(())
}

/// Raise the open-file limit and say how many connections it leaves room for.
fn log_capacity(max_connections: usize) {
    let Some((before, now, hard)) = crate::listener::raise_open_file_limit() else { return };
    let room = crate::listener::capacity(now);
    if now > before {
        tracing::info!(
            "pi serve: open-file limit raised from {before} to {now}: room for about {room} connections with their sessions"
        );
    } else {
        tracing::info!(
            "pi serve: open-file limit {now} (hard {hard}): room for about {room} connections with their sessions"
        );
    }
    if (max_connections as u64) > room {
        tracing::warn!(
            "pi serve: --max-connections {max_connections} is above what the open-file limit {now} allows (about {room}); raise the hard limit (ulimit -Hn, LimitNOFILE=)"
        );
    }
}

/// Tell the registry's hubs of the leases lost, until `stop` or the registry ends.
fn tell_hubs_of_lost_leases(
    losses: Arc<crate::cluster::losses::Losses>,
    registry: std::sync::Weak<Registry>,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            let lost = tokio::select! {
                lost = losses.next() => lost,
                () = stop.cancelled() => return,
            };
            let Some(registry) = registry.upgrade() else { return };
            for id in lost {
                registry.look_at_lease(&id);
            }
        }
    });
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
            write_delay: Duration::ZERO,
            limits: ListenLimits::default(),
            drain: Duration::ZERO,
        };
        assert!(options.check().unwrap_err().contains("without a token"));
        options.token = Some("t".into());
        assert!(options.check().is_ok());
        options.token = None;
        options.listen = Listen::parse("127.0.0.1:0").unwrap();
        assert!(options.check().is_ok());
    }
}
