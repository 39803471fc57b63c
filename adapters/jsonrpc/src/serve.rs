//! Serving the JSON-RPC dialect: decode messages and batches, submit ops in
//! arrival order, write responses, batch arrays and notifications through the
//! single writer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use pi_core::agent::{AgentHandle, Output};
use pi_core::op::{Op, Reply, RequestTag};
use pi_jsonl::framing::{FrameError, Record, RecordReader};
pub use pi_jsonl::serving::ServeEnd;
use pi_jsonl::serving::{finish_serving, read_input};
use pi_jsonl::writer::{LineSender, spawn_writer};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::AsyncBufRead;
use tokio::sync::mpsc;

use crate::errors::ErrorObject;
use crate::framing::{Framing, Input, send};
use crate::methods::{Call, decode};
use crate::notify::{Notification, map_event, map_result, status};
use crate::protocol::{Message, Params, classify, notification_bytes, null_id, response_bytes};
use crate::wire::{InitializedParams, ServerNotification};

/// What to do with the reply to a pending request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    /// `getStatus`: built from the state snapshot.
    Status,
    /// `initialize`: followed by the `initialized` notification.
    Initialize,
}

struct Pending {
    id: Box<RawValue>,
    shape: Shape,
    batch: Option<u64>,
}

struct Batch {
    remaining: usize,
    responses: Vec<Box<RawValue>>,
}

#[derive(Default)]
struct State {
    pending: HashMap<RequestTag, Pending>,
    /// Raw ids of requests not yet answered (duplicate detection).
    in_flight: HashMap<String, usize>,
    batches: HashMap<u64, Batch>,
    next_batch: u64,
}

type Shared = Arc<Mutex<State>>;

/// A connection's writer and framing.
#[derive(Clone)]
struct Out {
    lines: LineSender,
    framing: Framing,
}

impl Out {
    async fn write(&self, bytes: Vec<u8>) -> bool {
        send(&self.lines, self.framing, bytes).await
    }
}

/// Serve until input ends (then finish accepted work) or `stop` resolves.
pub async fn serve<R, W, S>(
    records: RecordReader<R>,
    first: Option<Record>,
    framing: Framing,
    out: W,
    agent: AgentHandle,
    outputs: mpsc::Receiver<Output>,
    stop: S,
) -> ServeEnd
where
    R: AsyncBufRead + Unpin,
    W: std::io::Write + Send + 'static,
    S: Future<Output = ()>,
{
    let (lines, writer) = spawn_writer(out);
    let out = Out { lines, framing };
    let state: Shared = Arc::new(Mutex::new(State::default()));
    let mut forwarder = tokio::spawn(forward_outputs(outputs, out.clone(), state.clone()));
    let mut input = Input::new(records, framing, first.as_ref());
    let mut next_tag: RequestTag = 1;

    if framing == Framing::Lines
        && let Some(record) = first
    {
        handle_record(record, &agent, &out, &state, &mut next_tag).await;
    }
    let ended = read_input(
        &agent,
        stop,
        &mut forwarder,
        async || input.next().await,
        async |record| handle_record(record, &agent, &out, &state, &mut next_tag).await,
    )
    .await;
    drop(agent);
    drop(out);
    finish_serving(ended, forwarder, writer).await
}

async fn handle_record(record: Record, agent: &AgentHandle, out: &Out, state: &Shared, next_tag: &mut RequestTag) {
    let text = match record {
        Ok(text) => text,
        Err(e) => {
            let detail = match e {
                FrameError::TooLong { len, limit } => format!("message of {len} bytes exceeds the {limit}-byte limit"),
                FrameError::InvalidUtf8 { offset } => format!("invalid UTF-8 at byte {offset}"),
                FrameError::Header(d) => d,
            };
            out.write(response_bytes(&null_id(), Err(ErrorObject::parse_error(&detail)))).await;
            return;
        }
    };
    if text.trim().is_empty() {
        return;
    }
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            out.write(response_bytes(&null_id(), Err(ErrorObject::parse_error(&e.to_string())))).await;
            return;
        }
    };
    if let Value::Array(items) = value {
        handle_batch(&text, items, agent, out, state, next_tag).await;
        return;
    }
    if let Some(bytes) = handle_message(classify(&text, value), agent, state, next_tag, None).await {
        out.write(bytes.get().as_bytes().to_vec()).await;
    }
}

