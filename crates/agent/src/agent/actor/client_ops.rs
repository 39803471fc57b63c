//! The actor's side of the client requests: the broker of open requests,
//! the approval gate, what the client offers, client-declared tools, and
//! the ops that answer requests or change the approval mode.

use std::sync::Arc;

use super::Agent;
use crate::client::{ApprovalMode, ClientLink, ClientToolSpec};
use crate::error::CoreError;
use crate::op::{Reply, RequestTag, UiResponse};

impl Agent {
    /// The link a run's tools use to reach the client.
    pub(super) fn client_link(&self) -> ClientLink {
        self.client.link(Arc::new(self.channels.emitter()))
    }

    /// Register tools the client runs and make them active (`initialize`, session start).
    pub(super) fn add_client_tools(&mut self, specs: Vec<ClientToolSpec>) -> Result<(), CoreError> {
        self.toolbox.add_client_tools(specs, self.client.tool_timeout())
    }

    /// `Op::ClientResponse`: deliver the answer to the waiting request.
    pub(super) async fn client_response(
        &mut self,
        tag: Option<RequestTag>,
        id: String,
        result: Result<crate::client::ClientReply, String>,
    ) {
        let answer = result.map_err(crate::client::ClientFailure::Error);
        let reply = if self.client.answer(&id, answer) {
            Ok(Reply::Ack)
        } else {
            Err(CoreError::not_found(format!("No request to the client is waiting for this answer: {id}")))
        };
        self.reply(tag, reply).await;
    }

    /// An extension UI answer that answers an approval dialog (seed dialects).
    pub(super) fn approval_dialog_answer(&self, id: Option<&str>, response: &UiResponse) -> bool {
        id.is_some_and(|id| self.client.answer_dialog(id, response))
    }

    pub(super) async fn set_approval_mode(&mut self, tag: Option<RequestTag>, mode: ApprovalMode) {
        self.client.set_approval_mode(mode);
        self.reply(tag, Ok(Reply::Ack)).await;
    }

    /// The client is gone: waits for its answers end now.
    pub(super) fn client_gone(&self) {
        self.client.close();
    }
}
