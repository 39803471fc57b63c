//! The JSON-RPC dialect as a [`Dialect`] of the transport: messages and
//! batches become ops (or error responses), replies become responses (a
//! batch is answered with one array once every member is), events become
//! notifications.

use std::collections::HashMap;

use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Op, Reply};
use pi_transport::raw::{RawJson, null_id};
use pi_transport::{Action, Dialect, FrameError, InFlight, MessageBatch, Outgoing, Record, StreamedMessage};
use serde_json::value::RawValue;

use pi_transport::protocol::{self, Binding, EncodeError, Written};

use crate::errors::{ErrorObject, INTERNAL_ERROR};
use crate::notify::map_event;
use crate::protocol::{Message, Params, classify, notification_bytes, response_bytes, response_head};
use crate::wire::{InitializedParams, ServerNotification};

/// A request awaiting its reply.
#[derive(Debug)]
pub struct Pending {
    id: Box<RawValue>,
    command: &'static Binding,
    batch: Option<u64>,
}

#[derive(Debug, Default)]
struct Batch {
    /// Requests of the batch not answered yet.
    remaining: usize,
    responses: Vec<Box<RawValue>>,
}

/// The JSON-RPC 2.0 dialect.
#[derive(Debug, Default)]
pub struct JsonRpc {
    batches: HashMap<u64, Batch>,
    next_batch: u64,
    /// `modelChanged` (with its event's `seq`), held until the reply of the
    /// request that caused it is out.
    held: Option<(ServerNotification, Option<u64>)>,
    /// Tools the client declared in `initialize`: their `toolCall` goes out
    /// when the core waits for the result, not when the call starts.
    client_tools: Vec<String>,
    /// The notifications of one event, before they go into a batch.
    scratch: Vec<Vec<u8>>,
}

