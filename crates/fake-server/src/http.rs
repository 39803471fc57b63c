//! HTTP/1.1 for the fake server on hyper: each accepted connection is served
//! by hyper's `http1` connection (one request, answered `connection: close`),
//! the request read into a [`RecordedRequest`], the answer a plain body or a
//! chunked stream fed frame by frame through [`Answer`].

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::RecordedRequest;

const MAX_BODY: usize = 64 * 1024 * 1024;

/// Frames queued between the stream writer and hyper; hyper takes every
/// queued frame before it writes, so frames sent back to back leave in few
/// system calls.
const QUEUED_FRAMES: usize = 256;

fn bad(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_string())
}

/// Serve one connection: `handle` answers its request.
pub async fn serve_connection<F, Fut>(stream: TcpStream, handle: F) -> Result<(), hyper::Error>
where
    F: Fn(RecordedRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Answer>> + Send + 'static,
{
    let handle = std::sync::Arc::new(handle);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let handle = handle.clone();
        async move {
            Ok::<_, Infallible>(match read_request(request).await {
                Ok(recorded) => handle(recorded).await,
                Err(e) => plain(StatusCode::BAD_REQUEST.as_u16(), &[], &format!("fake server: {e}")),
            })
        }
    });
    hyper::server::conn::http1::Builder::new()
        .writev(false)
        .auto_date_header(false)
        .serve_connection(TokioIo::new(stream), service)
        .await
}

/// The request as recorded: headers lowercased, a zstd body decompressed, the body parsed as JSON.
async fn read_request(request: Request<Incoming>) -> std::io::Result<RecordedRequest> {
    let (parts, mut incoming) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| parts.uri.to_string());
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).trim().to_string()))
        .collect();
    let mut raw_body = Vec::new();
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut incoming).poll_frame(cx)).await {
        let frame = frame.map_err(|e| bad(&format!("request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if raw_body.len() + data.len() > MAX_BODY {
                return Err(bad("request body too large"));
            }
            raw_body.extend_from_slice(&data);
        }
    }
    let zstd = parts.headers.get("content-encoding").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"zstd"));
    // A zstd-compressed body (the Codex backend's) is recorded decompressed.
    let raw_body = if zstd {
        let mut decoded = Vec::new();
        let mut decoder = ruzstd::decoding::StreamingDecoder::new(raw_body.as_slice())
            .map_err(|e| bad(&format!("zstd body: {e}")))?;
        std::io::Read::read_to_end(&mut decoder, &mut decoded).map_err(|e| bad(&format!("zstd body: {e}")))?;
        decoded
    } else {
        raw_body
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    Ok(RecordedRequest { method, path, headers, body, raw_body })
}

/// A piece of a streamed answer.
pub enum Piece {
    /// One HTTP chunk.
    Data(Vec<u8>),
    /// End the connection without the terminating chunk.
    Cut,
}

/// The body of an answer: complete, or streamed from a [`StreamWriter`].
pub enum Answer {
    Plain(Option<Bytes>),
    Stream(mpsc::Receiver<Piece>),
}

impl Body for Answer {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match &mut *self {
            Answer::Plain(body) => Poll::Ready(body.take().map(|b| Ok(Frame::data(b)))),
            Answer::Stream(rx) => rx.poll_recv(cx).map(|piece| match piece {
                Some(Piece::Data(bytes)) => Some(Ok(Frame::data(Bytes::from(bytes)))),
                Some(Piece::Cut) => Some(Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "cut"))),
                None => None,
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Answer::Plain(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            Answer::Plain(Some(b)) => hyper::body::SizeHint::with_exact(b.len() as u64),
            Answer::Plain(None) => hyper::body::SizeHint::with_exact(0),
            Answer::Stream(_) => hyper::body::SizeHint::default(),
        }
    }
}

fn with_headers(mut response: Response<Answer>, headers: &[(String, String)]) -> Response<Answer> {
    for (k, v) in headers {
        match (HeaderName::try_from(k.as_str()), HeaderValue::try_from(v.as_str())) {
            (Ok(k), Ok(v)) => {
                response.headers_mut().append(k, v);
            }
            _ => tracing::warn!("fake server: header {k:?} cannot be sent"),
        }
    }
    response
}

fn status_of(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A complete non-streaming response (JSON content type when the body parses as JSON).
pub fn plain(status: u16, headers: &[(String, String)], body: &str) -> Response<Answer> {
    let content_type =
        if serde_json::from_str::<Value>(body).is_ok() { "application/json" } else { "text/plain; charset=utf-8" };
    let mut response = Response::new(Answer::Plain(Some(Bytes::from(body.to_string()))));
    *response.status_mut() = status_of(status);
    let fixed = [("content-type", content_type), ("connection", "close")];
    for (k, v) in fixed {
        response.headers_mut().insert(k, HeaderValue::from_static(v));
    }
    with_headers(response, headers)
}

/// Head of a streamed (SSE, chunked) 200 response, and the writer of its
/// frames. `close` announces `connection: close`; without it the client
/// expects a keep-alive connection, so a close mid-body reads as the peer
/// going away (Node's undici then reports `other side closed`, as against a
/// real server).
pub fn stream(content_type: &str, headers: &[(String, String)], close: bool) -> (Response<Answer>, StreamWriter) {
    let (tx, rx) = mpsc::channel(QUEUED_FRAMES);
    let mut response = Response::new(Answer::Stream(rx));
    let content_type = HeaderValue::try_from(content_type).unwrap_or(HeaderValue::from_static("text/event-stream"));
    response.headers_mut().insert("content-type", content_type);
    response.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
    if close {
        response.headers_mut().insert("connection", HeaderValue::from_static("close"));
    }
    (with_headers(response, headers), StreamWriter { tx })
}

/// Writes the frames of a streamed answer; dropping it ends the body with the terminating chunk.
pub struct StreamWriter {
    tx: mpsc::Sender<Piece>,
}

impl StreamWriter {
    /// One HTTP chunk; false once the client is gone.
    pub async fn chunk(&self, bytes: Vec<u8>) -> bool {
        bytes.is_empty() || self.tx.send(Piece::Data(bytes)).await.is_ok()
    }

    /// Wait until the client is gone.
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// End without the terminating chunk, once hyper has written what came before.
    pub async fn cut(self) {
        // Hyper drops what it has buffered when the body fails: let it take
        // every frame and flush (it flushes as soon as the body has nothing).
        while self.tx.capacity() < self.tx.max_capacity() && !self.tx.is_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let _ = self.tx.send(Piece::Cut).await;
    }
}
