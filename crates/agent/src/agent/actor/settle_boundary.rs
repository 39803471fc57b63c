//! The actor's side of pi's `agent_before_settle` boundary: the drafts the
//! handlers proposed go into the session in order, each announced with
//! `entry_appended`, and the conversation is rebuilt from the record.

use serde_json::Value;

use super::Agent;
use crate::event::AgentEvent;
use crate::message::AgentMessage;

impl Agent {
    /// Append `drafts`; whether the conversation can then take one more
    /// model request (something besides system messages, and not ending
    /// with the assistant's answer).
    pub(super) async fn commit_boundary(&mut self, drafts: &[Value]) -> bool {
        let (ids, failure) = self.session.append_drafts(drafts);
        for id in ids {
            if let Some(entry) = self.session.record().get(&id).and_then(|e| serde_json::to_value(e).ok()) {
                self.emit(AgentEvent::EntryAppended { entry }).await;
            }
        }
        if let Some(error) = failure {
            let event = AgentEvent::ExtensionError {
                extension_path: "<boundary>".to_string(),
                event: "agent_before_settle".to_string(),
                error: error.to_string(),
            };
            self.emit(event).await;
        }
        can_continue(self.session.messages())
    }
}

/// pi's rule: some non-system message, and the last one is not the assistant's.
fn can_continue(messages: &[AgentMessage]) -> bool {
    let mut model_visible = messages.iter().filter(|m| !is_left_out(m));
    let any = model_visible.clone().any(|m| !matches!(m, AgentMessage::System(_)));
    any && !matches!(model_visible.next_back(), Some(AgentMessage::Assistant(_)))
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
        assert!(can_continue(&[user, answer, AgentMessage::user("more", &[])]));
    }
}
