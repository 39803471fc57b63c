//! What pi 1.6.0 defers while a run's `agent_settled` handlers run (a
//! client's `prompt`, an extension's `sendUserMessage` and turn-triggering
//! `sendMessage`), done once `agent_settled` is out.

use super::Agent;
use crate::agent::state::AfterSettled;

impl Agent {
    /// Do the deferred work in arrival order. One that starts a run leaves
    /// the rest waiting until that run is over (pi awaits each deferred
    /// prompt's whole run before the next).
    pub(super) async fn after_settled(&mut self, deferred: Vec<AfterSettled>) {
        let mut deferred = deferred.into_iter();
        while let Some(action) = deferred.next() {
            match action {
                AfterSettled::Op(pending) => self.handle_op(pending).await,
                AfterSettled::UserMessage { extension, params } => {
                    self.send_settled_message(extension, &params, true).await
                }
                AfterSettled::TriggeringMessage { extension, params } => {
                    self.send_settled_message(extension, &params, false).await
                }
            }
            if self.activity.is_running() {
                self.activity.carry_after_settled(deferred.collect());
                return;
            }
        }
    }
}
