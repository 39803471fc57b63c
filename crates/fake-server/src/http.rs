//! Minimal hand-written HTTP/1.1 for the fake server: read one request
//! (Content-Length or chunked body), write plain or chunked responses.

use std::io::{Error, ErrorKind};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::RecordedRequest;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

fn bad(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidData, msg.to_string())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Read bytes until `buf` holds at least `n` bytes; false on EOF.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> std::io::Result<bool> {
    let mut tmp = [0u8; 8192];
    while buf.len() < n {
        let got = stream.read(&mut tmp).await?;
        if got == 0 {
            return Ok(false);
        }
        buf.extend_from_slice(&tmp[..got]);
    }
    Ok(true)
}

/// Read until `needle` occurs at or after `from`; returns its position.
async fn fill_until(stream: &mut TcpStream, buf: &mut Vec<u8>, from: usize, needle: &[u8]) -> std::io::Result<usize> {
    loop {
        if let Some(pos) = find(&buf[from..], needle) {
            return Ok(from + pos);
        }
        if buf.len() > MAX_BODY {
            return Err(bad("request too large"));
        }
        let want = buf.len() + 1;
        if !fill(stream, buf, want).await? {
            return Err(Error::new(ErrorKind::UnexpectedEof, "client closed mid-request"));
        }
    }
}

/// Read one request. `None` when the client closed before sending anything.
pub async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let want = buf.len() + 1;
        if !fill(stream, &mut buf, want).await? {
            return if buf.is_empty() { Ok(None) } else { Err(bad("truncated request head")) };
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let body_start = head_end + 4;
    let raw_body = if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        read_chunked(stream, &mut buf, body_start).await?
    } else {
        let len: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        if len > MAX_BODY {
            return Err(bad("request body too large"));
        }
        if !fill(stream, &mut buf, body_start + len).await? {
            return Err(bad("truncated request body"));
        }
        buf[body_start..body_start + len].to_vec()
    };
    // A zstd-compressed body (the Codex backend's) is recorded decompressed.
    let raw_body = if header("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("zstd")) {
        let mut decoded = Vec::new();
        let mut decoder = ruzstd::decoding::StreamingDecoder::new(raw_body.as_slice())
            .map_err(|e| bad(&format!("zstd body: {e}")))?;
        std::io::Read::read_to_end(&mut decoder, &mut decoded).map_err(|e| bad(&format!("zstd body: {e}")))?;
        decoded
    } else {
        raw_body
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    Ok(Some(RecordedRequest { method, path, headers, body, raw_body }))
}

async fn read_chunked(stream: &mut TcpStream, buf: &mut Vec<u8>, mut pos: usize) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = fill_until(stream, buf, pos, b"\r\n").await?;
        let size_text = String::from_utf8_lossy(&buf[pos..line_end]).into_owned();
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("bad chunk size"))?;
        pos = line_end + 2;
        if size == 0 {
            // Skip trailers up to the blank line.
            let _ = fill_until(stream, buf, pos.saturating_sub(2), b"\r\n\r\n").await?;
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        if !fill(stream, buf, pos + size + 2).await? {
            return Err(bad("truncated chunk"));
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn extra_headers(headers: &[(String, String)]) -> String {
    headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect()
}

/// A complete non-streaming response (JSON content type when the body parses as JSON).
pub async fn write_plain(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let content_type =
        if serde_json::from_str::<Value>(body).is_ok() { "application/json" } else { "text/plain; charset=utf-8" };
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n{}\r\n",
        reason(status),
        body.len(),
        extra_headers(headers),
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}

/// Head of a streamed (SSE, chunked) 200 response. `close` announces
/// `connection: close`; without it the client expects a keep-alive
/// connection, so a close mid-body reads as the peer going away (Node's
/// undici then reports `other side closed`, as against a real server).
pub async fn write_stream_head(
    stream: &mut TcpStream,
    content_type: &str,
    headers: &[(String, String)],
    close: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n{}transfer-encoding: chunked\r\n{}\r\n",
        if close { "connection: close\r\n" } else { "" },
        extra_headers(headers),
    );
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await
}

/// One HTTP chunk, flushed at once.
pub async fn write_chunk(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    stream.write_all(format!("{:x}\r\n", bytes.len()).as_bytes()).await?;
    stream.write_all(bytes).await?;
    stream.write_all(b"\r\n").await?;
    stream.flush().await
}

/// Bytes of HTTP chunks gathered before one write, when frames go out back to back.
const BATCH_BYTES: usize = 64 * 1024;

/// Frames as HTTP chunks (one chunk per frame, as [`write_chunk`] writes
/// them) sent back to back: gathered into writes of about 64 KiB, so a
/// stream of many small frames costs the server a few system calls.
pub async fn write_chunks<'a>(
    stream: &mut TcpStream,
    frames: impl IntoIterator<Item = &'a [u8]>,
) -> std::io::Result<()> {
    let mut batch = Vec::with_capacity(BATCH_BYTES + 1024);
    for bytes in frames.into_iter().filter(|b| !b.is_empty()) {
        batch.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
        batch.extend_from_slice(bytes);
        batch.extend_from_slice(b"\r\n");
        if batch.len() >= BATCH_BYTES {
            stream.write_all(&batch).await?;
            batch.clear();
        }
    }
    stream.write_all(&batch).await?;
    stream.flush().await
}

/// The terminating chunk, then close.
pub async fn write_end(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}