async fn handle_batch(
    text: &str,
    items: Vec<Value>,
    agent: &AgentHandle,
    out: &Out,
    state: &Shared,
    next_tag: &mut RequestTag,
) {
    if items.is_empty() {
        let error = ErrorObject::invalid_request("empty batch");
        out.write(response_bytes(&null_id(), Err(error))).await;
        return;
    }
    let raws: Vec<Box<RawValue>> = serde_json::from_str(text).unwrap_or_default();
    let batch_id = {
        let Ok(mut s) = state.lock() else { return };
        s.next_batch += 1;
        let id = s.next_batch;
        // `remaining` starts at 1: a guard held while the batch is being read,
        // so replies arriving meanwhile cannot complete it early.
        s.batches.insert(id, Batch { remaining: 1, responses: Vec::new() });
        id
    };
    for (i, item) in items.into_iter().enumerate() {
        let raw_text = raws.get(i).map(|r| r.get()).unwrap_or("null");
        let immediate = handle_message(classify(raw_text, item), agent, state, next_tag, Some(batch_id)).await;
        if let Some(resp) = immediate
            && let Ok(mut s) = state.lock()
            && let Some(b) = s.batches.get_mut(&batch_id)
        {
            b.responses.push(resp);
        }
    }
    let done = state.lock().ok().and_then(|mut s| {
        let b = s.batches.get_mut(&batch_id)?;
        b.remaining = b.remaining.saturating_sub(1);
        if b.remaining == 0 { s.batches.remove(&batch_id) } else { None }
    });
    if let Some(batch) = done {
        write_batch(out, batch).await;
    }
}

async fn write_batch(out: &Out, batch: Batch) {
    if batch.responses.is_empty() {
        return;
    }
    let parts: Vec<&str> = batch.responses.iter().map(|r| r.get()).collect();
    out.write(format!("[{}]", parts.join(",")).into_bytes()).await;
}

fn raw(bytes: Vec<u8>) -> Box<RawValue> {
    RawValue::from_string(String::from_utf8(bytes).unwrap_or_default()).unwrap_or_else(|_| null_id())
}

/// Handle one classified message; returns an immediate response, if any.
async fn handle_message(
    message: Message,
    agent: &AgentHandle,
    state: &Shared,
    next_tag: &mut RequestTag,
    batch: Option<u64>,
) -> Option<Box<RawValue>> {
    match message {
        Message::Invalid { id, error } => Some(raw(response_bytes(&id, Err(error)))),
        Message::ClientResponse { id } => {
            tracing::debug!("ignoring a response for unknown server request {}", id.get());
            None
        }
        Message::Notification { method, params } => {
            if method == crate::ui::RESPONSE_METHOD {
                if let Params::Named(p) = params {
                    let _ = agent.submit(None, crate::ui::response_op(&p)).await;
                }
                return None;
            }
            let Params::Named(p) = params else { return None };
            if let Ok(Some(Call::Op(op))) = decode(&method, &p) {
                let _ = agent.submit(None, op).await;
            }
            None
        }
        Message::Request { id, method, params } => {
            if method.starts_with("rpc.") {
                return Some(raw(response_bytes(&id, Err(ErrorObject::method_not_found(&method)))));
            }
            let named = match params {
                Params::Named(p) => p,
                Params::Positional(a) if a.is_empty() => Default::default(),
                Params::Positional(_) => {
                    let e = ErrorObject::invalid_params("params", "params must be an object (by name)");
                    return Some(raw(response_bytes(&id, Err(e))));
                }
            };
            let call = match decode(&method, &named) {
                Ok(Some(call)) => call,
                Ok(None) => return Some(raw(response_bytes(&id, Err(ErrorObject::method_not_found(&method))))),
                Err(e) => {
                    return Some(raw(response_bytes(&id, Err(ErrorObject::invalid_params(&e.field, &e.message)))));
                }
            };
            let key = id.get().to_string();
            let tag = *next_tag;
            *next_tag += 1;
            let (op, shape) = match call {
                Call::Op(op) => {
                    let shape = if matches!(op, Op::Initialize(_)) { Shape::Initialize } else { Shape::Plain };
                    (op, shape)
                }
                Call::Status => (Op::GetState, Shape::Status),
            };
            {
                let Ok(mut s) = state.lock() else { return None };
                if s.in_flight.get(&key).is_some_and(|n| *n > 0) {
                    drop(s);
                    let e =
                        ErrorObject::invalid_request("duplicate request id: a request with this id is still in flight");
                    return Some(raw(response_bytes(&id, Err(e))));
                }
                *s.in_flight.entry(key).or_default() += 1;
                if let Some(b) = batch.and_then(|b| s.batches.get_mut(&b)) {
                    b.remaining += 1;
                }
                s.pending.insert(tag, Pending { id, shape, batch });
            }
            if agent.submit(Some(tag), op).await.is_err() {
                let pending = state.lock().ok().and_then(|mut s| s.pending.remove(&tag));
                if let Some(p) = pending {
                    let e = ErrorObject::new(crate::errors::INTERNAL_ERROR, "The agent has shut down");
                    return Some(raw(response_bytes(&p.id, Err(e))));
                }
            }
            None
        }
    }
}

