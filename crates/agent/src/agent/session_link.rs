//! The session link of a run's tools ([`SessionLink`]): a tool reads the
//! `custom` entries of the current branch and appends its own through the
//! actor, which owns the session. codemode keeps its `store()` values this
//! way, as pi 1.6.0's codemode extension does through `pi.appendEntry()`.

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::internal::{Emitter, Internal};
use crate::tools::SessionLink;

/// A tool's question to the actor about the session.
#[derive(Debug)]
pub(crate) enum SessionRequest {
    /// The `data` of the branch's `custom` entries of one type, root first.
    BranchCustom { custom_type: String, reply: oneshot::Sender<Vec<Value>> },
    /// Append a `custom` entry, as an extension's `pi.appendEntry()`.
    AppendCustom { custom_type: String, data: Value, reply: oneshot::Sender<Result<String, String>> },
}

/// [`SessionLink`] through the actor's channel.
pub(crate) struct ActorSessionLink {
    emitter: Emitter,
}

impl ActorSessionLink {
    pub(crate) fn new(emitter: Emitter) -> ActorSessionLink {
        ActorSessionLink { emitter }
    }
}

#[async_trait]
impl SessionLink for ActorSessionLink {
    async fn branch_custom_data(&self, custom_type: &str) -> Vec<Value> {
        let (reply, answer) = oneshot::channel();
        let request = SessionRequest::BranchCustom { custom_type: custom_type.to_string(), reply };
        self.emitter.send(Internal::Session(Box::new(request))).await;
        answer.await.unwrap_or_default()
    }

    async fn append_custom(&self, custom_type: &str, data: Value) -> Result<String, String> {
        let (reply, answer) = oneshot::channel();
        let request = SessionRequest::AppendCustom { custom_type: custom_type.to_string(), data, reply };
        self.emitter.send(Internal::Session(Box::new(request))).await;
        answer.await.map_err(|_| "the agent is gone".to_string())?
    }
}
