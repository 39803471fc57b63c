//! Mapping core events to JSON-RPC notifications, in one exhaustive `match`,
//! through the typed shapes of `wire.rs` (replies are encoded through the
//! protocol table).

use pi_core::client::ClientRequestKind;
use pi_core::event::{AgentEvent, AssistantStreamEvent};
use pi_core::message::AgentMessage;
use pi_transport::protocol::results::WireCompactionResult;
use pi_transport::protocol::ui::{APPROVAL_SENDER, UiFields};
use serde_json::Value;

use crate::errors::classify;
use crate::wire::{
    AssistantMessageParams, AutoRetryEndParams, AutoRetryStartParams, BashOutputParams, CompactionEndParams,
    CompactionStartParams, ContextUsageParams, ErrorParams, ExtensionErrorParams, ExtensionUiParams,
    LoginCompletedParams, ModelChangedParams, QueueUpdateParams, ServerNotification, SessionNameChangedParams,
    TokenUsage, ToolCallParams, ToolOutput, ToolResultParams, ToolUpdateParams, TurnEndParams,
};

/// A notification to send.
pub type Notification = ServerNotification;

/// Map one core event; `None` when this dialect does not show it.
pub fn map_event(event: AgentEvent) -> Option<Notification> {
    Some(match event {
        AgentEvent::AgentStart => return None,
        AgentEvent::AgentEnd { .. } => return None,
        AgentEvent::AgentSettled { aborted, usage } => ServerNotification::TurnEnd(TurnEndParams {
            total_tokens: usage.input + usage.output + usage.cache_read + usage.cache_write,
            total_cost: usage.cost.total,
            aborted,
        }),
        AgentEvent::TurnStart => return None,
        AgentEvent::TurnEnd { .. } => return None,
        AgentEvent::MessageStart { .. } => return None,
        AgentEvent::MessageUpdate { event, .. } => match event {
            AssistantStreamEvent::TextDelta { delta, .. } => {
                ServerNotification::AssistantMessage(AssistantMessageParams::Delta { delta })
            }
            AssistantStreamEvent::ThinkingDelta { delta, .. } => {
                ServerNotification::AssistantMessage(AssistantMessageParams::ThinkingDelta { thinking: delta })
            }
            AssistantStreamEvent::TextStart { .. }
            | AssistantStreamEvent::TextEnd { .. }
            | AssistantStreamEvent::ThinkingStart { .. }
            | AssistantStreamEvent::ThinkingEnd { .. }
            | AssistantStreamEvent::ToolCallStart { .. }
            | AssistantStreamEvent::ToolCallDelta { .. }
            | AssistantStreamEvent::ToolCallEnd { .. } => return None,
        },
        AgentEvent::MessageEnd { message } => match *message {
            AgentMessage::Assistant(a) => ServerNotification::AssistantMessage(AssistantMessageParams::Complete {
                content: a.text(),
                usage: TokenUsage {
                    input_tokens: a.usage.input + a.usage.cache_read + a.usage.cache_write,
                    output_tokens: a.usage.output,
                },
                cost: a.usage.cost.total,
                stop_reason: a.stop_reason,
                model: a.model,
                error_message: a.error_message,
            }),
            _ => return None,
        },
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, parent_tool_call_id: None } => {
            ServerNotification::ToolCall(ToolCallParams { tool_name, input: *args, tool_call_id })
        }
        AgentEvent::ToolExecutionUpdate {
            tool_call_id, tool_name, partial_result, parent_tool_call_id: None, ..
        } => ServerNotification::ToolUpdate(ToolUpdateParams {
            tool_call_id,
            tool_name,
            output: ToolOutput { content: partial_result.content },
        }),
        AgentEvent::ToolExecutionEnd {
            tool_call_id, tool_name, result, is_error, parent_tool_call_id: None, ..
        } => ServerNotification::ToolResult(ToolResultParams {
            tool_call_id,
            tool_name,
            output: ToolOutput { content: result.content },
            details: result.details.unwrap_or_else(|| Value::Object(Default::default())),
            is_error,
        }),
        // A call another tool made (`ctx.executeTool()`): seed 004 has no
        // nested calls, and they are not in the transcript, so it is not shown.
        AgentEvent::ToolExecutionStart { .. }
        | AgentEvent::ToolExecutionUpdate { .. }
        | AgentEvent::ToolExecutionEnd { .. } => {
            return None;
        }
        AgentEvent::QueueUpdate { steering, follow_up } => {
            ServerNotification::QueueUpdate(QueueUpdateParams { steering, follow_up })
        }
        AgentEvent::CompactionStart { reason } => {
            ServerNotification::CompactionStart(CompactionStartParams { reason: reason.as_str() })
        }
        AgentEvent::CompactionEnd { reason, result, aborted, will_retry, error_message } => {
            ServerNotification::CompactionEnd(CompactionEndParams {
                reason: reason.as_str(),
                result: result.map(|r| WireCompactionResult::of(*r)),
                aborted,
                will_retry,
                error_message,
            })
        }
        AgentEvent::AutoRetryStart { attempt, max_attempts, delay_ms, error_message } => {
            ServerNotification::AutoRetryStart(AutoRetryStartParams { attempt, max_attempts, delay_ms, error_message })
        }
        AgentEvent::AutoRetryEnd { success, attempt, final_error } => {
            ServerNotification::AutoRetryEnd(AutoRetryEndParams { success, attempt, final_error })
        }
        AgentEvent::SummarizationRetryScheduled { .. } => return None,
        AgentEvent::SummarizationRetryAttemptStart { .. } => return None,
        AgentEvent::SummarizationRetryFinished => return None,
        AgentEvent::BashExecutionUpdate { delta, .. } => ServerNotification::BashOutput(BashOutputParams { delta }),
        AgentEvent::ThinkingLevelChanged { .. } => return None,
        AgentEvent::ModelChanged { model, thinking_level } => ServerNotification::ModelChanged(ModelChangedParams {
            model: model.id,
            provider: model.provider,
            thinking_level: thinking_level.as_str(),
        }),
        AgentEvent::SessionInfoChanged { name } => {
            ServerNotification::SessionNameChanged(SessionNameChangedParams { name })
        }
        // Seed 004 has no notification for session bookkeeping.
        AgentEvent::EntryAppended { .. } => return None,
        AgentEvent::ContextUsage(usage) => ServerNotification::ContextUsage(ContextUsageParams {
            used: usage.tokens,
            total: usage.context_window,
            percentage: if usage.context_window > 0 { usage.tokens as f64 / usage.context_window as f64 } else { 0.0 },
        }),
        AgentEvent::RunError { error, will_retry } => {
            let class = classify(error.kind);
            ServerNotification::Error(ErrorParams {
                message: error.message,
                code: class.name,
                retryable: will_retry || error.retryable,
            })
        }
        AgentEvent::ExtensionError { extension_path, event, error } => {
            ServerNotification::ExtensionError(ExtensionErrorParams { extension_path, event, error })
        }
        // Approvals are `extension:ui` dialogs; a client tool's `toolCall` is
        // sent now, once its result can be taken (see the dialect).
        AgentEvent::ClientRequest(request) => match request.kind {
            ClientRequestKind::Permission(p) => ServerNotification::ExtensionUi(ExtensionUiParams {
                id: request.id,
                extension: APPROVAL_SENDER.to_string(),
                kind: "dialog",
                method: "select",
                data: UiFields::approval(&p),
            }),
            ClientRequestKind::ToolCall { tool_call_id, tool_name, args } => {
                ServerNotification::ToolCall(ToolCallParams { tool_name, input: args, tool_call_id })
            }
            _ => return None,
        },
        AgentEvent::ClientRequestEnded { .. } => return None,
        AgentEvent::LoginEnd { provider, error } => {
            ServerNotification::LoginCompleted(LoginCompletedParams { provider, success: error.is_none(), error })
        }
        AgentEvent::ExtensionUiRequest(request) => {
            let dialog = request.kind.is_dialog();
            let method = request.kind.method();
            let mut data = UiFields::of(request.kind);
            if method == "notify" && data.notify_type.is_none() {
                data.notify_type = Some("info".into());
            }
            ServerNotification::ExtensionUi(ExtensionUiParams {
                id: request.id,
                extension: request.extension,
                kind: if dialog { "dialog" } else { method },
                method,
                data,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use pi_core::event::{CompactionReason, ExtensionUiKind, ExtensionUiRequest};

    use super::*;
    use crate::protocol::notification_bytes;

    fn line(event: AgentEvent) -> String {
        let n = map_event(event).expect("a notification");
        String::from_utf8(notification_bytes(&n)).unwrap()
    }

    #[test]
    fn notifications_keep_their_bytes() {
        assert_eq!(
            line(AgentEvent::AgentSettled { aborted: false, usage: Box::default() }),
            r#"{"jsonrpc":"2.0","method":"turnEnd","params":{"totalTokens":0,"totalCost":0.0,"aborted":false}}"#
        );
        assert_eq!(
            line(AgentEvent::CompactionEnd {
                reason: CompactionReason::Manual,
                result: None,
                aborted: true,
                will_retry: false,
                error_message: None
            }),
            r#"{"jsonrpc":"2.0","method":"compactionEnd","params":{"reason":"manual","result":null,"aborted":true,"willRetry":false,"errorMessage":null}}"#
        );
        assert_eq!(
            line(AgentEvent::AutoRetryEnd { success: true, attempt: 1, final_error: None }),
            r#"{"jsonrpc":"2.0","method":"autoRetryEnd","params":{"success":true,"attempt":1,"finalError":null}}"#
        );
        assert_eq!(
            line(AgentEvent::MessageUpdate {
                event: AssistantStreamEvent::ThinkingDelta { content_index: 0, delta: "hm".into() },
                usage: Default::default(),
            }),
            r#"{"jsonrpc":"2.0","method":"assistantMessage","params":{"type":"thinkingDelta","thinking":"hm"}}"#
        );
        assert_eq!(
            line(AgentEvent::ExtensionUiRequest(Box::new(ExtensionUiRequest {
                id: "u1".into(),
                extension: "demo".into(),
                kind: ExtensionUiKind::Notify { message: "hi".into(), notify_type: None },
            }))),
            r#"{"jsonrpc":"2.0","method":"extension:ui","params":{"id":"u1","extension":"demo","type":"notify","method":"notify","data":{"message":"hi","notifyType":"info"}}}"#
        );
        assert_eq!(
            line(AgentEvent::ExtensionUiRequest(Box::new(ExtensionUiRequest {
                id: "u2".into(),
                extension: "demo".into(),
                kind: ExtensionUiKind::Select { title: "T".into(), options: vec!["a".into()], timeout_ms: None },
            }))),
            r#"{"jsonrpc":"2.0","method":"extension:ui","params":{"id":"u2","extension":"demo","type":"dialog","method":"select","data":{"title":"T","options":["a"]}}}"#
        );
    }

    /// A call a tool made to another tool is not shown; the model's calls are.
    #[test]
    fn nested_tool_calls_are_not_notified() {
        let start = |parent: Option<&str>| AgentEvent::ToolExecutionStart {
            tool_call_id: "c1/1".into(),
            tool_name: "bash".into(),
            args: Box::new(serde_json::json!({})),
            parent_tool_call_id: parent.map(str::to_string),
        };
        assert!(map_event(start(Some("c1"))).is_none());
        assert!(line(start(None)).contains(r#""method":"toolCall""#));
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1/1".into(),
            tool_name: "bash".into(),
            result: Box::new(pi_core::event::ToolResultPayload {
                content: Vec::new(),
                details: None,
                structured_content: None,
                is_error: false,
                usage: None,
                terminate: false,
            }),
            is_error: false,
            duration_ms: Some(1),
            parent_tool_call_id: Some("c1".into()),
        };
        assert!(map_event(end).is_none());
    }

    /// The method of each notification is one the event table gives its
    /// event, each of those is sent, and the events it does not show are not.
    #[test]
    fn methods_are_the_event_tables() {
        use std::collections::HashSet;

        use pi_core::event::{EventKind, JSONRPC};

        let mut sent = HashSet::new();
        let mut kinds = HashSet::new();
        for event in pi_transport::testing::sample_events() {
            let kind = event.kind();
            kinds.insert(kind);
            if let Some(n) = map_event(event) {
                let value: Value = serde_json::from_slice(&notification_bytes(&n)).unwrap();
                let method = value["method"].as_str().unwrap_or_default().to_string();
                assert!(
                    JSONRPC.of(kind).contains(&method.as_str()),
                    "{kind:?} sent as {method:?}: {:?}",
                    JSONRPC.of(kind)
                );
                sent.insert((kind, method));
            }
        }
        for kind in EventKind::ALL {
            assert!(kinds.contains(kind), "no sample of {kind:?}");
            for method in JSONRPC.of(*kind) {
                assert!(sent.contains(&(*kind, method.to_string())), "{kind:?} is never sent as {method}");
            }
        }
    }
}