/// Escape raw U+2028/U+2029 (legal in JSON strings, but line readers of some
/// clients split on them). They can only occur inside strings, so a byte
/// substitution is exact.
pub fn escape_line_separators(bytes: Vec<u8>) -> Vec<u8> {
    if !bytes.windows(2).any(|w| w == [0xE2, 0x80]) {
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if i + 2 < bytes.len()
            && bytes[i] == 0xE2
            && bytes[i + 1] == 0x80
            && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9)
        {
            out.extend_from_slice(if bytes[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn raw(bytes: Vec<u8>) -> Box<RawValue> {
    RawValue::from_string(String::from_utf8(bytes).unwrap_or_default()).unwrap_or_else(|_| null_id())
}

fn send(actions: &mut Vec<Action<Pending>>, bytes: Vec<u8>) {
    actions.push(Action::Send(escape_line_separators(bytes)));
}

impl JsonRpc {
    /// Handle one message: an immediate response, or actions.
    fn message(
        &mut self,
        message: Message,
        in_flight: &InFlight<Pending>,
        claimed: &mut Vec<String>,
        batch: Option<u64>,
        actions: &mut Vec<Action<Pending>>,
    ) -> Option<Box<RawValue>> {
        let (id, method, params) = match message {
            Message::Invalid { id, error } => return Some(raw(response_bytes(&id, Err(error)))),
            Message::ClientResponse { id } => {
                tracing::debug!("ignoring a response for unknown server request {}", id.get());
                return None;
            }
            Message::Notification { method, params } => {
                if let Params::Named(p) = params
                    && let Some(Ok(op)) = protocol::jsonrpc(&method).map(|c| c.decode(&p))
                {
                    actions.push(Action::Submit { op, pending: None });
                }
                return None;
            }
            Message::Request { id, method, params } => (id, method, params),
        };
        let fail = |error: ErrorObject| Some(raw(response_bytes(&id, Err(error))));
        if method.starts_with("rpc.") {
            return fail(ErrorObject::method_not_found(&method));
        }
        let named = match params {
            Params::Named(p) => p,
            Params::Positional(0) => Default::default(),
            Params::Positional(_) => {
                return fail(ErrorObject::invalid_params("params", "params must be an object (by name)"));
            }
        };
        let Some(command) = protocol::jsonrpc(&method) else {
            return fail(ErrorObject::method_not_found(&method));
        };
        let op = match command.decode(&named) {
            Ok(op) => op,
            Err(e) => return fail(ErrorObject::invalid_params(&e.field, &e.message)),
        };
        if let Op::Initialize(init) = &op {
            self.client_tools.extend(init.client_tools.iter().map(|t| t.name.clone()));
        }
        let key = id.get();
        if claimed.iter().any(|c| c == key) || in_flight.values().any(|p| p.id.get() == key) {
            return fail(ErrorObject::invalid_request(
                "duplicate request id: a request with this id is still in flight",
            ));
        }
        claimed.push(key.to_string());
        if let Some(b) = batch.and_then(|b| self.batches.get_mut(&b)) {
            b.remaining += 1;
        }
        actions.push(Action::Submit { op, pending: Some(Pending { id, command, batch }) });
        None
    }

    fn batch(&mut self, items: Vec<&RawValue>, in_flight: &InFlight<Pending>, actions: &mut Vec<Action<Pending>>) {
        if items.is_empty() {
            send(actions, response_bytes(&null_id(), Err(ErrorObject::invalid_request("empty batch"))));
            return;
        }
        self.next_batch += 1;
        let batch_id = self.next_batch;
        self.batches.insert(batch_id, Batch::default());
        let mut claimed = Vec::new();
        for item in items {
            let message = match RawJson::parse(item.get()) {
                Ok(RawJson::Object(obj)) => classify(&obj),
                _ => Message::Invalid { id: null_id(), error: ErrorObject::invalid_request("expected a JSON object") },
            };
            if let Some(response) = self.message(message, in_flight, &mut claimed, Some(batch_id), actions)
                && let Some(b) = self.batches.get_mut(&batch_id)
            {
                b.responses.push(response);
            }
        }
        if self.batches.get(&batch_id).is_some_and(|b| b.remaining == 0)
            && let Some(batch) = self.batches.remove(&batch_id)
            && let Some(bytes) = batch_bytes(batch)
        {
            send(actions, bytes);
        }
    }
}

/// A notification's bytes, with the `seq` of its event in `params`.
fn notification(n: &ServerNotification, seq: Option<u64>) -> Vec<u8> {
    let bytes = notification_bytes(n);
    let bytes = match seq {
        Some(seq) => pi_transport::seq::insert_seq(bytes, 1, seq),
        None => bytes,
    };
    escape_line_separators(bytes)
}

impl JsonRpc {
    fn notify(&mut self, event: AgentEvent, seq: Option<u64>, out: &mut Vec<Vec<u8>>) {
        if let AgentEvent::ToolExecutionStart { tool_name, .. } = &event
            && self.client_tools.contains(tool_name)
        {
            return;
        }
        match map_event(event) {
            Some(n @ ServerNotification::ModelChanged(_)) => self.held = Some((n, seq)),
            Some(n) => {
                self.finish(out);
                out.push(notification(&n, seq));
            }
            None => {}
        }
    }
}

impl JsonRpc {
    fn respond(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        // `initialize` is followed by the `initialized` notification.
        let initialized = match &result {
            Ok(Reply::Session(info)) => Some(ServerNotification::Initialized(InitializedParams {
                session_id: info.session_id.clone(),
                model: info.model.as_ref().map(|m| m.id.clone()),
                provider: info.model.as_ref().map(|m| m.provider.clone()),
            })),
            _ => None,
        };
        let bytes = match result.map(|reply| encode_response(&pending, reply)) {
            Ok(Ok(Encoded::Bytes(bytes))) => bytes,
            Ok(Ok(Encoded::Streamed(message))) => {
                out.push(Outgoing::Streamed(message));
                self.after_reply(initialized, out);
                return;
            }
            Ok(Err(e)) => {
                tracing::error!("{e}");
                response_bytes(&pending.id, Err(ErrorObject::new(INTERNAL_ERROR, e.to_string())))
            }
            Err(e) => response_bytes(&pending.id, Err(ErrorObject::from_core(&e))),
        };
        match pending.batch {
            None => out.push(Outgoing::Bytes(escape_line_separators(bytes))),
            Some(batch_id) => {
                let done = self.batches.get_mut(&batch_id).and_then(|b| {
                    b.responses.push(raw(bytes));
                    b.remaining = b.remaining.saturating_sub(1);
                    (b.remaining == 0).then_some(())
                });
                if done.is_some()
                    && let Some(batch) = self.batches.remove(&batch_id)
                    && let Some(bytes) = batch_bytes(batch)
                {
                    out.push(Outgoing::Bytes(escape_line_separators(bytes)));
                }
            }
        }
        self.after_reply(initialized, out);
    }

    /// What follows a reply: `initialized` after `initialize`'s, then a held notification.
    fn after_reply(&mut self, initialized: Option<ServerNotification>, out: &mut Vec<Outgoing>) {
        if let Some(n) = initialized {
            out.push(Outgoing::Bytes(escape_line_separators(notification_bytes(&n))));
        }
        let mut held = Vec::new();
        self.finish(&mut held);
        out.extend(held.into_iter().map(Outgoing::Bytes));
    }
}

/// A success response, encoded.
enum Encoded {
    /// The whole response (separators not escaped yet).
    Bytes(Vec<u8>),
    /// Outside a batch, a big result written as it is serialised (escaped on the way).
    Streamed(StreamedMessage),
}

/// The success response to `pending`: its head, the result written
/// straight after it (no second serialisation), the closing brace.
fn encode_response(pending: &Pending, reply: Reply) -> Result<Encoded, EncodeError> {
    let error = |detail: String| EncodeError { command: pending.command.name, detail };
    let mut bytes = response_head(&pending.id).ok_or_else(|| error("cannot write the response".to_string()))?;
    match pending.command.encode_into(reply, &mut bytes)? {
        Written::Absent => bytes.extend_from_slice(b"{}"),
        Written::Inline => {}
        Written::Streamed(body) if pending.batch.is_none() => {
            let message = StreamedMessage { head: bytes, body, tail: b"}", escape_line_separators: true };
            return Ok(Encoded::Streamed(message));
        }
        // A batch is answered as one array: the result is assembled.
        Written::Streamed(body) => body.write_json(&mut bytes).map_err(|e| error(e.to_string()))?,
    }
    bytes.push(b'}');
    Ok(Encoded::Bytes(bytes))
}

fn batch_bytes(batch: Batch) -> Option<Vec<u8>> {
    if batch.responses.is_empty() {
        return None;
    }
    let parts: Vec<&str> = batch.responses.iter().map(|r| r.get()).collect();
    Some(format!("[{}]", parts.join(",")).into_bytes())
}

impl Dialect for JsonRpc {
    type Pending = Pending;

    fn decode(&mut self, record: Record, in_flight: &InFlight<Pending>, actions: &mut Vec<Action<Pending>>) {
        let text = match record {
            Ok(text) => text,
            Err(e) => {
                let detail = match e {
                    FrameError::TooLong { len, limit } => {
                        format!("message of {len} bytes exceeds the {limit}-byte limit")
                    }
                    FrameError::InvalidUtf8 { offset } => format!("invalid UTF-8 at byte {offset}"),
                    FrameError::Header(d) => d,
                };
                send(actions, response_bytes(&null_id(), Err(ErrorObject::parse_error(&detail))));
                return;
            }
        };
        if text.trim().is_empty() {
            return;
        }
        let message = match RawJson::parse(&text) {
            Ok(RawJson::Object(obj)) => classify(&obj),
            Ok(RawJson::Array(items)) => return self.batch(items, in_flight, actions),
            Ok(RawJson::Scalar(_)) => {
                Message::Invalid { id: null_id(), error: ErrorObject::invalid_request("expected a JSON object") }
            }
            Err(e) => {
                send(actions, response_bytes(&null_id(), Err(ErrorObject::parse_error(&e.to_string()))));
                return;
            }
        };
        if let Some(response) = self.message(message, in_flight, &mut Vec::new(), None, actions) {
            send(actions, response.get().as_bytes().to_vec());
        }
    }

    fn event(&mut self, event: AgentEvent, _: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        self.notify(event, None, out);
    }

    fn event_into(&mut self, event: AgentEvent, _: &InFlight<Pending>, out: &mut MessageBatch) {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.notify(event, None, &mut scratch);
        for message in scratch.drain(..) {
            out.push(&message);
        }
        self.scratch = scratch;
    }

    fn sequenced_event(&mut self, event: AgentEvent, seq: u64, _: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        self.notify(event, Some(seq), out);
    }

    fn reply(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Vec<u8>>) {
        let mut messages = Vec::new();
        self.respond(pending, result, &mut messages);
        out.extend(messages.into_iter().filter_map(Outgoing::into_bytes));
    }

    fn reply_outgoing(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        self.respond(pending, result, out);
    }

    fn finish(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some((held, seq)) = self.held.take() {
            out.push(notification(&held, seq));
        }
    }
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;
