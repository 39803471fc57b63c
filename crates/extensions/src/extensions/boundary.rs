//! pi's actionable boundaries, `turn_end` (after each turn's messages are
//! persisted, before the low-level `turn_end` event; the protocol's hook
//! `turn_end_boundary`) and `agent_before_settle`: each handler, in extension
//! load order, sees the draft entries and the continuation proposed so far
//! (and the context preview the host builds from them, with the messages still
//! pending) and may replace either. The extension host validates the drafts
//! by applying them to a copy of the session; the agent appends them and
//! decides.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Extensions;
use crate::message::AgentMessage;

/// What the handlers of one boundary proposed, all extensions chained.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundaryProposal {
    /// Draft entries (`custom`, `custom_message`, `context_edit`, `compaction`), in order.
    pub entries: Vec<Value>,
    /// One more model request is wanted.
    pub continue_run: bool,
}

/// The messages not yet in the conversation when a boundary runs (pi's
/// `pendingMessages`): queued steering and follow-up messages, then the
/// extensions' custom messages held for the turn's end.
#[derive(Debug, Clone, Default)]
pub struct PendingMessages {
    pub queued: Vec<AgentMessage>,
    pub held: Vec<AgentMessage>,
}

impl PendingMessages {
    fn to_json(&self) -> Value {
        json!({"queued": self.queued, "held": self.held})
    }
}

/// The turn a `turn_end` boundary closes.
pub struct TurnEnd<'a> {
    /// Turns before it in this low-level run (pi's `turnIndex`).
    pub turn_index: u32,
    pub message: &'a AgentMessage,
    pub tool_results: &'a [AgentMessage],
}

impl Extensions {
    /// The `agent_before_settle` handlers for a run that ended with
    /// `outcome` (`completed` / `error`); `None` when no extension listens.
    pub async fn before_settle(
        &self,
        outcome: &str,
        pending: &PendingMessages,
        cancel: &CancellationToken,
    ) -> Option<BoundaryProposal> {
        self.boundary("agent_before_settle", json!({"outcome": outcome}), pending, cancel).await
    }

    /// The `turn_end` handlers for `turn`; `None` when no extension listens.
    pub async fn turn_end(
        &self,
        turn: TurnEnd<'_>,
        pending: &PendingMessages,
        cancel: &CancellationToken,
    ) -> Option<BoundaryProposal> {
        let outcome = match turn.message.as_assistant().map(|a| &a.stop_reason) {
            Some(crate::message::StopReason::Error) => "error",
            Some(crate::message::StopReason::Aborted) => "aborted",
            _ => "completed",
        };
        let base = json!({"turnIndex": turn.turn_index, "message": turn.message, "toolResults": turn.tool_results,
            "outcome": outcome});
        self.boundary("turn_end_boundary", base, pending, cancel).await
    }

    /// Chain hook `hook`'s handlers over every extension. Drafts an
    /// extension's host found invalid are dropped with the continuation, as
    /// pi drops a proposal whose preview cannot be built.
    async fn boundary(
        &self,
        hook: &str,
        base: Value,
        pending: &PendingMessages,
        cancel: &CancellationToken,
    ) -> Option<BoundaryProposal> {
        if !self.listens(hook) {
            return None;
        }
        let mut proposal = BoundaryProposal::default();
        let mut valid = true;
        let pending = pending.to_json();
        for ext in self.subscribers(hook) {
            let mut params = base.clone();
            params["entries"] = json!(proposal.entries);
            params["continue"] = json!(proposal.continue_run);
            params["pending"] = pending.clone();
            let Some(result) = self.ask(&ext, hook, params, Some(cancel)).await else { continue };
            if let Some(entries) = result.get("entries").and_then(Value::as_array) {
                proposal.entries = entries.clone();
            }
            if let Some(go_on) = result.get("continue").and_then(Value::as_bool) {
                proposal.continue_run = go_on;
            }
            valid = result.get("valid").and_then(Value::as_bool).unwrap_or(true);
        }
        Some(if valid { proposal } else { BoundaryProposal::default() })
    }
}
