//! Plain-HTTP requests (an `http:` origin reached without a proxy: local
//! model servers, the fake server) over hyper's HTTP/1 connection driven in
//! the task that reads the response, not in a task of its own.
//!
//! Through reqwest, hyper's connection runs as a separate task and its body
//! channel holds one chunk, so every streamed chunk cost a poll of that task,
//! a wake of the reader and a second task poll. Here the reader polls the
//! connection itself when the body has nothing at hand: one task poll a chunk.
//! HTTPS and proxied requests keep reqwest (TLS, ALPN `h2`, proxies).
//!
//! What reqwest did for these requests is kept: the same socket options
//! (no delay, keep-alive 15 s / 15 s / 3, user timeout 30 s), the `Host`
//! header (with the port when not 80), idle connections reused for 90 s, and
//! a request that a reused connection closed before taking is sent again on a
//! new one. There are no redirects to follow on this path: the wire APIs'
//! answers are read as they come (as with reqwest, whose POST redirects need a
//! 307/308 the model servers do not send).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use reqwest::header::{HOST, HeaderMap, HeaderValue};
use tokio::net::TcpStream;

type Conn = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;
type Sender = http1::SendRequest<Full<Bytes>>;

/// How long an idle connection is kept for reuse (reqwest's setting).
const IDLE_FOR: Duration = Duration::from_secs(90);
/// Idle connections kept per origin.
const IDLE_PER_ORIGIN: usize = 4;

/// A plain-HTTP origin and the request target on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `host:port`, the pool's key.
    key: String,
    /// The host to connect to (an IPv6 address without brackets).
    host: String,
    port: u16,
    /// The `Host` header: the host as written, `:port` unless 80.
    authority: String,
    /// Path and query (origin form).
    path: String,
}

impl Target {
    /// The target of an `http:` URL; `None` for any other scheme.
    pub(crate) fn of(url: &reqwest::Url) -> Option<Target> {
        if url.scheme() != "http" {
            return None;
        }
        let shown = url.host_str()?.to_string();
        let host = shown.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = url.port_or_known_default()?;
        let authority = match url.port() {
            Some(p) if p != 80 => format!("{shown}:{p}"),
            _ => shown.clone(),
        };
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        Some(Target { key: format!("{shown}:{port}"), host, port, authority, path })
    }
}

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The connection was not made within the connect timeout.
    ConnectTimeout,
    Io(std::io::Error),
    Http(hyper::Error),
    /// The request could not be built (a path hyper refuses).
    Request(String),
}

/// The answer's head, and its body read in the caller's task.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: DirectBody,
}

/// An idle connection kept for the next request to its origin.
struct Idle {
    sender: Sender,
    conn: Pin<Box<Conn>>,
    since: Instant,
}

/// The idle connections, by origin (shared by the clones of a client).
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<String, Vec<Idle>>>,
}

impl Pool {
    /// POST `body` with `headers` to `target`: a reused connection when one
    /// is idle and still open, else a new one made within `connect_timeout`.
    pub(crate) async fn post(
        self: &Arc<Self>,
        target: &Target,
        mut headers: HeaderMap,
        body: Vec<u8>,
        connect_timeout: Duration,
    ) -> Result<Answer, SendError> {
        let host = HeaderValue::from_str(&target.authority).map_err(|e| SendError::Request(e.to_string()))?;
        headers.entry(HOST).or_insert(host);
        let mut request = hyper::Request::post(target.path.as_str())
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| SendError::Request(e.to_string()))?;
        *request.headers_mut() = headers;
        if let Some((sender, conn)) = self.checkout(&target.key).await {
            match exchange(sender, conn, request).await {
                Ok(answer) => return Ok(self.answer(target, answer)),
                // The reused connection closed before taking the request: send it on a new one.
                Err(Failed { request: Some(again), .. }) => request = again,
                Err(Failed { error, .. }) => return Err(SendError::Http(error)),
            }
        }
        let (sender, conn) = dial(target, connect_timeout).await?;
        match exchange(sender, conn, request).await {
            Ok(answer) => Ok(self.answer(target, answer)),
            Err(failed) => Err(SendError::Http(failed.error)),
        }
    }

    fn answer(self: &Arc<Self>, target: &Target, (head, sender, conn): Exchanged) -> Answer {
        let (parts, body) = head.into_parts();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: DirectBody {
                body,
                conn: Some(conn),
                sender: Some(sender),
                home: Some((self.clone(), target.key.clone())),
            },
        }
    }

    /// An idle connection to `key` that is still open and ready.
    async fn checkout(&self, key: &str) -> Option<(Sender, Pin<Box<Conn>>)> {
        loop {
            let Idle { mut sender, mut conn, since } = {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                idle.get_mut(key)?.pop()?
            };
            if since.elapsed() >= IDLE_FOR {
                continue;
            }
            // Polling the connection once sees a close the server sent meanwhile.
            let usable = std::future::poll_fn(|cx| {
                let closed = conn.as_mut().poll(cx).is_ready();
                Poll::Ready(!closed && matches!(sender.poll_ready(cx), Poll::Ready(Ok(()))))
            })
            .await;
            if usable {
                return Some((sender, conn));
            }
        }
    }

    fn keep(&self, key: String, sender: Sender, conn: Pin<Box<Conn>>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(key).or_default();
        list.retain(|i| i.since.elapsed() < IDLE_FOR);
        if list.len() < IDLE_PER_ORIGIN {
            list.push(Idle { sender, conn, since: Instant::now() });
        }
    }
}

