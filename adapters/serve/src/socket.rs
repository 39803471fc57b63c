//! One WebSocket connection served by the transport's connection loop: its
//! text frames are the records (one protocol message per frame), its sink
//! takes one message per frame, and the dialect is detected from the first
//! message exactly as on stdio.
//!
//! How it ends: the client closes (its sessions go on); a message over the
//! size limit (close 1009 with the sizes); the session it was attached to
//! ended (close 1000 with the reason); the client stopped reading (dropped,
//! the reason logged); the server stops (close 1001).

use std::sync::{Arc, Mutex};

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use pi_transport::detect::{Detected, detect};
use pi_transport::{FrameError, MessageSink, Preread, Record, RecordSource, serve};
use tokio_util::sync::CancellationToken;

use crate::hub::Kick;
use crate::registry::Registry;

type Slot = Arc<Mutex<Option<String>>>;

struct WsSource {
    stream: SplitStream<WebSocket>,
    /// Set when a message over the limit ended the input.
    too_big: Slot,
}

impl RecordSource for WsSource {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        loop {
            return match self.stream.next().await {
                None | Some(Ok(Message::Close(_))) => Ok(None),
                Some(Ok(Message::Text(text))) => Ok(Some(Ok(text.as_str().to_owned()))),
                Some(Ok(Message::Binary(_))) => Ok(Some(Err(FrameError::Header(
                    "binary WebSocket frames are not accepted: send each message as a text frame".into(),
                )))),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Err(e)) => match too_long(e) {
                    Ok(detail) => {
                        if let Ok(mut slot) = self.too_big.lock() {
                            *slot = Some(detail);
                        }
                        Ok(None)
                    }
                    Err(e) => Err(std::io::Error::other(e)),
                },
            };
        }
    }
}

/// The sentence for a message over the limit, or the error as it was.
fn too_long(e: axum::Error) -> Result<String, String> {
    let inner = e.into_inner();
    match inner.downcast_ref::<tungstenite::Error>() {
        Some(tungstenite::Error::Capacity(tungstenite::error::CapacityError::MessageTooLong { size, max_size })) => {
            Ok(format!("message of {size} bytes exceeds the {max_size}-byte limit"))
        }
        _ => Err(inner.to_string()),
    }
}

struct WsSink(tokio::sync::Mutex<SplitSink<WebSocket, Message>>);

impl MessageSink for &WsSink {
    async fn send(&self, body: Vec<u8>) -> bool {
        let text = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        self.0.lock().await.send(Message::Text(text.into())).await.is_ok()
    }
}

impl WsSink {
    async fn close(&self, code: u16, reason: &str) {
        // A close reason is at most 123 bytes.
        let mut reason = reason.to_string();
        while reason.len() > 123 {
            reason.pop();
        }
        let frame = CloseFrame { code, reason: reason.into() };
        let mut sink = self.0.lock().await;
        let _ = sink.send(Message::Close(Some(frame))).await;
        let _ = sink.close().await;
    }
}

/// Serve one upgraded connection until it ends.
pub(crate) async fn serve_socket(
    socket: WebSocket,
    registry: Arc<Registry>,
    queue_messages: usize,
    attach: Option<(String, Option<u64>)>,
    protocol: Option<Detected>,
    stopping: CancellationToken,
) {
    let (sink, stream) = socket.split();
    let sink = WsSink(tokio::sync::Mutex::new(sink));
    let too_big = Slot::default();
    let mut source = WsSource { stream, too_big: too_big.clone() };
    let kick = Kick::default();
    let (mut link, outputs, ended) = crate::link::connect(registry.clone(), queue_messages, kick.clone());
    let conn = link.id();
    let attach_asked = attach.is_some();
    if let Some((session, after_seq)) = attach
        && let Err(e) = link.attach_at_start(&session, after_seq).await
    {
        tracing::info!("connection {conn}: cannot attach to session {session}: {}", e.message);
        sink.close(close_code::POLICY, &e.message).await;
        return;
    }
    let first = match protocol {
        Some(_) => None,
        None => tokio::select! {
            first = source.next() => match first {
                Ok(Some(record)) => Some(record),
                _ => return,
            },
            _ = stopping.cancelled() => return,
        },
    };
    let dialect = match (protocol, &first) {
        (Some(forced), _) => forced,
        (None, Some(record)) => detect(record),
        (None, None) => Detected::Native,
    };
    tracing::debug!("connection {conn}: {dialect:?}");
    if dialect == Detected::Acp {
        // ACP holds its sessions itself (several per connection): the link's
        // one attachment is not used.
        if attach_asked {
            sink.close(
                close_code::POLICY,
                "ACP connections open their sessions with session/new or session/load, not ?session=",
            )
            .await;
            return;
        }
        drop(link);
        drop(outputs);
        let host = crate::acp::RegistryHost::new(registry, queue_messages, kick.clone());
        let source = Preread::new(first, source);
        let stop = stopping.clone().cancelled_owned();
        tokio::select! {
            _ = pi_acp_agent::serve_acp(host, source, &sink, stop) => {}
            reason = kick.kicked() => {
                tracing::warn!("connection {conn}: disconnected: {reason}");
                return;
            }
        }
        close(&sink, &too_big, None, &stopping).await;
        return;
    }
    let source = Preread::new(first, source);
    let stop = stopping.clone().cancelled_owned();
    let served = async {
        match dialect {
            Detected::Native => serve(pi_jsonl::Native, source, &sink, link, outputs, stop).await,
            Detected::JsonRpc | Detected::JsonRpcHeaders | Detected::Acp => {
                serve(pi_jsonrpc::JsonRpc::default(), source, &sink, link, outputs, stop).await
            }
        }
    };
    tokio::select! {
        _ = served => {}
        reason = kick.kicked() => {
            tracing::warn!("connection {conn}: disconnected: {reason}");
            return;
        }
    }
    let ended = ended.lock().ok().and_then(|s| s.clone());
    close(&sink, &too_big, ended, &stopping).await;
}

/// Close the socket with the reason its serving ended.
async fn close(sink: &WsSink, too_big: &Slot, ended: Option<String>, stopping: &CancellationToken) {
    let too_big = too_big.lock().ok().and_then(|s| s.clone());
    if let Some(detail) = too_big {
        tracing::info!("connection closed: {detail}");
        sink.close(close_code::SIZE, &detail).await;
    } else if let Some(reason) = ended {
        sink.close(close_code::NORMAL, &reason).await;
    } else if stopping.is_cancelled() {
        sink.close(close_code::AWAY, "the server is shutting down").await;
    } else {
        sink.close(close_code::NORMAL, "").await;
    }
}
