//! The native dialect as a [`Dialect`] of the transport: records become ops
//! (or error responses), events and replies become lines.

use pi_core::error::CoreError;
use pi_core::event::{AgentEvent, AssistantStreamEvent};
use pi_core::op::{Op, Reply};
use pi_transport::protocol::{Binding, Written};
use pi_transport::{Action, Dialect, InFlight, MessageBatch, Outgoing, Record, StreamedMessage};
use serde_json::value::RawValue;

use crate::command::{Incoming, decode_record};
use crate::map::map_event;
use crate::wire::WireResponse;

/// What the response to a record needs.
#[derive(Debug)]
pub enum Pending {
    /// A command: its response echoes `id` and names the command.
    Command { id: Option<Box<RawValue>>, command: &'static Binding },
    /// The error response of a bad record, written when its `Barrier` is
    /// answered: after the responses to earlier commands that answer at once.
    Rejection(Vec<u8>),
}

/// The native dialect (`pi --mode rpc`).
#[derive(Debug, Default)]
pub struct Native {
    head: DeltaHead,
}

/// The head of the delta lines being written (every member before the
/// delta's text: the `usage`, the event's kind, its `contentIndex`),
/// written once: a message's deltas share one `Arc` of the usage until the
/// provider reports new figures, and one kind and index for a whole block,
/// so a delta's line is one copy of the head, then its text.
#[derive(Debug, Default)]
struct DeltaHead {
    /// What the head was written for: the usage, the kind, the index.
    key: Option<(std::sync::Arc<pi_core::message::Usage>, &'static str, usize)>,
    bytes: Vec<u8>,
}

impl DeltaHead {
    fn of(
        &mut self,
        usage: &std::sync::Arc<pi_core::message::Usage>,
        kind: &'static str,
        content_index: usize,
    ) -> Option<&[u8]> {
        let fresh = !matches!(&self.key, Some((held, k, i))
            if std::sync::Arc::ptr_eq(held, usage) && *k == kind && *i == content_index);
        if fresh {
            self.key = None;
            self.bytes.clear();
            self.bytes.extend_from_slice(br#"{"type":"message_update","usage":"#);
            serde_json::to_writer(&mut self.bytes, &**usage).ok()?;
            self.bytes.extend_from_slice(br#","assistantMessageEvent":{"type":""#);
            self.bytes.extend_from_slice(kind.as_bytes());
            self.bytes.extend_from_slice(br#"","contentIndex":"#);
            serde_json::to_writer(&mut self.bytes, &content_index).ok()?;
            self.bytes.extend_from_slice(br#","delta":"#);
            self.key = Some((usage.clone(), kind, content_index));
        }
        Some(&self.bytes)
    }
}

fn to_line<T: serde::Serialize>(value: &T) -> Option<Vec<u8>> {
    match serde_json::to_vec(value) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            tracing::error!("cannot serialize an output line: {e}");
            None
        }
    }
}

/// Append the members of a success response before its `data`, as
/// [`WireResponse::ok`] writes them, with no closing brace: the id as the
/// client wrote it (serde_json writes a raw value as it is), then the
/// constants and the command's name (the table's names need no escaping:
/// a test checks every one).
fn write_success_head(line: &mut Vec<u8>, id: Option<&RawValue>, command: &str) {
    match id {
        Some(id) => {
            line.extend_from_slice(b"{\"id\":");
            line.extend_from_slice(id.get().as_bytes());
            line.extend_from_slice(b",\"type\":\"response\",\"command\":\"");
        }
        None => line.extend_from_slice(b"{\"type\":\"response\",\"command\":\""),
    }
    line.extend_from_slice(command.as_bytes());
    line.extend_from_slice(b"\",\"success\":true");
}

/// Room for a typical response line (`get_state`'s is about 600 bytes).
const LINE_CAPACITY: usize = 1024;

/// What [`Native::write_response`] did.
enum Response {
    /// The response line is in the buffer.
    Written,
    /// A big result: its line is written as it is serialised (nothing is left in the buffer).
    Streamed(StreamedMessage),
    /// No line (it could not be serialised: logged).
    Nothing,
}

impl Native {
    /// Append the response line to `pending` to `line` (the bytes
    /// [`WireResponse`] gives, with the data written straight in).
    fn write_response(pending: Pending, result: Result<Reply, CoreError>, line: &mut Vec<u8>) -> Response {
        let (id, command) = match pending {
            Pending::Command { id, command } => (id, command),
            Pending::Rejection(bytes) => {
                line.extend_from_slice(&bytes);
                return Response::Written;
            }
        };
        let reply = match result {
            Ok(reply) => reply,
            Err(e) => return write_line(line, &WireResponse::err(id, Some(command.name), e.message)),
        };
        let start = line.len();
        write_success_head(line, id.as_deref(), command.name);
        // `{…,"success":true`: the data is written straight in, then the closing brace.
        let open = line.len();
        line.extend_from_slice(b",\"data\":");
        match command.encode_into(reply, line) {
            Ok(Written::Absent) => {
                line.truncate(open);
                line.push(b'}');
                Response::Written
            }
            Ok(Written::Inline) => {
                line.push(b'}');
                Response::Written
            }
            Ok(Written::Streamed(body)) => {
                let head = line.split_off(start);
                Response::Streamed(StreamedMessage { head, body, tail: b"}", escape_line_separators: false })
            }
            Err(e) => {
                tracing::error!("{e}");
                line.truncate(start);
                write_line(line, &WireResponse::err(id, Some(command.name), e.to_string()))
            }
        }
    }

    fn respond(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        let mut line = Vec::with_capacity(LINE_CAPACITY);
        match Self::write_response(pending, result, &mut line) {
            Response::Written => out.push(Outgoing::Bytes(line)),
            Response::Streamed(message) => out.push(Outgoing::Streamed(message)),
            Response::Nothing => {}
        }
    }
}

/// Append `value`'s JSON to `line` (left as it was, and logged, when it cannot be serialised).
fn write_line<T: serde::Serialize>(line: &mut Vec<u8>, value: &T) -> Response {
    let start = line.len();
    match serde_json::to_writer(&mut *line, value) {
        Ok(()) => Response::Written,
        Err(e) => {
            tracing::error!("cannot serialize an output line: {e}");
            line.truncate(start);
            Response::Nothing
        }
    }
}

/// Write the line of a streamed delta (`text_delta`, `thinking_delta`,
/// `toolcall_delta`: the events of nearly every line of a reply) straight
/// from the event into `line`: the bytes [`map_event`] and `to_line` give.
/// `None` (nothing written) for any other event. With `seq` (`pi serve`),
/// the line ends with its `"seq"` member, as [`pi_transport::seq::insert_seq`]
/// adds it, written in the same pass.
fn write_delta(event: &AgentEvent, head: &mut DeltaHead, seq: Option<u64>, line: &mut Vec<u8>) -> Option<()> {
    let AgentEvent::MessageUpdate { event, usage } = event else { return None };
    let (kind, content_index, delta) = match event {
        AssistantStreamEvent::TextDelta { content_index, delta } => ("text_delta", content_index, delta),
        AssistantStreamEvent::ThinkingDelta { content_index, delta } => ("thinking_delta", content_index, delta),
        AssistantStreamEvent::ToolCallDelta { content_index, delta } => ("toolcall_delta", content_index, delta),
        _ => return None,
    };
    let head = head.of(usage, kind, *content_index)?;
    let start = line.len();
    // The head, the text (quoted), two braces and `"seq"`.
    line.reserve(head.len() + delta.len() + 36);
    line.extend_from_slice(head);
    let written = write_str(line, delta)
        .and_then(|()| {
            line.push(b'}');
            if let Some(seq) = seq {
                line.extend_from_slice(br#","seq":"#);
                serde_json::to_writer(&mut *line, &seq)?;
            }
            Ok(())
        })
        .is_ok();
    if !written {
        line.truncate(start);
        return None;
    }
    line.push(b'}');
    Some(())
}

/// `text` as the JSON string `serde_json` writes: one copy when it has
/// nothing to escape (no `"`, `\` nor control character: the usual delta).
fn write_str(line: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    // Without an early exit, so that the check runs over many bytes at once.
    let plain = !text.bytes().fold(false, |escape, b| escape | (b < 0x20) | (b == b'"') | (b == b'\\'));
    if !plain {
        return serde_json::to_writer(line, text);
    }
    line.reserve(text.len() + 2);
    line.push(b'"');
    line.extend_from_slice(text.as_bytes());
    line.push(b'"');
    Ok(())
}

/// The line of a streamed delta, as [`write_delta`] writes it.
fn delta_line(event: &AgentEvent, head: &mut DeltaHead, seq: Option<u64>) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    write_delta(event, head, seq, &mut line).map(|()| line)
}

impl Native {
    /// The bash request's id a `bash` event echoes.
    fn bash_id(in_flight: &InFlight<Pending>, tag: Option<u64>) -> Option<Box<RawValue>> {
        match in_flight.get(tag?) {
            Some(Pending::Command { id, .. }) => id.clone(),
            _ => None,
        }
    }
}

impl Dialect for Native {
    type Pending = Pending;

    fn decode(&mut self, record: Record, _: &InFlight<Pending>, actions: &mut Vec<Action<Pending>>) {
        match decode_record(record) {
            Incoming::Command { id, command, op } => {
                actions.push(Action::Submit { op, pending: Some(Pending::Command { id, command }) });
            }
            // pi matches answers on `id` only: one without an id is ignored.
            Incoming::UiResponse { id: None, .. } => {}
            Incoming::UiResponse { id, response } => {
                actions.push(Action::Submit { op: Op::ExtensionUiResponse { id, response }, pending: None });
            }
            Incoming::Reject { id, command, error } => {
                if let Some(line) = to_line(&WireResponse::err(id, command.as_deref(), error)) {
                    actions.push(Action::Submit { op: Op::Barrier, pending: Some(Pending::Rejection(line)) });
                }
            }
        }
    }

    fn event(&mut self, event: AgentEvent, in_flight: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        if let Some(line) = delta_line(&event, &mut self.head, None) {
            out.push(line);
            return;
        }
        if let Some(line) = map_event(event, |tag| Self::bash_id(in_flight, tag)).and_then(|wire| to_line(&wire)) {
            out.push(line);
        }
    }

    /// The lines [`Dialect::event`] gives, written straight into the batch.
    fn event_into(&mut self, event: AgentEvent, in_flight: &InFlight<Pending>, out: &mut MessageBatch) {
        let usage = &mut self.head;
        let mut delta = false;
        out.write_with(|line| {
            delta = write_delta(&event, usage, None, line).is_some();
            delta
        });
        if delta {
            return;
        }
        let Some(wire) = map_event(event, |tag| Self::bash_id(in_flight, tag)) else { return };
        out.write_with(|line| match serde_json::to_writer(line, &wire) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("cannot serialize an output line: {e}");
                false
            }
        });
    }

