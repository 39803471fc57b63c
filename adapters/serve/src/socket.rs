//! One WebSocket connection served by the transport's connection loop: its
//! text frames are the records (one protocol message per frame), its sink
//! takes one message per frame, and the dialect is detected from the first
//! message exactly as on stdio.
//!
//! `?session=ID[&afterSeq=N]` attaches at connect time and is answered at
//! once, as the dialect answers `switch_session`/`resumeSession` (native: a
//! response without id; JSON-RPC: a response with a `null` id); such a
//! connection speaks `?protocol=` or else the native dialect, since nothing
//! has been read to detect one from.
//!
//! How it ends: the client closes (its sessions go on); a message over the
//! size limit (close 1009 with the sizes); a text frame that is not UTF-8
//! (an error reply, then close 1007); the session it was attached to
//! ended (close 1000 with the reason); the client stopped reading (dropped,
//! the reason logged); the server stops (close 1001).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures::stream::{SplitSink, SplitStream};
use futures::task::AtomicWaker;
use futures::{SinkExt, StreamExt};
use pi_transport::detect::{Detected, detect};
use pi_transport::{FrameError, MessageSink, Preread, Record, RecordSource, serve_in_order};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::hub::Kick;
use crate::registry::Registry;

/// Why the input ended early: the close code and its reason.
type Slot = Arc<Mutex<Option<(u16, String)>>>;

struct WsSource {
    stream: SplitStream<WebSocket>,
    /// Set when a message over the limit or a bad text frame ended the input.
    too_big: Slot,
    /// The input ended that way (`too_big` says why).
    ended: bool,
    /// Whether the socket's read side may have something since it was last
    /// polled (see [`ReadGate`]).
    gate: ReadGate,
}

/// The connection loop looks at its input each time it wakes, a relayed
/// delta's wake-up included; reading the WebSocket costs a read attempt
/// (and tungstenite zeroes its 4 KiB read buffer for it) even when nothing
/// came. The gate polls the stream only when its own waker fired since the
/// stream last said `Pending` (or when it last gave a message: more may be
/// buffered); otherwise the input is `Pending` at once.
struct ReadGate {
    wake: Arc<ReadWake>,
    waker: Waker,
}

/// The waker the stream is polled with: it notes that the socket's read side
/// may have something, and wakes the connection's task.
struct ReadWake {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for ReadWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl ReadGate {
    fn new() -> ReadGate {
        // Woken at first: the stream has not been polled yet.
        let wake = Arc::new(ReadWake { woken: AtomicBool::new(true), task: AtomicWaker::new() });
        ReadGate { waker: Waker::from(wake.clone()), wake }
    }

    fn poll_next<S: futures::Stream + Unpin>(&self, stream: &mut S, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        // Registered before the flag is read: a wake-up in between is not lost.
        self.wake.task.register(cx.waker());
        if !self.wake.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let item = stream.poll_next_unpin(&mut Context::from_waker(&self.waker));
        if item.is_ready() {
            // The stream may hold more messages already read: look again next time.
            self.wake.woken.store(true, Ordering::Release);
        }
        item
    }
}

impl RecordSource for WsSource {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        if self.ended {
            return Ok(None);
        }
        loop {
            let (stream, gate) = (&mut self.stream, &self.gate);
            let item = std::future::poll_fn(|cx| gate.poll_next(stream, cx)).await;
            return match item {
                None | Some(Ok(Message::Close(_))) => Ok(None),
                Some(Ok(Message::Text(text))) => Ok(Some(Ok(text.as_str().to_owned()))),
                Some(Ok(Message::Binary(_))) => Ok(Some(Err(FrameError::Header(
                    "binary WebSocket frames are not accepted: send each message as a text frame".into(),
                )))),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Err(e)) => match ended_by(e) {
                    Ok((code, detail)) => {
                        let record = (code == close_code::INVALID).then(|| Err(FrameError::Header(detail.clone())));
                        if let Ok(mut slot) = self.too_big.lock() {
                            *slot = Some((code, detail));
                        }
                        self.ended = true;
                        // A bad text frame is answered like a bad line on stdio, then the input ends
                        // (the WebSocket cannot be read past it).
                        Ok(record)
                    }
                    Err(e) => Err(std::io::Error::other(e)),
                },
            };
        }
    }
}

/// The close code and sentence for a message over the limit or a text
/// frame that is not UTF-8, or the error as it was.
fn ended_by(e: axum::Error) -> Result<(u16, String), String> {
    let inner = e.into_inner();
    match inner.downcast_ref::<tungstenite::Error>() {
        Some(tungstenite::Error::Capacity(tungstenite::error::CapacityError::MessageTooLong { size, max_size })) => {
            Ok((close_code::SIZE, format!("message of {size} bytes exceeds the {max_size}-byte limit")))
        }
        Some(tungstenite::Error::Utf8(detail)) => {
            Ok((close_code::INVALID, format!("a text frame is not valid UTF-8 ({detail})")))
        }
        _ => Err(inner.to_string()),
    }
}

