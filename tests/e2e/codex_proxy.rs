//! Codex's WebSocket through an HTTP proxy, side by side with pi 1.6.0: with
//! `HTTP_PROXY`/`HTTPS_PROXY` set, pi's socket (undici's WebSocket on pi's
//! proxy agent) goes through a `CONNECT` tunnel; so does pi-rpc's. The proxy
//! here only tunnels, as many corporate proxies do, and records each tunnel.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::wire_apis::{codex_case, side_by_side_with};

/// A `CONNECT`-only HTTP proxy on 127.0.0.1 (other methods get 405).
struct ConnectProxy {
    url: String,
    tunnels: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request head (up to the blank line), read byte by byte.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

async fn serve(mut client: TcpStream, tunnels: Arc<Mutex<Vec<String>>>) {
    let Some(head) = read_head(&mut client).await else { return };
    let line = head.lines().next().unwrap_or_default().to_string();
    let mut parts = line.split_whitespace();
    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n").await;
        return;
    };
    tunnels.lock().unwrap().push(target.to_string());
    let Ok(mut upstream) = TcpStream::connect(target).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n").await;
        return;
    };
    if client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

impl ConnectProxy {
    async fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let tunnels: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = tunnels.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, seen.clone()));
            }
        });
        ConnectProxy { url, tunnels, task }
    }

    /// Tunnels opened, per target.
    fn tunnels(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for target in self.tunnels.lock().unwrap().iter() {
            *out.entry(target.clone()).or_insert(0) += 1;
        }
        out
    }
}

#[tokio::test]
async fn openai_codex_websocket_goes_through_a_proxy_as_pi_s_does() {
    let proxy = ConnectProxy::start().await;
    let mut case = codex_case("openai-codex-websocket-through-a-proxy");
    case.env = vec![("HTTP_PROXY", proxy.url.clone()), ("HTTPS_PROXY", proxy.url.clone())];
    // Every model call over a socket (asserted there), the same requests as pi's.
    let calls = side_by_side_with(case, true).await;
    if calls.is_empty() {
        return; // no reference pi
    }
    assert_eq!(calls.len(), 2);
    assert!(calls[1].body["previous_response_id"].is_string(), "both calls on one socket: {}", calls[1].body);
    let tunnels = proxy.tunnels();
    let counts: Vec<usize> = tunnels.values().copied().collect();
    assert_eq!(counts, [1, 1], "one tunnel for each program's socket (each has its own server): {tunnels:?}");
}
