//! The run's side of pi's `agent_before_settle` boundary, the last point
//! where extensions may act before a run settles: after the last `agent_end`
//! (no retry, compaction retry or queued message left), the handlers propose
//! draft entries and one continuation; the actor appends the drafts, and a
//! continuation starts one more low-level run when the conversation can take
//! a model request. An aborted run skips the boundary.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::internal::{Emitter, Internal};
use crate::event::AgentEvent;
use crate::extensions::Extensions;
use crate::message::{AgentMessage, StopReason};

/// What the boundary decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Boundary {
    /// One more low-level run, from the conversation as it is.
    Continue,
    /// The run settles.
    Settle,
    /// The run was aborted while the handlers ran: it settles as aborted.
    Aborted,
}

/// pi's `outcome` of the run's last answer.
fn outcome(new_messages: &[AgentMessage]) -> &'static str {
    match new_messages.iter().rev().find_map(AgentMessage::as_assistant).map(|a| &a.stop_reason) {
        Some(StopReason::Error) => "error",
        Some(StopReason::Aborted) => "aborted",
        _ => "completed",
    }
}

/// Ask the `agent_before_settle` handlers, append what they proposed, and decide.
pub(crate) async fn before_settle(
    emitter: &Emitter,
    extensions: &Extensions,
    cancel: &CancellationToken,
    new_messages: &[AgentMessage],
) -> Boundary {
    if cancel.is_cancelled() || !extensions.listens("agent_before_settle") {
        return Boundary::Settle;
    }
    // The actor has handled every event sent so far (extensions have had `agent_end`).
    let (reply, answer) = oneshot::channel();
    emitter.send(Internal::Context { reply }).await;
    let _ = answer.await;
    let Some(proposal) = extensions.before_settle(outcome(new_messages), cancel).await else {
        return Boundary::Settle;
    };
    let (reply, answer) = oneshot::channel();
    emitter.send(Internal::CommitBoundary { entries: proposal.entries, reply }).await;
    let can_continue = answer.await.unwrap_or(false);
    if cancel.is_cancelled() {
        return Boundary::Aborted;
    }
    if !proposal.continue_run {
        return Boundary::Settle;
    }
    if !can_continue {
        let error = "agent_before_settle requested continuation without runnable model context";
        let event = AgentEvent::ExtensionError {
            extension_path: "<boundary>".to_string(),
            event: "agent_before_settle".to_string(),
            error: error.to_string(),
        };
        emitter.emit(event).await;
        return Boundary::Settle;
    }
    Boundary::Continue
}