/// A new connection with reqwest's socket options.
async fn dial(target: &Target, connect_timeout: Duration) -> Result<(Sender, Pin<Box<Conn>>), SendError> {
    let connect = TcpStream::connect((target.host.as_str(), target.port));
    let stream = match tokio::time::timeout(connect_timeout, connect).await {
        Err(_) => return Err(SendError::ConnectTimeout),
        Ok(Err(e)) => return Err(SendError::Io(e)),
        Ok(Ok(stream)) => stream,
    };
    stream.set_nodelay(true).map_err(SendError::Io)?;
    let socket = socket2::SockRef::from(&stream);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(15))
        .with_interval(Duration::from_secs(15))
        .with_retries(3);
    socket.set_tcp_keepalive(&keepalive).map_err(SendError::Io)?;
    #[cfg(target_os = "linux")]
    socket.set_tcp_user_timeout(Some(Duration::from_secs(30))).map_err(SendError::Io)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await.map_err(SendError::Http)?;
    Ok((sender, Box::pin(conn)))
}

type Exchanged = (hyper::Response<Incoming>, Sender, Pin<Box<Conn>>);

/// A failed exchange, with the request when it was never sent.
struct Failed {
    error: hyper::Error,
    request: Option<hyper::Request<Full<Bytes>>>,
}

/// Send `request` and wait for the answer's head, driving the connection.
async fn exchange(
    mut sender: Sender,
    mut conn: Pin<Box<Conn>>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<Exchanged, Failed> {
    let mut answer = std::pin::pin!(sender.try_send_request(request));
    let mut open = true;
    let head = std::future::poll_fn(|cx| {
        loop {
            if let Poll::Ready(head) = answer.as_mut().poll(cx) {
                return Poll::Ready(head);
            }
            // When the connection ends, the answer holds its error.
            if !open || conn.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            open = false;
        }
    })
    .await;
    match head {
        Ok(head) => Ok((head, sender, conn)),
        Err(mut e) => {
            let request = e.take_message();
            Err(Failed { error: e.into_error(), request })
        }
    }
}

/// A response body read by driving its connection in the reader's task;
/// at its end the connection goes back to the pool.
pub(crate) struct DirectBody {
    body: Incoming,
    /// The connection, while open.
    conn: Option<Pin<Box<Conn>>>,
    sender: Option<Sender>,
    /// The pool and origin the connection returns to.
    home: Option<(Arc<Pool>, String)>,
}

impl DirectBody {
    /// The body's length when the answer declared it.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.body.size_hint().exact()
    }

    /// The body ended: keep the connection if it can take another request.
    fn release(&mut self, cx: &mut Context<'_>) {
        let (Some(mut conn), Some(sender), Some((pool, key))) =
            (self.conn.take(), self.sender.take(), self.home.take())
        else {
            return;
        };
        if conn.as_mut().poll(cx).is_ready() || sender.is_closed() {
            return;
        }
        pool.keep(key, sender, conn);
    }
}

