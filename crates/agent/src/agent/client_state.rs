//! The client as the actor knows it: the broker of open requests, the
//! approval gate, what the client offers (the ops are in `client_ops.rs`).

use std::sync::Arc;

use crate::client::{Approvals, ClientBroker, ClientCapabilities, ClientSetup};

/// The client as the actor knows it.
pub(crate) struct ClientState {
    pub broker: Arc<ClientBroker>,
    pub approvals: Arc<Approvals>,
    pub capabilities: ClientCapabilities,
    pub tool_timeout: std::time::Duration,
}

impl ClientState {
    pub fn new(setup: &ClientSetup) -> Self {
        ClientState {
            broker: Arc::new(ClientBroker::default()),
            approvals: Arc::new(Approvals::new(setup.approval.clone())),
            capabilities: setup.capabilities,
            tool_timeout: setup.tool_timeout,
        }
    }
}
