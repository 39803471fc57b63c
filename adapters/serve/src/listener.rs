//! The listening socket of `pi serve` and each connection's life before it
//! is a WebSocket: bound with a configurable backlog, accepted one by one
//! (an exhausted open-file limit pauses accepting instead of spinning),
//! counted from the accept on (so silent and half-open sockets count against
//! `--max-connections`), and served by hyper with a header-read timeout and a
//! handshake deadline. A connection that has not become a WebSocket when the
//! server stops is dropped at once: stopping never waits on a half-open socket.
//!
//! [`raise_open_file_limit`] lifts the soft `RLIMIT_NOFILE` to the hard one
//! at start, and [`capacity`] says how many connections that leaves room for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// How connections are admitted before they upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenLimits {
    /// The listen backlog (the kernel caps it at `net.core.somaxconn`).
    pub backlog: u32,
    /// Longest time a client may take to send a request's headers.
    pub header_timeout: Duration,
    /// Longest time from accept to a WebSocket (or to a plain response).
    pub handshake_timeout: Duration,
}

impl Default for ListenLimits {
    fn default() -> Self {
        ListenLimits {
            backlog: 4096,
            header_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(15),
        }
    }
}

/// The open connections, upgraded or not.
#[derive(Debug, Default)]
pub struct Counter(AtomicUsize);

impl Counter {
    pub fn open(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One counted connection, until the last holder lets go: the accept loop's
/// connection task holds it, and so does its WebSocket once upgraded.
#[derive(Debug)]
pub struct Admitted(Arc<Counter>);

impl Admitted {
    fn new(counter: &Arc<Counter>) -> (Arc<Admitted>, usize) {
        let before = counter.0.fetch_add(1, Ordering::SeqCst);
        (Arc::new(Admitted(counter.clone())), before + 1)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Open-file limits: (soft before, soft now, hard).
pub fn raise_open_file_limit() -> Option<(u64, u64, u64)> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft >= hard {
        return Some((soft, soft, hard));
    }
    match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
        Ok(()) => Some((soft, hard, hard)),
        Err(e) => {
            tracing::warn!("pi serve: cannot raise the open-file limit from {soft} to {hard}: {e}");
            Some((soft, soft, hard))
        }
    }
}

/// File descriptors kept aside for everything but connections (logs,
/// session files being read, MCP pipes, the listener).
pub const RESERVED_FDS: u64 = 64;

/// Descriptors one connection costs with its session: its socket and the
/// session's owner lock.
pub const FDS_PER_CONNECTION: u64 = 2;

/// Connections with their sessions an open-file limit leaves room for.
pub fn capacity(open_files: u64) -> u64 {
    open_files.saturating_sub(RESERVED_FDS) / FDS_PER_CONNECTION
}

/// Bind `addr` with `backlog`.
pub fn bind_tcp(addr: std::net::SocketAddr, backlog: u32) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Bind the unix socket `path` with `backlog` (a stale socket file is replaced).
pub fn bind_unix(path: &std::path::Path, backlog: u32) -> std::io::Result<tokio::net::UnixListener> {
    use nix::sys::socket::{AddressFamily, Backlog, SockFlag, SockType, UnixAddr, bind, listen, socket};
    if std::fs::symlink_metadata(path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type())) {
        let _ = std::fs::remove_file(path);
    }
    let fd = socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK, None)?;
    let addr = UnixAddr::new(path)?;
    bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr)?;
    let backlog = Backlog::new(i32::try_from(backlog).unwrap_or(i32::MAX)).unwrap_or(Backlog::MAXCONN);
    listen(&fd, backlog)?;
    tokio::net::UnixListener::from_std(std::os::unix::net::UnixListener::from(fd))
}

/// A listener of either kind.
pub(crate) trait Accept {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl std::future::Future<Output = std::io::Result<Self::Io>> + Send;
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept(&self) -> std::io::Result<Self::Io> {
        tokio::net::UnixListener::accept(self).await.map(|(stream, _)| stream)
    }
}

/// Connections over the limit by more than this are dropped without an
/// answer (the ones within it get a 503 with a sentence).
const REFUSAL_MARGIN: usize = 64;

/// Accept connections until `stopping` is cancelled; each is served by
/// `app`, its [`Admitted`] in the request's extensions.
pub(crate) async fn accept_loop<L: Accept>(
    listener: L,
    app: Router,
    counter: Arc<Counter>,
    max_connections: usize,
    limits: ListenLimits,
    stopping: CancellationToken,
) {
    let mut last_warning: Option<tokio::time::Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping.cancelled() => return,
        };
        let io = match accepted {
            Ok(io) => io,
            Err(e) => {
                // Out of descriptors (EMFILE/ENFILE) or a connection reset
                // before it was accepted: wait a little rather than spin.
                if last_warning.is_none_or(|at| at.elapsed() > Duration::from_secs(5)) {
                    tracing::warn!("pi serve: accept failed: {e}");
                    last_warning = Some(tokio::time::Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (admitted, open) = Admitted::new(&counter);
        if open > max_connections + REFUSAL_MARGIN {
            continue;
        }
        tokio::spawn(serve_connection(io, app.clone(), admitted, limits, stopping.clone()));
    }
}

/// One connection until it has upgraded (its WebSocket then lives on in its
/// own task), answered, timed out, or the server stops.
async fn serve_connection<I>(
    io: I,
    app: Router,
    admitted: Arc<Admitted>,
    limits: ListenLimits,
    stopping: CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let held = admitted.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(held.clone());
        let mut app = app.clone();
        tower_service::Service::call(&mut app, request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Keep-alive stays on: `Connection: close` would replace the upgrade's `Connection: upgrade`;
    // the handshake deadline bounds a connection that never upgrades.
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let connection = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::select! {
        served = tokio::time::timeout(limits.handshake_timeout, connection) => match served {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!("connection ended before a WebSocket: {e}"),
            Err(_) => tracing::debug!("connection dropped: no WebSocket within {:?}", limits.handshake_timeout),
        },
        _ = stopping.cancelled() => {}
    }
    drop(admitted);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_leaves_room_for_the_rest() {
        assert_eq!(capacity(1024), 480);
        assert_eq!(capacity(10), 0);
        let counter = Arc::new(Counter::default());
        let (a, open) = Admitted::new(&counter);
        assert_eq!(open, 1);
        let b = a.clone();
        drop(a);
        assert_eq!(counter.open(), 1);
        drop(b);
        assert_eq!(counter.open(), 0);
    }
}
