//! The run's side of pi's actionable boundaries. `turn_end`: after each
//! turn's assistant message and tool results are in the session, before the
//! low-level `turn_end` event; a continuation there makes one context-only
//! model request when nothing else (tool results, steering, a follow-up)
//! makes one. `agent_before_settle`: the last point where extensions may act
//! before a run settles, after the last `agent_end` (no retry, compaction
//! retry or queued message left); a continuation starts one more low-level
//! run. At both, the handlers propose draft entries and one continuation, and
//! the actor appends the drafts. An aborted run skips `agent_before_settle`.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::internal::{Emitter, Internal};
use crate::event::AgentEvent;
use crate::extensions::Extensions;
use crate::extensions::boundary::{BoundaryProposal, PendingMessages, TurnEnd};
use crate::message::{AgentMessage, StopReason};

/// What the `agent_before_settle` boundary decided.
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

/// The messages not yet in the conversation; once the actor answers, it has
/// handled every event sent so far (extensions have had them, the session
/// holds the turn's messages).
async fn pending(emitter: &Emitter) -> PendingMessages {
    let (reply, answer) = oneshot::channel();
    emitter.send(Internal::BoundaryPending { reply }).await;
    answer.await.unwrap_or_default()
}

/// Append the proposal's drafts; whether a continuation can then be taken.
async fn commit(emitter: &Emitter, event: &'static str, proposal: &BoundaryProposal) -> bool {
    let (reply, answer) = oneshot::channel();
    emitter.send(Internal::CommitBoundary { event, entries: proposal.entries.clone(), reply }).await;
    answer.await.unwrap_or(false)
}

/// pi's report of a continuation the conversation cannot take.
async fn report_no_context(emitter: &Emitter, event: &str) {
    let error = format!("{event} requested continuation without runnable model context");
    let event =
        AgentEvent::ExtensionError { extension_path: "<boundary>".to_string(), event: event.to_string(), error };
    emitter.emit(event).await;
}

/// Ask the `turn_end` handlers about `turn`, append what they proposed;
/// whether they asked (validly) for one more model request. A turn that
/// ended in an error or abort is still shown to them (pi's `outcome`), with
/// a signal of its own, and its continuation is not taken.
pub(crate) async fn turn_end(
    emitter: &Emitter,
    extensions: &Extensions,
    cancel: &CancellationToken,
    turn: TurnEnd<'_>,
) -> bool {
    if !extensions.listens("turn_end_boundary") {
        return false;
    }
    let final_turn =
        turn.message.as_assistant().is_none_or(|a| matches!(a.stop_reason, StopReason::Error | StopReason::Aborted));
    let own_signal = CancellationToken::new();
    let signal = if final_turn { &own_signal } else { cancel };
    let pending = pending(emitter).await;
    let Some(proposal) = extensions.turn_end(turn, &pending, signal).await else { return false };
    let can_continue = commit(emitter, "turn_end", &proposal).await;
    if !proposal.continue_run || final_turn || cancel.is_cancelled() {
        return false;
    }
    if !can_continue {
        report_no_context(emitter, "turn_end").await;
        return false;
    }
    true
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
    let pending = pending(emitter).await;
    let Some(proposal) = extensions.before_settle(outcome(new_messages), &pending, cancel).await else {
        return Boundary::Settle;
    };
    let can_continue = commit(emitter, "agent_before_settle", &proposal).await;
    if cancel.is_cancelled() {
        return Boundary::Aborted;
    }
    if !proposal.continue_run {
        return Boundary::Settle;
    }
    if !can_continue {
        report_no_context(emitter, "agent_before_settle").await;
        return Boundary::Settle;
    }
    Boundary::Continue
}