/// The connection's write side. Its lock is `futures`' (an atomic flag,
/// cheap when nobody waits: every relayed delta takes it), not tokio's
/// (a semaphore whose release locks a mutex).
struct WsSink(futures::lock::Mutex<SplitSink<WebSocket, Message>>);

/// One message body as a text frame (the dialects write UTF-8; anything else is repaired, never dropped).
fn text_frame(body: Vec<u8>) -> Message {
    let text = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Message::Text(text.into())
}

impl MessageSink for &WsSink {
    async fn send(&self, body: Vec<u8>) -> bool {
        self.0.lock().await.send(text_frame(body)).await.is_ok()
    }

    /// The messages at hand go out as one write: each frame is queued
    /// (`feed`), and one `flush` writes them all, not one write per message.
    async fn send_all(&self, bodies: &mut Vec<Vec<u8>>) -> bool {
        let mut sink = self.0.lock().await;
        for body in bodies.drain(..) {
            if sink.feed(text_frame(body)).await.is_err() {
                return false;
            }
        }
        sink.flush().await.is_ok()
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
    write_delay: std::time::Duration,
    attach: Option<(String, Option<u64>)>,
    protocol: Option<Detected>,
    stopping: CancellationToken,
) {
    let (sink, stream) = socket.split();
    let sink = WsSink(futures::lock::Mutex::new(sink));
    let too_big = Slot::default();
    let mut source = WsSource { stream, too_big: too_big.clone(), ended: false, gate: ReadGate::new() };
    let attach_asked = attach.is_some();
    let kick = Kick::default();
    let (link, outputs, ended) = crate::link::connect(registry.clone(), queue_messages, kick.clone(), write_delay);
    let conn = link.id();
    // Held until the connect-time attach below has taken the session.
    let mut _loaded = None;
    if let Some((session, _)) = &attach {
        match registry.open_or_create(session).await {
            Ok(hub) => _loaded = Some(hub),
            Err(e) => {
                tracing::info!("connection {conn}: cannot attach to session {session}: {}", e.message);
                sink.close(close_code::POLICY, &e.message).await;
                return;
            }
        }
    }
    let first = match (protocol, &attach) {
        (_, Some((session, after_seq))) => Some(Ok(connect_attach(protocol, session, *after_seq))),
        (Some(_), None) => None,
        (None, None) => tokio::select! {
            first = source.next() => match first {
                Ok(Some(record)) => Some(record),
                _ => return,
            },
            _ = stopping.cancelled() => return,
        },
    };
    let dialect = match (protocol, &first) {
        (Some(forced), _) => forced,
        (None, _) if attach_asked => Detected::Native,
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
        let host = crate::acp::RegistryHost::new(registry.clone(), queue_messages, kick.clone());
        let source = Preread::new(first, source);
        let stop = stopping.clone().cancelled_owned();
        tokio::select! {
            _ = pi_acp_agent::serve_acp(host, source, &sink, stop) => {}
            reason = kick.kicked() => {
                tracing::warn!("connection {conn}: disconnected: {reason}");
                return;
            }
        }
        if registry.is_draining() {
            sink.close(SERVICE_RESTART, RESTARTING).await;
            return;
        }
        close(&sink, &too_big, None, &stopping).await;
        return;
    }
    // A connection attached at connect time without `?protocol=` starts
    // native; if its first message turns out to be JSON-RPC, it is served
    // again in JSON-RPC from the same attach (a JSON-RPC client ignores the
    // native lines sent meanwhile, and gets the answer and replay again).
    let mut source =
        Watch { inner: source, pending: None, watching: attach_asked && protocol.is_none(), switched: None };
    let (mut dialect, mut link, mut outputs, mut ended, mut first) = (dialect, link, outputs, ended, first);
    loop {
        let records = Preread::new(first.take(), Borrowed(&mut source));
        let stop = stopping.clone().cancelled_owned();
        let served = async {
            match dialect {
                Detected::Native => {
                    serve_in_order(pi_jsonl::Native::default(), records, &sink, link, outputs, stop).await
                }
                Detected::JsonRpc | Detected::JsonRpcHeaders | Detected::Acp => {
                    serve_in_order(pi_jsonrpc::JsonRpc::default(), records, &sink, link, outputs, stop).await
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
        let Some(record) = source.switched.take() else { break };
        let (Some((session, after_seq)), detected) = (&attach, detect(&record)) else { break };
        if detected == Detected::Acp {
            let text = "ACP connections open their sessions with session/new or session/load, not ?session=";
            sink.close(close_code::POLICY, text).await;
            return;
        }
        tracing::debug!("connection {conn}: JSON-RPC after a native start; attached again");
        (link, outputs, ended) = crate::link::connect(registry.clone(), queue_messages, kick.clone(), write_delay);
        source.pending = Some(record);
        first = Some(Ok(connect_attach(Some(Detected::JsonRpc), session, *after_seq)));
        dialect = Detected::JsonRpc;
    }
    let ended = ended.lock().ok().and_then(|s| s.clone());
    if registry.is_draining() {
        // The worker restarts: the client resumes elsewhere with afterSeq.
        sink.close(SERVICE_RESTART, RESTARTING).await;
        return;
    }
    close(&sink, &too_big, ended, &stopping).await;
}

/// Close code 1012: the service is restarting.
const SERVICE_RESTART: u16 = 1012;
const RESTARTING: &str = "this worker is restarting: connect again (with afterSeq) to go on";

/// The connection's records, watching the first one of a connection that
/// started native without being asked to: a JSON-RPC (or ACP) record is
/// kept aside and ends this input, so the connection can start again in its dialect.
struct Watch {
    inner: WsSource,
    /// The record kept aside, read first by the next serve.
    pending: Option<Record>,
    watching: bool,
    switched: Option<Record>,
}

/// True when a record says it is JSON-RPC (`"jsonrpc"` in it, or in a
/// batch's first member): junk a native client sent does not switch dialects.
fn names_jsonrpc(record: &Record) -> bool {
    let Ok(text) = record else { return false };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields.contains_key("jsonrpc"),
        Ok(Value::Array(items)) => items.first().and_then(Value::as_object).is_some_and(|f| f.contains_key("jsonrpc")),
        _ => false,
    }
}

/// A borrowed [`Watch`] as a record source (the serve loop takes its source by value).
struct Borrowed<'a>(&'a mut Watch);

impl RecordSource for Borrowed<'_> {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        let watch = &mut *self.0;
        if let Some(record) = watch.pending.take() {
            return Ok(Some(record));
        }
        loop {
            let record = watch.inner.next().await?;
            if !watch.watching {
                return Ok(record);
            }
            let Some(record) = record else { return Ok(None) };
            if matches!(&record, Ok(text) if text.trim().is_empty()) {
                continue;
            }
            watch.watching = false;
            if detect(&record) == Detected::Native || !names_jsonrpc(&record) {
                return Ok(Some(record));
            }
            watch.switched = Some(record);
            return Ok(None);
        }
    }
}

