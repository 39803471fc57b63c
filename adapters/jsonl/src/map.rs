//! Mapping the core's events to the native wire, in one exhaustive `match`
//! (replies are encoded through the protocol table).

use pi_core::client::ClientRequestKind;
use pi_core::event::{AgentEvent, AssistantStreamEvent, SummarizationSource, ToolResultPayload};
use serde_json::value::RawValue;

use crate::wire::{
    UiFields, WireAssistantEvent, WireCompactionResult, WireEvent, WireToolCall, WireToolResult, WireUiRequest,
};

fn payload(p: ToolResultPayload) -> WireToolResult {
    WireToolResult {
        content: p.content,
        details: p.details,
        structured_content: p.structured_content.map(|v| *v),
        is_error: p.is_error,
        usage: p.usage.map(|u| *u),
        terminate: p.terminate,
    }
}

fn stream_event(e: AssistantStreamEvent) -> WireAssistantEvent {
    match e {
        AssistantStreamEvent::TextStart { content_index } => WireAssistantEvent::TextStart { content_index },
        AssistantStreamEvent::TextDelta { content_index, delta } => {
            WireAssistantEvent::TextDelta { content_index, delta }
        }
        AssistantStreamEvent::TextEnd { content_index, content } => {
            WireAssistantEvent::TextEnd { content_index, content }
        }
        AssistantStreamEvent::ThinkingStart { content_index } => WireAssistantEvent::ThinkingStart { content_index },
        AssistantStreamEvent::ThinkingDelta { content_index, delta } => {
            WireAssistantEvent::ThinkingDelta { content_index, delta }
        }
        AssistantStreamEvent::ThinkingEnd { content_index, content } => {
            WireAssistantEvent::ThinkingEnd { content_index, content }
        }
        AssistantStreamEvent::ToolCallStart { content_index, id, tool_name } => {
            WireAssistantEvent::ToolCallStart { content_index, id, tool_name }
        }
        AssistantStreamEvent::ToolCallDelta { content_index, delta } => {
            WireAssistantEvent::ToolCallDelta { content_index, delta }
        }
        AssistantStreamEvent::ToolCallEnd { content_index, tool_call } => WireAssistantEvent::ToolCallEnd {
            content_index,
            tool_call: WireToolCall { kind: "toolCall", call: *tool_call },
        },
    }
}

fn ui_request(r: pi_core::event::ExtensionUiRequest) -> WireUiRequest {
    WireUiRequest { id: r.id, method: r.kind.method().to_string(), fields: UiFields::of(r.kind) }
}

