//! What pi 1.6.0 defers while a run's `agent_settled` handlers run (a
//! client's `prompt`, an extension's `sendUserMessage` and turn-triggering
//! `sendMessage`), done once `agent_settled` is out.

use super::Agent;
use crate::agent::state::AfterSettled;

impl Agent {
    /// Do the deferred work in arrival order. One the `input` hooks are
    /// asked about leaves the rest waiting until they decided, one that
    /// starts a run until that run is over (pi awaits each deferred
    /// prompt's decision and whole run before the next).
    pub(super) async fn after_settled(&mut self, deferred: Vec<AfterSettled>) {
        let mut deferred = deferred.into_iter();
        while let Some(action) = deferred.next() {
            let asked_before = self.ext.last_input_asked();
            match action {
                AfterSettled::Op(pending) => self.handle_op(pending).await,
                AfterSettled::UserMessage { extension, params } => {
                    self.send_settled_message(extension, &params, true).await
                }
                AfterSettled::TriggeringMessage { extension, params } => {
                    self.send_settled_message(extension, &params, false).await
                }
            }
            let asked = self.ext.last_input_asked();
            if asked != asked_before {
                self.activity.carry_until_decided(deferred.collect(), asked);
                return;
            }
            if self.activity.is_running() {
                self.activity.carry_after_settled(deferred.collect());
                return;
            }
        }
    }

    /// The `input` hooks' asking number `decision` is decided (and what it
    /// decided done): the deferred work that waited for it goes on, unless
    /// the input started a run (then it waits for that run's end).
    pub(super) async fn input_decided(&mut self, decision: u64) {
        if self.activity.decided(decision) && !self.activity.is_running() {
            let carried = self.activity.take_carried();
            Box::pin(self.after_settled(carried)).await;
        }
    }
}
