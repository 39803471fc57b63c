//! Mapping core events to JSON-RPC notifications (one exhaustive `match`), and
//! core replies to results.

use pi_core::event::{AgentEvent, AssistantStreamEvent, ExtensionUiKind};
use pi_core::message::AgentMessage;
use pi_core::op::{Disposition, Reply, StateSnapshot};
use pi_jsonl::map::map_reply;
use pi_jsonl::wire::ResponseData;
use serde_json::{Value, json};

use crate::errors::classify;

/// A notification to send: method and params.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: &'static str,
    pub params: Value,
}

fn n(method: &'static str, params: Value) -> Option<Notification> {
    Some(Notification { method, params })
}

/// Map one core event; `None` when this dialect does not show it.
pub fn map_event(event: AgentEvent) -> Option<Notification> {
    match event {
        AgentEvent::AgentStart => None,
        AgentEvent::AgentEnd { .. } => None,
        AgentEvent::AgentSettled { aborted, usage } => n(
            "turnEnd",
            json!({ "totalTokens": usage.input + usage.output + usage.cache_read + usage.cache_write, "totalCost": usage.cost.total, "aborted": aborted }),
        ),
        AgentEvent::TurnStart => None,
        AgentEvent::TurnEnd { .. } => None,
        AgentEvent::MessageStart { .. } => None,
        AgentEvent::MessageUpdate { event } => match event {
            AssistantStreamEvent::TextDelta { delta, .. } => {
                n("assistantMessage", json!({ "type": "delta", "delta": delta }))
            }
            AssistantStreamEvent::ThinkingDelta { delta, .. } => {
                n("assistantMessage", json!({ "type": "thinkingDelta", "thinking": delta }))
            }
            AssistantStreamEvent::TextStart { .. }
            | AssistantStreamEvent::TextEnd { .. }
            | AssistantStreamEvent::ThinkingStart { .. }
            | AssistantStreamEvent::ThinkingEnd { .. }
            | AssistantStreamEvent::ToolCallStart { .. }
            | AssistantStreamEvent::ToolCallDelta { .. }
            | AssistantStreamEvent::ToolCallEnd { .. } => None,
        },
        AgentEvent::MessageEnd { message } => match message {
            AgentMessage::Assistant(a) => {
                let mut params = json!({
                    "type": "complete",
                    "content": a.text(),
                    "usage": { "inputTokens": a.usage.input + a.usage.cache_read + a.usage.cache_write, "outputTokens": a.usage.output },
                    "cost": a.usage.cost.total,
                    "stopReason": a.stop_reason,
                    "model": a.model,
                });
                if let (Some(msg), Value::Object(obj)) = (&a.error_message, &mut params) {
                    obj.insert("errorMessage".into(), Value::String(msg.clone()));
                }
                n("assistantMessage", params)
            }
            _ => None,
        },
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args } => {
            n("toolCall", json!({ "toolName": tool_name, "input": args, "toolCallId": tool_call_id }))
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, partial_result, .. } => n(
            "toolUpdate",
            json!({ "toolCallId": tool_call_id, "toolName": tool_name, "output": { "content": partial_result.content } }),
        ),
        AgentEvent::ToolExecutionEnd { tool_call_id, tool_name, result, is_error } => n(
            "toolResult",
            json!({
                "toolCallId": tool_call_id,
                "toolName": tool_name,
                "output": { "content": result.content },
                "details": result.details.unwrap_or_else(|| json!({})),
                "isError": is_error,
            }),
        ),
        AgentEvent::QueueUpdate { steering, follow_up } => {
            n("queueUpdate", json!({ "steering": steering, "followUp": follow_up }))
        }
        AgentEvent::CompactionStart { reason } => n("compactionStart", json!({ "reason": reason.as_str() })),
        AgentEvent::CompactionEnd { reason, result, aborted, will_retry, error_message } => n(
            "compactionEnd",
            json!({
                "reason": reason.as_str(),
                "result": result.map(|r| pi_jsonl::map::compaction_result(*r)),
                "aborted": aborted,
                "willRetry": will_retry,
                "errorMessage": error_message,
            }),
        ),
        AgentEvent::AutoRetryStart { attempt, max_attempts, delay_ms, error_message } => n(
            "autoRetryStart",
            json!({ "attempt": attempt, "maxAttempts": max_attempts, "delayMs": delay_ms, "errorMessage": error_message }),
        ),
        AgentEvent::AutoRetryEnd { success, attempt, final_error } => {
            n("autoRetryEnd", json!({ "success": success, "attempt": attempt, "finalError": final_error }))
        }
        AgentEvent::SummarizationRetryScheduled { .. } => None,
        AgentEvent::SummarizationRetryAttemptStart { .. } => None,
        AgentEvent::SummarizationRetryFinished => None,
        AgentEvent::BashExecutionUpdate { delta, .. } => n("bashOutput", json!({ "delta": delta })),
        AgentEvent::ThinkingLevelChanged { .. } => None,
        AgentEvent::ModelChanged { model, thinking_level } => n(
            "modelChanged",
            json!({ "model": model.id, "provider": model.provider, "thinkingLevel": thinking_level.as_str() }),
        ),
        AgentEvent::SessionInfoChanged { name } => n("sessionNameChanged", json!({ "name": name })),
        AgentEvent::ContextUsage(usage) => n(
            "contextUsage",
            json!({
                "used": usage.tokens,
                "total": usage.context_window,
                "percentage": if usage.context_window > 0 { usage.tokens as f64 / usage.context_window as f64 } else { 0.0 },
            }),
        ),
        AgentEvent::RunError { error, will_retry } => {
            let class = classify(error.kind);
            n(
                "error",
                json!({ "message": error.message, "code": class.name, "retryable": will_retry || error.retryable }),
            )
        }
        AgentEvent::ExtensionError { extension_path, event, error } => {
            n("extension:error", json!({ "extensionPath": extension_path, "event": event, "error": error }))
        }
        AgentEvent::ExtensionUiRequest(request) => {
            let dialog = request.kind.is_dialog();
            let method = request.kind.method();
            let data = match request.kind {
                ExtensionUiKind::Select { title, options, timeout_ms } => {
                    json!({ "title": title, "options": options, "timeout": timeout_ms })
                }
                ExtensionUiKind::Confirm { title, message, timeout_ms } => {
                    json!({ "title": title, "message": message, "timeout": timeout_ms })
                }
                ExtensionUiKind::Input { title, placeholder, timeout_ms } => {
                    json!({ "title": title, "placeholder": placeholder, "timeout": timeout_ms })
                }
                ExtensionUiKind::Editor { title, prefill, timeout_ms } => {
                    json!({ "title": title, "prefill": prefill, "timeout": timeout_ms })
                }
                ExtensionUiKind::Notify { message, notify_type } => {
                    json!({ "message": message, "notifyType": notify_type.unwrap_or_else(|| "info".into()) })
                }
                ExtensionUiKind::SetStatus { status_key, status_text } => {
                    json!({ "statusKey": status_key, "statusText": status_text })
                }
                ExtensionUiKind::SetWidget { widget_key, widget_lines, widget_placement } => {
                    json!({ "widgetKey": widget_key, "widgetLines": widget_lines, "widgetPlacement": widget_placement })
                }
                ExtensionUiKind::SetTitle { title } => json!({ "title": title }),
                ExtensionUiKind::SetEditorText { text } => json!({ "text": text }),
            };
            n(
                "extension:ui",
                json!({
                    "id": request.id,
                    "extension": request.extension,
                    "type": if dialog { "dialog" } else { method },
                    "method": method,
                    "data": strip_nulls(data),
                }),
            )
        }
    }
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        other => other,
    }
}

