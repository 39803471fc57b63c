//! The requests awaiting the client's answer: each has an id, the kind it
//! was (to read an extension UI answer as an approval), and where its answer goes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{ClientFailure, ClientReply, ClientRequest, ClientRequestKind, PermissionAnswer};
use crate::event::{AgentEvent, EventSink};
use crate::op::UiResponse;

/// Labels of the approval dialog in the seed dialects (a `select`, as seed 000's example).
pub const ALLOW: &str = "Allow";
pub const BLOCK: &str = "Block";
pub const ALWAYS_ALLOW: &str = "Always allow";
pub const ALWAYS_BLOCK: &str = "Always block";

struct Waiting {
    permission: bool,
    tx: oneshot::Sender<Result<ClientReply, ClientFailure>>,
}

/// Open requests to the client, by id.
#[derive(Default)]
pub struct ClientBroker {
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Set once the client is gone: new requests fail at once.
    closed: AtomicBool,
}

impl ClientBroker {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Emit the request and wait for its answer. `cancel` (abort) and
    /// `timeout` end the wait; the front end then hears `ClientRequestEnded`.
    pub async fn request(
        &self,
        events: &dyn EventSink,
        kind: ClientRequestKind,
        cancel: &CancellationToken,
        timeout: Option<Duration>,
    ) -> Result<ClientReply, ClientFailure> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(ClientFailure::Gone);
        }
        if cancel.is_cancelled() {
            return Err(ClientFailure::Cancelled);
        }
        // A client tool is answered by its tool call id (JSON-RPC `toolResult`).
        let id = match &kind {
            ClientRequestKind::ToolCall { tool_call_id, .. } if !self.lock().contains_key(tool_call_id) => {
                tool_call_id.clone()
            }
            _ => uuid::Uuid::new_v4().to_string(),
        };
        let (tx, rx) = oneshot::channel();
        let permission = matches!(kind, ClientRequestKind::Permission(_));
        self.lock().insert(id.clone(), Waiting { permission, tx });
        events.emit(AgentEvent::ClientRequest(Box::new(ClientRequest { id: id.clone(), kind }))).await;
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let ended = tokio::select! {
            answer = rx => return answer.unwrap_or(Err(ClientFailure::Gone)),
            _ = cancel.cancelled() => ClientFailure::Cancelled,
            _ = deadline => ClientFailure::TimedOut(timeout.map_or(0, |t| t.as_millis() as u64)),
        };
        if self.lock().remove(&id).is_some() {
            events.emit(AgentEvent::ClientRequestEnded { id }).await;
        }
        Err(ended)
    }

    /// The ids of the requests still waiting for the client's answer.
    pub fn ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Deliver the client's answer; false when no request has this id.
    pub fn resolve(&self, id: &str, answer: Result<ClientReply, ClientFailure>) -> bool {
        match self.lock().remove(id) {
            Some(waiting) => {
                let _ = waiting.tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// An extension UI answer to an approval dialog (seed dialects); false
    /// when `id` names no approval request (it is then an extension's dialog).
    pub fn resolve_dialog(&self, id: &str, response: &UiResponse) -> bool {
        if !self.lock().get(id).is_some_and(|w| w.permission) {
            return false;
        }
        let answer = match response {
            UiResponse::Value(Value::String(choice)) => match choice.as_str() {
                ALLOW => PermissionAnswer::AllowOnce,
                ALWAYS_ALLOW => PermissionAnswer::AllowAlways,
                ALWAYS_BLOCK => PermissionAnswer::RejectAlways,
                _ => PermissionAnswer::RejectOnce,
            },
            UiResponse::Confirmed(true) => PermissionAnswer::AllowOnce,
            UiResponse::Confirmed(false) | UiResponse::Value(_) => PermissionAnswer::RejectOnce,
            UiResponse::Cancelled => PermissionAnswer::Cancelled,
        };
        self.resolve(id, Ok(ClientReply::Permission(answer)))
    }

    /// The client is gone: every open request, and every later one, fails.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let all: Vec<Waiting> = self.lock().drain().map(|(_, w)| w).collect();
        for waiting in all {
            let _ = waiting.tx.send(Err(ClientFailure::Gone));
        }
    }

    /// Number of open requests.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
