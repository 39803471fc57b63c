//! The client as the actor knows it ([`ClientState`]): the broker of open
//! requests to the client, the approval gate, what the client offers (the
//! ops that use it are in `client_ops.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::client::{
    ApprovalMode, Approvals, ClientBroker, ClientCapabilities, ClientFailure, ClientLink, ClientReply, ClientSetup,
};
use crate::event::EventSink;
use crate::op::UiResponse;

/// The client as the actor knows it.
pub(super) struct ClientState {
    broker: Arc<ClientBroker>,
    approvals: Arc<Approvals>,
    capabilities: ClientCapabilities,
    /// How long a client tool's result is waited for.
    tool_timeout: Duration,
}

impl ClientState {
    pub(super) fn new(setup: &ClientSetup) -> Self {
        ClientState {
            broker: Arc::new(ClientBroker::default()),
            approvals: Arc::new(Approvals::new(setup.approval.clone())),
            capabilities: setup.capabilities,
            tool_timeout: setup.tool_timeout,
        }
    }

    /// The link a run's tools use to reach the client (their events go to `events`).
    pub(super) fn link(&self, events: Arc<dyn EventSink>) -> ClientLink {
        ClientLink {
            broker: self.broker.clone(),
            events,
            capabilities: self.capabilities,
            approvals: self.approvals.clone(),
        }
    }

    /// How long a client tool's result is waited for.
    pub(super) fn tool_timeout(&self) -> Duration {
        self.tool_timeout
    }

    /// Ids of the requests waiting for the client's answer.
    pub(super) fn pending_ids(&self) -> Vec<String> {
        self.broker.ids()
    }

    /// Deliver the client's answer to request `id`: false when none waits for it.
    pub(super) fn answer(&self, id: &str, answer: Result<ClientReply, ClientFailure>) -> bool {
        self.broker.resolve(id, answer)
    }

    /// An extension UI answer that answers an approval dialog: true when it did.
    pub(super) fn answer_dialog(&self, id: &str, response: &UiResponse) -> bool {
        self.broker.resolve_dialog(id, response)
    }

    pub(super) fn set_approval_mode(&self, mode: ApprovalMode) {
        self.approvals.set_mode(mode);
    }

    /// The client is gone: requests waiting for it end now.
    pub(super) fn close(&self) {
        self.broker.close();
    }
}