/// Forward core output: notifications as they come, responses (and batch
/// arrays) when their replies arrive. `modelChanged` is held until the reply
/// of the request that caused it has been written.
async fn forward_outputs(mut outputs: mpsc::Receiver<Output>, out: Out, state: Shared) -> bool {
    let mut held: Option<Notification> = None;
    while let Some(output) = outputs.recv().await {
        let ok = match output {
            Output::Event(event) => match map_event(event) {
                Some(n @ ServerNotification::ModelChanged(_)) => {
                    held = Some(n);
                    true
                }
                Some(n) => {
                    let mut ok = true;
                    if let Some(h) = held.take() {
                        ok &= out.write(notification_bytes(&h)).await;
                    }
                    ok && out.write(notification_bytes(&n)).await
                }
                None => true,
            },
            Output::Reply { tag, result } => {
                let ok = write_reply(&out, &state, tag, result).await;
                match held.take() {
                    Some(h) => ok && out.write(notification_bytes(&h)).await,
                    None => ok,
                }
            }
        };
        if !ok {
            return false;
        }
    }
    if let Some(h) = held.take() {
        out.write(notification_bytes(&h)).await;
    }
    true
}

async fn write_reply(
    out: &Out,
    state: &Shared,
    tag: RequestTag,
    result: Result<Reply, pi_core::error::CoreError>,
) -> bool {
    let Some(pending) = state.lock().ok().and_then(|mut s| {
        let p = s.pending.remove(&tag)?;
        if let Some(n) = s.in_flight.get_mut(p.id.get()) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.in_flight.remove(p.id.get());
            }
        }
        Some(p)
    }) else {
        return true;
    };
    let initialized = match (&pending.shape, &result) {
        (Shape::Initialize, Ok(Reply::Session(info))) => Some(ServerNotification::Initialized(InitializedParams {
            session_id: info.session_id.clone(),
            model: info.model.as_ref().map(|m| m.id.clone()),
            provider: info.model.as_ref().map(|m| m.provider.clone()),
        })),
        _ => None,
    };
    let outcome = match result {
        Ok(Reply::State(s)) if pending.shape == Shape::Status => Ok(pi_jsonl::wire::ResponseData::Value(status(&s))),
        Ok(reply) => Ok(map_result(reply)),
        Err(e) => Err(ErrorObject::from_core(&e)),
    };
    let bytes = response_bytes(&pending.id, outcome);
    let mut ok = true;
    match pending.batch {
        None => ok &= out.write(bytes).await,
        Some(batch_id) => {
            let done = state.lock().ok().and_then(|mut s| {
                let b = s.batches.get_mut(&batch_id)?;
                b.responses.push(raw(bytes));
                b.remaining = b.remaining.saturating_sub(1);
                if b.remaining == 0 { s.batches.remove(&batch_id) } else { None }
            });
            if let Some(batch) = done {
                write_batch(out, batch).await;
            }
        }
    }
    if let Some(n) = initialized {
        ok &= out.write(notification_bytes(&n)).await;
    }
    ok
}
