//! The native dialect as a [`Dialect`] of the transport: records become ops
//! (or error responses), events and replies become lines.

use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Op, Reply};
use pi_transport::protocol::{Binding, EncodedReply};
use pi_transport::streamed::StreamedJson;
use pi_transport::{Action, Dialect, InFlight, Outgoing, Record, StreamedMessage};
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
pub struct Native;

fn to_line<T: serde::Serialize>(value: &T) -> Option<Vec<u8>> {
    match serde_json::to_vec(value) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            tracing::error!("cannot serialize an output line: {e}");
            None
        }
    }
}

/// A successful response line built around its data, which is not copied
/// again (`data` is the response's last member): a 100 MB `get_messages`
/// result is held once, not twice.
fn response_around(head: WireResponse, data: Box<RawValue>) -> Option<Vec<u8>> {
    let head = to_line(&head)?;
    let open = head.strip_suffix(b"}")?;
    let mut line = String::from(Box::<str>::from(data)).into_bytes();
    line.splice(0..0, open.iter().copied().chain(*b",\"data\":"));
    line.push(b'}');
    Some(line)
}

/// A successful response line whose data is written as it is serialised
/// (the bytes [`response_around`] would build).
fn response_streamed(head: WireResponse, data: StreamedJson) -> Option<Outgoing> {
    let mut head = to_line(&head)?;
    head.pop_if(|last| *last == b'}')?;
    head.extend_from_slice(b",\"data\":");
    Some(Outgoing::Streamed(StreamedMessage { head, body: data, tail: b"}", escape_line_separators: false }))
}

impl Native {
    fn respond(&mut self, pending: Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        let (id, command) = match pending {
            Pending::Command { id, command } => (id, command),
            Pending::Rejection(line) => {
                out.push(Outgoing::Bytes(line));
                return;
            }
        };
        let response = match result.map(|reply| command.encode_streaming(reply)) {
            Ok(Ok(EncodedReply::Absent)) => WireResponse::ok(id, command.name, None),
            Ok(Ok(EncodedReply::Value(data))) => {
                out.extend(response_around(WireResponse::ok(id, command.name, None), data).map(Outgoing::Bytes));
                return;
            }
            Ok(Ok(EncodedReply::Streamed(data))) => {
                out.extend(response_streamed(WireResponse::ok(id, command.name, None), data));
                return;
            }
            Ok(Err(e)) => {
                tracing::error!("{e}");
                WireResponse::err(id, Some(command.name), e.to_string())
            }
            Err(e) => WireResponse::err(id, Some(command.name), e.message),
        };
        out.extend(to_line(&response).map(Outgoing::Bytes));
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
        let bash_id = |tag: Option<u64>| match in_flight.get(tag?) {
            Some(Pending::Command { id, .. }) => id.clone(),
            _ => None,
        };
        if let Some(line) = map_event(event, bash_id).and_then(|wire| to_line(&wire)) {
            out.push(line);
        }
    }

    fn sequenced_event(&mut self, event: AgentEvent, seq: u64, in_flight: &InFlight<Pending>, out: &mut Vec<Vec<u8>>) {
        let first = out.len();
        self.event(event, in_flight, out);
        for line in &mut out[first..] {
            *line = pi_transport::seq::insert_seq(std::mem::take(line), 0, seq);
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
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;
