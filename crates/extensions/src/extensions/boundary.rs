//! pi's actionable settle boundary, `agent_before_settle`: each handler, in
//! extension load order, sees the draft entries and the continuation
//! proposed so far (and the context preview the host builds from them) and
//! may replace either. The extension host validates the drafts by applying
//! them to a copy of the session; the agent appends them and decides.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Extensions;

/// What the `agent_before_settle` handlers proposed, all extensions chained.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundaryProposal {
    /// Draft entries (`custom`, `custom_message`, `context_edit`, `compaction`), in order.
    pub entries: Vec<Value>,
    /// One more model request is wanted.
    pub continue_run: bool,
}

impl Extensions {
    /// The `agent_before_settle` handlers for a run that ended with
    /// `outcome` (`completed` / `error`); `None` when no extension listens.
    /// Drafts an extension's host found invalid are dropped with the
    /// continuation, as pi drops a proposal whose preview cannot be built.
    pub async fn before_settle(&self, outcome: &str, cancel: &CancellationToken) -> Option<BoundaryProposal> {
        if !self.listens("agent_before_settle") {
            return None;
        }
        let mut proposal = BoundaryProposal::default();
        let mut valid = true;
        for ext in self.subscribers("agent_before_settle") {
            let params = json!({"outcome": outcome, "entries": proposal.entries, "continue": proposal.continue_run});
            let Some(result) = self.ask(&ext, "agent_before_settle", params, Some(cancel)).await else { continue };
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
