//! The actor's side of pi's actionable boundaries (`turn_end`,
//! `agent_before_settle`): the messages still pending for the handlers'
//! preview, and the drafts they proposed, appended in order, each announced
//! with `entry_appended`, the conversation rebuilt from the record.

use serde_json::Value;

use super::Agent;
use crate::event::AgentEvent;
use crate::extensions::boundary::PendingMessages;
use crate::message::AgentMessage;

impl Agent {
    /// pi's `pendingMessages`: the queued steering and follow-up messages,
    /// then the extensions' custom messages held for the run's end.
    pub(super) fn boundary_pending(&self) -> PendingMessages {
        PendingMessages { queued: self.queues.peek(), held: self.activity.held_custom() }
    }

    /// Append `drafts` of boundary `event`; whether the conversation can
    /// then take one more model request, as pi decides it: the context can
    /// (something besides system messages, not ending with the assistant's
    /// answer), or a custom message is held, or a message is queued (at
    /// `turn_end`; at `agent_before_settle` only after the answer).
    pub(super) async fn commit_boundary(&mut self, event: &str, drafts: &[Value]) -> bool {
        let (ids, failure) = self.session.append_drafts(drafts);
        for id in ids {
            if let Some(entry) = self.session.record().get(&id).and_then(|e| serde_json::to_value(e).ok()) {
                self.emit(AgentEvent::EntryAppended { entry: Box::new(entry) }).await;
            }
        }
        if let Some(error) = failure {
            let event = AgentEvent::ExtensionError {
                extension_path: "<boundary>".to_string(),
                event: event.to_string(),
                error: error.to_string(),
            };
            self.emit(event).await;
        }
        let messages = self.session.messages();
        let queued = self.queues.pending() > 0;
        let queue_counts = if event == "turn_end" { queued } else { queued && ends_with_answer(messages) };
        can_continue(messages) || !self.activity.held_custom().is_empty() || queue_counts
    }
}

/// The messages the model gets, in order.
fn model_visible(messages: &[AgentMessage]) -> impl DoubleEndedIterator<Item = &AgentMessage> + Clone {
    messages.iter().filter(|m| !is_left_out(m))
}

/// The last message the model gets is the assistant's.
fn ends_with_answer(messages: &[AgentMessage]) -> bool {
    matches!(model_visible(messages).next_back(), Some(AgentMessage::Assistant(_)))
}

/// pi's rule: some non-system message, and the last one is not the assistant's.
fn can_continue(messages: &[AgentMessage]) -> bool {
    let any = model_visible(messages).any(|m| !matches!(m, AgentMessage::System(_)));
    any && !ends_with_answer(messages)
}

/// A message the model never gets (a `!!` command's output).
fn is_left_out(message: &AgentMessage) -> bool {
    matches!(message, AgentMessage::BashExecution(b) if b.exclude_from_context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_ending_with_the_answer_cannot_continue() {
        let user = AgentMessage::user("hi", &[]);
        assert!(!can_continue(&[]));
        assert!(can_continue(std::slice::from_ref(&user)));
        let answer = serde_json::json!({"role": "assistant", "content": [], "api": "a", "provider": "p",
            "model": "m", "usage": crate::message::Usage::default(), "stopReason": "stop", "timestamp": 1});
        let answer: AgentMessage = serde_json::from_value(answer).unwrap();
        assert!(!can_continue(&[user.clone(), answer.clone()]));
        assert!(ends_with_answer(&[user.clone(), answer.clone()]));
        assert!(can_continue(&[user, answer, AgentMessage::user("more", &[])]));
    }
}
