//! The Codex backend's WebSocket transport on the fake server (opt-in with
//! [`crate::FakeServer::accept_websockets`]): a `GET` with `upgrade:
//! websocket` on a `…/responses` path opens a socket on which each text
//! message `{"type": "response.create", …}` is one model call. Each is
//! recorded as a request with method `WEBSOCKET` (the handshake's path and
//! headers, the message as body), takes a reply like a POST does, and is
//! answered with the Responses stream's events, one JSON text message each.
//! An error reply becomes an `error` event (`{"type": "error", "status",
//! "error": …}`); a cut reply drops the connection without a close frame.
//! Without the opt-in, upgrades get the usual 404 and clients fall back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

use crate::reply::{Ending, ReplyBody};
use crate::{RecordedRequest, State, lock, responses};

/// The handshake's path and headers.
type Handshake = (String, Vec<(String, String)>);

/// The most bytes of a request head looked at to tell an upgrade apart.
const HEAD_LIMIT: usize = 16 * 1024;

/// Whether the connection's first request is a WebSocket upgrade, by peeking
/// at its head (nothing is consumed).
pub(crate) async fn is_upgrade(stream: &TcpStream) -> bool {
    let mut buf = vec![0u8; HEAD_LIMIT];
    for _ in 0..400 {
        let Ok(n) = stream.peek(&mut buf).await else { return false };
        if n == 0 {
            return false;
        }
        let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
        if let Some(end) = head.find("\r\n\r\n") {
            let head = &head[..end];
            return head.starts_with("get ")
                && head.lines().any(|l| l.starts_with("upgrade:") && l.contains("websocket"));
        }
        if n == buf.len() {
            return false;
        }
        // More of the head is on its way.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

/// Serve one upgraded connection until the client or the server ends it.
pub(crate) async fn serve(stream: TcpStream, state: Arc<Mutex<State>>, mut shutdown: watch::Receiver<bool>) {
    let handshake: Arc<Mutex<Handshake>> = Arc::default();
    let seen = handshake.clone();
    // The error type is tungstenite's (a refused handshake's response).
    #[allow(clippy::result_large_err)]
    let callback = move |req: &Request, resp: Response| {
        let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).trim().to_string()))
            .collect();
        if let Ok(mut h) = seen.lock() {
            *h = (path, headers);
        }
        Ok(resp)
    };
    let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(stream, callback).await else { return };
    let (path, headers) = handshake.lock().map(|h| h.clone()).unwrap_or_default();
    loop {
        let message = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            m = socket.next() => m,
        };
        let text = match message {
            Some(Ok(Message::Text(t))) => t.to_string(),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Binary(_) | Message::Frame(_))) => continue,
            Some(Ok(Message::Close(frame))) => {
                let ending =
                    frame.map_or_else(|| "no status".to_string(), |f| format!("{} {}", u16::from(f.code), f.reason));
                lock(&state).websocket_endings.push(ending);
                return;
            }
            _ => {
                lock(&state).websocket_endings.push("dropped".into());
                return;
            }
        };
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let request = RecordedRequest {
            method: "WEBSOCKET".into(),
            path: path.clone(),
            headers: headers.clone(),
            body: body.clone(),
            raw_body: text.into_bytes(),
        };
        let reply = {
            let mut st = lock(&state);
            st.requests.push(request.clone());
            st.select(&request)
        };
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let script = match reply.body {
            ReplyBody::Error { status, body } => {
                let error = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("error").cloned())
                    .unwrap_or_else(|| json!({"message": body}));
                let event = json!({"type": "error", "status": status, "error": error});
                if socket.send(Message::text(event.to_string())).await.is_err() {
                    return;
                }
                continue;
            }
            ReplyBody::Stream(script) => script,
        };
        for frame in responses::render(&script, &responses::RequestInfo::of(&body, responses::PROMPT)) {
            if frame.is_part && !reply.delay.is_zero() {
                tokio::time::sleep(reply.delay).await;
            }
            let text = String::from_utf8_lossy(&frame.bytes).into_owned();
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if data.is_empty() {
                continue;
            }
            if socket.send(Message::text(data.join("\n"))).await.is_err() {
                return;
            }
        }
        match script.ending {
            // Gone without a close frame: the client sees the connection drop.
            Ending::Cut => return,
            Ending::Hang => {
                let _ = shutdown.wait_for(|stop| *stop).await;
                return;
            }
            _ => {}
        }
    }
}