/// Map one core event; `None` for events this dialect does not show.
/// `bash_id` resolves the tag of an RPC `bash` command to the client's id.
pub fn map_event(event: AgentEvent, bash_id: impl FnOnce(Option<u64>) -> Option<Box<RawValue>>) -> Option<WireEvent> {
    Some(match event {
        AgentEvent::AgentStart => WireEvent::AgentStart,
        AgentEvent::AgentEnd { messages, will_retry } => WireEvent::AgentEnd { messages, will_retry },
        AgentEvent::AgentSettled { aborted, usage: _ } => WireEvent::AgentSettled { aborted },
        AgentEvent::TurnStart => WireEvent::TurnStart,
        AgentEvent::TurnEnd { message, tool_results } => WireEvent::TurnEnd { message: *message, tool_results },
        AgentEvent::MessageStart { message } => WireEvent::MessageStart { message: *message },
        AgentEvent::MessageUpdate { event, usage } => {
            WireEvent::MessageUpdate { usage, assistant_message_event: stream_event(event) }
        }
        AgentEvent::MessageEnd { message } => WireEvent::MessageEnd { message: *message },
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, parent_tool_call_id } => {
            WireEvent::ToolExecutionStart { tool_call_id, tool_name, args: *args, parent_tool_call_id }
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, args, partial_result, parent_tool_call_id } => {
            WireEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args: *args,
                partial_result: payload(*partial_result),
                parent_tool_call_id,
            }
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
            duration_ms,
            parent_tool_call_id,
        } => WireEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result: payload(*result),
            is_error,
            duration_ms,
            parent_tool_call_id,
        },
        AgentEvent::QueueUpdate { steering, follow_up } => WireEvent::QueueUpdate { steering, follow_up },
        AgentEvent::CompactionStart { reason } => WireEvent::CompactionStart { reason: reason.as_str().to_string() },
        AgentEvent::CompactionEnd { reason, result, aborted, will_retry, error_message } => WireEvent::CompactionEnd {
            reason: reason.as_str().to_string(),
            result: result.map(|r| WireCompactionResult::of(*r)),
            aborted,
            will_retry,
            error_message,
        },
        AgentEvent::AutoRetryStart { attempt, max_attempts, delay_ms, error_message } => {
            WireEvent::AutoRetryStart { attempt, max_attempts, delay_ms, error_message }
        }
        AgentEvent::AutoRetryEnd { success, attempt, final_error } => {
            WireEvent::AutoRetryEnd { success, attempt, final_error }
        }
        AgentEvent::SummarizationRetryScheduled { attempt, max_attempts, delay_ms, error_message } => {
            WireEvent::SummarizationRetryScheduled { attempt, max_attempts, delay_ms, error_message }
        }
        AgentEvent::SummarizationRetryAttemptStart { source } => match source {
            SummarizationSource::Compaction(reason) => WireEvent::SummarizationRetryAttemptStart {
                source: "compaction".to_string(),
                reason: Some(reason.as_str().to_string()),
            },
            SummarizationSource::BranchSummary => {
                WireEvent::SummarizationRetryAttemptStart { source: "branchSummary".to_string(), reason: None }
            }
        },
        AgentEvent::SummarizationRetryFinished => WireEvent::SummarizationRetryFinished,
        AgentEvent::BashExecutionUpdate { request, delta } => {
            WireEvent::BashExecutionUpdate { id: bash_id(request), delta }
        }
        AgentEvent::ThinkingLevelChanged { level } => {
            WireEvent::ThinkingLevelChanged { level: level.as_str().to_string() }
        }
        AgentEvent::ModelChanged { .. } => return None,
        AgentEvent::SessionInfoChanged { name } => WireEvent::SessionInfoChanged { name },
        AgentEvent::EntryAppended { entry } => WireEvent::EntryAppended { entry: *entry },
        AgentEvent::ContextUsage(_) => return None,
        AgentEvent::RunError { .. } => return None,
        AgentEvent::ExtensionError { extension_path, event, error } => {
            WireEvent::ExtensionError { extension_path, event, error }
        }
        AgentEvent::ExtensionUiRequest(request) => WireEvent::ExtensionUiRequest(ui_request(*request)),
        // Approvals are extension UI dialogs here; files, terminals and client
        // tools are never delegated to a native client.
        AgentEvent::ClientRequest(request) => match &request.kind {
            ClientRequestKind::Permission(p) => WireEvent::ExtensionUiRequest(WireUiRequest {
                id: request.id,
                method: "select".to_string(),
                fields: UiFields::approval(p),
            }),
            _ => return None,
        },
        AgentEvent::ClientRequestEnded { .. } => return None,
        // The native dialect has no `login` command (pi has none in RPC mode).
        AgentEvent::LoginEnd { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use pi_core::event::{EventKind, NATIVE};

    use super::*;

    /// The native `type` of each event is one the event table gives it, each
    /// of those is written, and the events it does not show are not.
    #[test]
    fn wire_names_are_the_event_tables() {
        let mut written = HashSet::new();
        let mut kinds = HashSet::new();
        for event in pi_transport::testing::sample_events() {
            let kind = event.kind();
            kinds.insert(kind);
            if let Some(wire) = map_event(event, |_| None) {
                let value = serde_json::to_value(&wire).unwrap();
                let name = value["type"].as_str().unwrap_or_default().to_string();
                assert!(
                    NATIVE.of(kind).contains(&name.as_str()),
                    "{kind:?} written as {name:?}: {:?}",
                    NATIVE.of(kind)
                );
                written.insert((kind, name));
            }
        }
        for kind in EventKind::ALL {
            assert!(kinds.contains(kind), "no sample of {kind:?}");
            for name in NATIVE.of(*kind) {
                assert!(written.contains(&(*kind, name.to_string())), "{kind:?} is never written as {name}");
            }
        }
    }
}