impl Stream for DirectBody {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut drove = false;
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => return Poll::Ready(Some(Ok(data))),
                    Err(_trailers) => continue,
                },
                Poll::Ready(Some(Err(e))) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.release(cx);
                    return Poll::Ready(None);
                }
                Poll::Pending if drove => return Poll::Pending,
                Poll::Pending => {}
            }
            // Nothing at hand: the connection reads the socket and hands
            // the body its next chunk (or its end, or its error).
            drove = true;
            if let Some(conn) = this.conn.as_mut()
                && conn.as_mut().poll(cx).is_ready()
            {
                this.conn = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn targets_of_plain_http_urls() {
        let t = Target::of(&reqwest::Url::parse("http://127.0.0.1:8080/v1/chat?x=1#f").unwrap()).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1", 8080, "127.0.0.1:8080", "/v1/chat?x=1")
        );
        let t = Target::of(&reqwest::Url::parse("http://Example.com/a").unwrap()).unwrap();
        assert_eq!((t.host.as_str(), t.port, t.authority.as_str()), ("example.com", 80, "example.com"));
        let t = Target::of(&reqwest::Url::parse("http://[::1]:9/").unwrap()).unwrap();
        assert_eq!((t.host.as_str(), t.authority.as_str(), t.key.as_str()), ("::1", "[::1]:9", "[::1]:9"));
        assert_eq!(Target::of(&reqwest::Url::parse("https://example.com/").unwrap()), None);
    }

    /// An HTTP/1.1 server answering every POST with a chunked SSE body of
    /// `events` events; it counts connections and, with `close`, closes
    /// each connection after its first answer (without saying so).
    async fn server(events: usize, close: bool) -> (String, Arc<AtomicUsize>, Arc<tokio::sync::Notify>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(tokio::sync::Notify::new());
        let (count, notify) = (accepted.clone(), closed.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let notify = notify.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut tmp = [0u8; 4096];
                    loop {
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            match sock.read(&mut tmp).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&tmp[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        while buf.len() < head_end + len {
                            let n = sock.read(&mut tmp).await.unwrap();
                            buf.extend_from_slice(&tmp[..n]);
                        }
                        buf.drain(..head_end + len);
                        let mut answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n".to_string();
                        answer.push_str("transfer-encoding: chunked\r\n\r\n");
                        for i in 0..events {
                            let event = format!("data: {{\"n\":{i}}}\n\n");
                            answer.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
                        }
                        answer.push_str("0\r\n\r\n");
                        sock.write_all(answer.as_bytes()).await.unwrap();
                        if close {
                            drop(sock);
                            notify.notify_one();
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted, closed)
    }

    async fn post_and_read(pool: &Arc<Pool>, url: &str) -> (u16, String) {
        let target = Target::of(&reqwest::Url::parse(url).unwrap()).unwrap();
        let answer = pool.post(&target, HeaderMap::new(), b"{}".to_vec(), Duration::from_secs(5)).await.unwrap();
        let chunks: Vec<_> = answer.body.collect().await;
        let text = chunks.into_iter().map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap()).collect();
        (answer.status, text)
    }

    #[tokio::test]
    async fn a_streamed_body_is_read_whole_and_its_connection_reused() {
        let (url, accepted, _) = server(300, false).await;
        let pool = Arc::new(Pool::default());
        for _ in 0..3 {
            let (status, text) = post_and_read(&pool, &url).await;
            assert_eq!(status, 200);
            assert_eq!(text.matches("data: ").count(), 300);
            assert!(text.ends_with("data: {\"n\":299}\n\n"));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_replaced() {
        let (url, accepted, closed) = server(2, true).await;
        let pool = Arc::new(Pool::default());
        let (_, first) = post_and_read(&pool, &url).await;
        closed.notified().await;
        let (status, second) = post_and_read(&pool, &url).await;
        assert_eq!((status, second), (200, first));
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        drop(listener);
        let target = Target::of(&reqwest::Url::parse(&url).unwrap()).unwrap();
        let pool = Arc::new(Pool::default());
        let failed = pool.post(&target, HeaderMap::new(), Vec::new(), Duration::from_secs(5)).await;
        assert!(matches!(failed, Err(SendError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused));
    }
}
