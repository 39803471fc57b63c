//! Serving the native dialect on a byte stream pair: read records, submit ops,
//! write events and responses through the single writer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use pi_core::agent::{AgentHandle, Output};
use pi_core::op::{Op, RequestTag};
use serde_json::value::RawValue;
use tokio::io::AsyncBufRead;
use tokio::sync::mpsc;

use crate::command::{Incoming, decode_record};
use crate::framing::{Record, RecordReader};
use crate::map::{map_event, map_reply};
pub use crate::serving::ServeEnd;
use crate::serving::{finish_serving, read_input};
use crate::wire::WireResponse;
use crate::writer::{LineSender, spawn_writer};

/// What a pending request needs for its response.
struct PendingRequest {
    id: Option<Box<RawValue>>,
    command: String,
}

type PendingMap = Arc<Mutex<HashMap<RequestTag, PendingRequest>>>;

/// Serve until input ends (then finish accepted work) or `stop` resolves
/// (then abort). `first` is a record already read (dialect detection).
pub async fn serve<R, W, S>(
    mut records: RecordReader<R>,
    first: Option<Record>,
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
    let pending: PendingMap = Arc::new(Mutex::new(HashMap::new()));
    let mut forwarder = tokio::spawn(forward_outputs(outputs, lines.clone(), pending.clone()));
    let mut next_tag: RequestTag = 1;

    if let Some(record) = first {
        handle_record(record, &agent, &lines, &pending, &mut next_tag).await;
    }
    let input = read_input(
        &agent,
        stop,
        &mut forwarder,
        async || records.next_record().await,
        async |record| handle_record(record, &agent, &lines, &pending, &mut next_tag).await,
    )
    .await;
    drop(agent);
    drop(lines);
    finish_serving(input, forwarder, writer).await
}

async fn handle_record(
    record: Record,
    agent: &AgentHandle,
    lines: &LineSender,
    pending: &PendingMap,
    next_tag: &mut RequestTag,
) {
    match decode_record(record) {
        Incoming::Command { id, command, op } => {
            let tag = *next_tag;
            *next_tag += 1;
            if let Ok(mut map) = pending.lock() {
                map.insert(tag, PendingRequest { id, command });
            }
            if agent.submit(Some(tag), op).await.is_err() {
                let request = pending.lock().ok().and_then(|mut m| m.remove(&tag));
                if let Some(request) = request {
                    let response = WireResponse::err(request.id, Some(&request.command), "The agent has shut down");
                    write_json(lines, &response).await;
                }
            }
        }
        // pi matches answers on `id` only: one without an id is ignored.
        Incoming::UiResponse { id: None, .. } => {}
        Incoming::UiResponse { id, response } => {
            let _ = agent.submit(None, Op::ExtensionUiResponse { id, response }).await;
        }
        Incoming::Reject { id, command, error } => {
            write_json(lines, &WireResponse::err(id, command.as_deref(), error)).await;
        }
    }
}

async fn write_json<T: serde::Serialize>(lines: &LineSender, value: &T) -> bool {
    match serde_json::to_vec(value) {
        Ok(bytes) => lines.send(bytes).await,
        Err(e) => {
            tracing::error!("cannot serialize an output line: {e}");
            true
        }
    }
}

/// Forward core output to the writer; false if the writer went away.
async fn forward_outputs(mut outputs: mpsc::Receiver<Output>, lines: LineSender, pending: PendingMap) -> bool {
    while let Some(output) = outputs.recv().await {
        let ok = match output {
            Output::Event(event) => {
                let bash_id = |tag: Option<RequestTag>| {
                    let tag = tag?;
                    pending.lock().ok()?.get(&tag).and_then(|p| p.id.clone())
                };
                match map_event(event, bash_id) {
                    Some(wire) => write_json(&lines, &wire).await,
                    None => true,
                }
            }
            Output::Reply { tag, result } => {
                let Some(request) = pending.lock().ok().and_then(|mut m| m.remove(&tag)) else {
                    continue;
                };
                let response = match result {
                    Ok(reply) => WireResponse::ok(request.id, &request.command, map_reply(reply)),
                    Err(e) => WireResponse::err(request.id, Some(&request.command), e.message),
                };
                write_json(&lines, &response).await
            }
        };
        if !ok {
            return false;
        }
    }
    true
}
