//! What clients hear when a run was cut short by the loss of the worker
//! that ran it (killed, crashed, cut off from the cluster), told by the
//! worker that took the session over: the events a run failing with an
//! error ends with, so each dialect reports it through its own error path —
//! the native dialect an assistant message with `stopReason: "error"` and
//! its `errorMessage`, then `agent_end`; JSON-RPC that message and an
//! `error` notification; ACP the error answering the pending
//! `session/prompt`. The partial reply was never saved: the conversation
//! goes on from the last saved entry.

use pi_core::error::{CoreError, ErrorKind};
use pi_core::event::AgentEvent;
use pi_core::message::{AgentMessage, AssistantMessage, StopReason, Usage, now_ms};
use pi_core::model::Model;

/// The sentence clients read.
pub fn message(worker: &str) -> String {
    format!(
        "The turn in flight was interrupted by the loss of its worker ({worker}); the session continues on another worker from its last saved entry. Send the prompt again to retry."
    )
}

/// The events telling the interruption, in order.
pub fn events(worker: &str, model: Option<&Model>) -> Vec<AgentEvent> {
    let text = message(worker);
    let (api, provider, id) = model.map_or_else(
        || (String::new(), String::new(), String::new()),
        |m| (m.api.clone(), m.provider.clone(), m.id.clone()),
    );
    let assistant = AgentMessage::Assistant(AssistantMessage {
        content: Vec::new(),
        api,
        provider,
        model: id,
        usage: Usage::default(),
        stop_reason: StopReason::Error,
        timestamp: now_ms(),
        response_id: None,
        error_message: Some(text.clone()),
        raw_stop_reason: None,
        duration_ms: None,
        thinking_level: None,
        extra: Default::default(),
    });
    vec![
        AgentEvent::MessageStart { message: Box::new(assistant.clone()) },
        AgentEvent::MessageEnd { message: Box::new(assistant.clone()) },
        AgentEvent::TurnEnd { message: Box::new(assistant.clone()), tool_results: Vec::new() },
        AgentEvent::AgentEnd { messages: vec![assistant], will_retry: false },
        AgentEvent::RunError {
            error: CoreError::new(ErrorKind::Internal, text).with_retryable(true),
            will_retry: false,
        },
        AgentEvent::AgentSettled { aborted: false, usage: Box::default() },
    ]
}