/// The result of a successful op.
pub fn map_result(reply: Reply) -> Value {
    match reply {
        Reply::Prompt { disposition } => {
            json!({ "accepted": true, "disposition": disposition_str(disposition) })
        }
        Reply::Session(info) => json!({
            "sessionId": info.session_id,
            "sessionPath": info.session_path,
            "model": info.model.as_ref().map(|m| m.id.clone()),
            "provider": info.model.as_ref().map(|m| m.provider.clone()),
        }),
        other => match map_reply(other) {
            ResponseData::Absent => json!({}),
            ResponseData::Value(v) => v,
        },
    }
}

fn disposition_str(d: Disposition) -> &'static str {
    d.as_str()
}

/// `getStatus` result from a state snapshot.
pub fn status(s: &StateSnapshot) -> Value {
    json!({
        "idle": !s.is_streaming && !s.is_compacting && !s.is_bash_running,
        "model": s.model.as_ref().map(|m| m.id.clone()),
        "provider": s.model.as_ref().map(|m| m.provider.clone()),
        "thinkingLevel": s.thinking_level.as_str(),
        "contextUsage": s.context_usage.and_then(|c| c.percent).map(|p| p / 100.0),
        "activeTools": s.active_tools,
        "sessionId": s.session_id,
    })
}
