//! The actor's side of the client requests: the broker of open requests,
//! the approval gate, what the client offers, client-declared tools, and
//! the ops that answer requests or change the approval mode.

use std::sync::Arc;

use super::actor::Agent;
use super::internal::Emitter;
use crate::client::client_tool::ClientTool;
use crate::client::{ApprovalMode, ClientLink, ClientToolSpec};
use crate::error::CoreError;
use crate::op::{Reply, RequestTag, UiResponse};

impl Agent {
    /// The link a run's tools use to reach the client.
    pub(super) fn client_link(&self) -> ClientLink {
        ClientLink {
            broker: self.client.broker.clone(),
            events: Arc::new(Emitter::new(self.internal_tx.clone())),
            capabilities: self.client.capabilities,
            approvals: self.client.approvals.clone(),
        }
    }

    /// Register tools the client runs and make them active (`initialize`, session start).
    pub(super) fn add_client_tools(&mut self, specs: Vec<ClientToolSpec>) -> Result<(), CoreError> {
        for (i, spec) in specs.iter().enumerate() {
            let field = format!("clientTools[{i}].name");
            if spec.name.trim().is_empty() {
                return Err(CoreError::invalid(&field, "a client tool needs a name"));
            }
            if self.tools.contains(&spec.name) && !self.client_tool_names().any(|n| n == spec.name) {
                return Err(CoreError::invalid(&field, format!("\"{}\" is already a tool of the agent", spec.name)));
            }
        }
        for spec in specs {
            let name = spec.name.clone();
            self.tools.register(Arc::new(ClientTool::new(spec, self.client.tool_timeout)));
            if !self.active_tools.contains(&name) {
                self.active_tools.push(name.clone());
            }
            if !self.client_tools.contains(&name) {
                self.client_tools.push(name);
            }
        }
        Ok(())
    }

    fn client_tool_names(&self) -> impl Iterator<Item = &str> {
        self.client_tools.iter().map(String::as_str)
    }

    /// `Op::ClientResponse`: deliver the answer to the waiting request.
    pub(super) async fn client_response(
        &mut self,
        tag: Option<RequestTag>,
        id: String,
        result: Result<crate::client::ClientReply, String>,
    ) {
        let answer = result.map_err(crate::client::ClientFailure::Error);
        let reply = if self.client.broker.resolve(&id, answer) {
            Ok(Reply::Ack)
        } else {
            Err(CoreError::not_found(format!("No request to the client is waiting for this answer: {id}")))
        };
        self.reply(tag, reply).await;
    }

    /// An extension UI answer that answers an approval dialog (seed dialects).
    pub(super) fn approval_dialog_answer(&self, id: Option<&str>, response: &UiResponse) -> bool {
        id.is_some_and(|id| self.client.broker.resolve_dialog(id, response))
    }

    pub(super) async fn set_approval_mode(&mut self, tag: Option<RequestTag>, mode: ApprovalMode) {
        self.client.approvals.set_mode(mode);
        self.reply(tag, Ok(Reply::Ack)).await;
    }

    /// The client is gone: waits for its answers end now.
    pub(super) fn client_gone(&self) {
        self.client.broker.close();
    }
}