    fn sequenced_event(&mut self, event: AgentEvent, seq: u64, in_flight: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        if let Some(line) = delta_line(&event, &mut self.head, Some(seq)) {
            out.push(line);
            return;
        }
        let first = out.len();
        self.event(event, in_flight, out);
        for line in &mut out[first..] {
            *line = pi_transport::seq::insert_seq(std::mem::take(line), 0, seq);
        }
    }

    /// A delta's line is written from the shared event (with its `seq`);
    /// any other event is mapped from a copy.
    fn shared_event(&mut self, event: &AgentEvent, seq: u64, in_flight: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        match delta_line(event, &mut self.head, Some(seq)) {
            Some(line) => out.push(line),
            None => self.sequenced_event(event.clone(), seq, in_flight, out),
        }
    }

    fn reply(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Vec<u8>>) {
        let mut messages = Vec::new();
        self.respond(pending, result, &mut messages);
        out.extend(messages.into_iter().filter_map(Outgoing::into_bytes));
    }

    fn reply_outgoing(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        self.respond(pending, result, out);
    }

    /// The response line written straight into the batch's buffer (a big
    /// result, streamed, goes to `rest`).
    fn reply_into(
        &mut self,
        pending: Pending,
        result: Result<Reply, CoreError>,
        batch: &mut MessageBatch,
        rest: &mut Vec<Outgoing>,
    ) {
        let mut streamed = None;
        batch.write_with(|line| match Self::write_response(pending, result, line) {
            Response::Written => true,
            Response::Streamed(message) => {
                streamed = Some(message);
                false
            }
            Response::Nothing => false,
        });
        rest.extend(streamed.map(Outgoing::Streamed));
    }
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;