/// The record a connect-time attach is served as: the dialect's own
/// re-attach request (native `switch_session` without id, JSON-RPC
/// `resumeSession` with a `null` id), so its answer is that request's.
fn connect_attach(protocol: Option<Detected>, session: &str, after_seq: Option<u64>) -> String {
    let mut value = match protocol {
        Some(Detected::JsonRpc | Detected::JsonRpcHeaders) => serde_json::json!({
            "jsonrpc": "2.0", "id": null, "method": "resumeSession", "params": {"sessionId": session},
        }),
        _ => serde_json::json!({"type": "switch_session", "sessionPath": session}),
    };
    if let Some(after) = after_seq {
        let target = match value.get_mut("params") {
            Some(params) => params,
            None => &mut value,
        };
        if let Value::Object(fields) = target {
            fields.insert("afterSeq".into(), after.into());
        }
    }
    value.to_string()
}

/// Close the socket with the reason its serving ended.
async fn close(sink: &WsSink, too_big: &Slot, ended: Option<String>, stopping: &CancellationToken) {
    let too_big = too_big.lock().ok().and_then(|s| s.clone());
    if let Some((code, detail)) = too_big {
        tracing::info!("connection closed: {detail}");
        sink.close(code, &detail).await;
    } else if let Some(reason) = ended {
        sink.close(close_code::NORMAL, &reason).await;
    } else if stopping.is_cancelled() {
        sink.close(close_code::AWAY, "the server is shutting down").await;
    } else {
        sink.close(close_code::NORMAL, "").await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A stream that counts its polls and yields what `items` holds, else
    /// `Pending` (keeping the waker, as a socket's readiness does).
    #[derive(Default)]
    struct Probe {
        polls: Arc<AtomicUsize>,
        items: Arc<Mutex<Vec<u32>>>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    impl futures::Stream for Probe {
        type Item = u32;

        fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            match self.items.lock().unwrap().pop() {
                Some(item) => Poll::Ready(Some(item)),
                None => {
                    *self.waker.lock().unwrap() = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }

    #[test]
    fn the_read_side_is_polled_only_after_its_own_wake_up() {
        let mut probe = Probe::default();
        let (polls, items, stream_waker) = (probe.polls.clone(), probe.items.clone(), probe.waker.clone());
        let gate = ReadGate::new();
        let task = Arc::new(Counted::default());
        let task_waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&task_waker);
        // First poll: the stream is looked at and has nothing.
        assert!(gate.poll_next(&mut probe, &mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        // The task wakes for something else (an output): the stream is not polled again.
        for _ in 0..5 {
            assert!(gate.poll_next(&mut probe, &mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        // The socket becomes readable: its waker fires, the task is woken, the stream is polled.
        items.lock().unwrap().extend([2, 1]);
        stream_waker.lock().unwrap().take().unwrap().wake();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        assert_eq!(gate.poll_next(&mut probe, &mut cx), Poll::Ready(Some(1)));
        // After a message the stream is looked at again (more may be buffered).
        assert_eq!(gate.poll_next(&mut probe, &mut cx), Poll::Ready(Some(2)));
        assert!(gate.poll_next(&mut probe, &mut cx).is_pending());
        assert!(gate.poll_next(&mut probe, &mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 4);
    }

    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}
