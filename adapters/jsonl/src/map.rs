//! Mapping the core's events and replies to the native wire, each in one
//! exhaustive `match`.

use pi_core::event::{AgentEvent, AssistantStreamEvent, ExtensionUiKind, SummarizationSource, ToolResultPayload};
use pi_core::op::{ContextUsageStats, Reply};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::{
    BashData, CancelledData, CommandData, CommandsData, ContextUsageData, CycleModelData, DispositionData, EntriesData,
    ExportHtmlData, ForkData, ForkMessageData, ForkMessagesData, LastAssistantTextData, LevelData, LevelsData,
    MessagesData, ModelsData, QueueData, ResponseData, SessionIdData, SessionStatsData, StateData, TokensData,
    ToolsData, TreeData, TreeJson, UiFields, WireAssistantEvent, WireCompactionResult, WireEvent, WireToolCall,
    WireToolResult, WireUiRequest,
};

fn payload(p: ToolResultPayload) -> WireToolResult {
    WireToolResult { content: p.content, details: p.details }
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
            tool_call: WireToolCall { kind: "toolCall", call: tool_call },
        },
    }
}

pub fn compaction_result(r: pi_core::event::CompactionResult) -> WireCompactionResult {
    WireCompactionResult {
        summary: r.summary,
        first_kept_entry_id: r.first_kept_entry_id,
        tokens_before: r.tokens_before,
        estimated_tokens_after: r.estimated_tokens_after,
        usage: r.usage,
        details: r.details,
    }
}

/// The fields of an extension UI request (both dialects use them).
pub fn ui_fields(kind: ExtensionUiKind) -> UiFields {
    let mut f = UiFields::default();
    match kind {
        ExtensionUiKind::Select { title, options, timeout_ms } => {
            f.title = Some(title);
            f.options = Some(options);
            f.timeout = timeout_ms;
        }
        ExtensionUiKind::Confirm { title, message, timeout_ms } => {
            f.title = Some(title);
            f.message = Some(message);
            f.timeout = timeout_ms;
        }
        ExtensionUiKind::Input { title, placeholder, timeout_ms } => {
            f.title = Some(title);
            f.placeholder = placeholder;
            f.timeout = timeout_ms;
        }
        ExtensionUiKind::Editor { title, prefill, timeout_ms } => {
            f.title = Some(title);
            f.prefill = prefill;
            f.timeout = timeout_ms;
        }
        ExtensionUiKind::Notify { message, notify_type } => {
            f.message = Some(message);
            f.notify_type = notify_type;
        }
        ExtensionUiKind::SetStatus { status_key, status_text } => {
            f.status_key = Some(status_key);
            f.status_text = status_text;
        }
        ExtensionUiKind::SetWidget { widget_key, widget_lines, widget_placement } => {
            f.widget_key = Some(widget_key);
            f.widget_lines = widget_lines;
            f.widget_placement = widget_placement;
        }
        ExtensionUiKind::SetTitle { title } => f.title = Some(title),
        ExtensionUiKind::SetEditorText { text } => f.text = Some(text),
    }
    f
}

fn ui_request(r: pi_core::event::ExtensionUiRequest) -> WireUiRequest {
    WireUiRequest { id: r.id, method: r.kind.method().to_string(), fields: ui_fields(r.kind) }
}

/// Map one core event; `None` for events this dialect does not show.
/// `bash_id` resolves the tag of an RPC `bash` command to the client's id.
pub fn map_event(event: AgentEvent, bash_id: impl FnOnce(Option<u64>) -> Option<Box<RawValue>>) -> Option<WireEvent> {
    Some(match event {
        AgentEvent::AgentStart => WireEvent::AgentStart,
        AgentEvent::AgentEnd { messages, will_retry } => WireEvent::AgentEnd { messages, will_retry },
        AgentEvent::AgentSettled { aborted, usage: _ } => WireEvent::AgentSettled { aborted },
        AgentEvent::TurnStart => WireEvent::TurnStart,
        AgentEvent::TurnEnd { message, tool_results } => WireEvent::TurnEnd { message, tool_results },
        AgentEvent::MessageStart { message } => WireEvent::MessageStart { message },
        AgentEvent::MessageUpdate { event } => {
            WireEvent::MessageUpdate { assistant_message_event: stream_event(event) }
        }
        AgentEvent::MessageEnd { message } => WireEvent::MessageEnd { message },
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args } => {
            WireEvent::ToolExecutionStart { tool_call_id, tool_name, args }
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, args, partial_result } => {
            WireEvent::ToolExecutionUpdate { tool_call_id, tool_name, args, partial_result: payload(partial_result) }
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, tool_name, result, is_error } => {
            WireEvent::ToolExecutionEnd { tool_call_id, tool_name, result: payload(result), is_error }
        }
        AgentEvent::QueueUpdate { steering, follow_up } => WireEvent::QueueUpdate { steering, follow_up },
        AgentEvent::CompactionStart { reason } => WireEvent::CompactionStart { reason: reason.as_str().to_string() },
        AgentEvent::CompactionEnd { reason, result, aborted, will_retry, error_message } => WireEvent::CompactionEnd {
            reason: reason.as_str().to_string(),
            result: result.map(|r| compaction_result(*r)),
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
        AgentEvent::ContextUsage(_) => return None,
        AgentEvent::RunError { .. } => return None,
        AgentEvent::ExtensionError { extension_path, event, error } => {
            WireEvent::ExtensionError { extension_path, event, error }
        }
        AgentEvent::ExtensionUiRequest(request) => WireEvent::ExtensionUiRequest(ui_request(request)),
    })
}

fn to_value<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn context_usage(c: ContextUsageStats) -> ContextUsageData {
    ContextUsageData { tokens: c.tokens, context_window: c.context_window, percent: c.percent }
}

/// Map a successful reply to the response's `data`.
pub fn map_reply(reply: Reply) -> ResponseData {
    let value = match reply {
        Reply::Ack => return ResponseData::Absent,
        Reply::Prompt { disposition } => to_value(DispositionData { disposition: disposition.as_str() }),
        Reply::Switched { cancelled } => to_value(CancelledData { cancelled }),
        Reply::Fork { text, cancelled } => to_value(ForkData { text, cancelled }),
        Reply::State(s) => to_value(StateData {
            model: s.model,
            thinking_level: s.thinking_level.as_str().to_string(),
            is_streaming: s.is_streaming,
            is_compacting: s.is_compacting,
            steering_mode: s.steering_mode.as_str().to_string(),
            follow_up_mode: s.follow_up_mode.as_str().to_string(),
            session_file: s.session_file,
            session_id: s.session_id,
            session_name: s.session_name,
            auto_compaction_enabled: s.auto_compaction_enabled,
            message_count: s.message_count,
            pending_message_count: s.pending_message_count,
        }),
        Reply::Messages(messages) => to_value(MessagesData { messages }),
        Reply::Model(model) => to_value(model),
        Reply::CycleModel(None) => Value::Null,
        Reply::CycleModel(Some(c)) => {
            let c = *c;
            to_value(CycleModelData {
                model: c.model,
                thinking_level: c.thinking_level.as_str(),
                is_scoped: c.is_scoped,
            })
        }
        Reply::Models(models) => to_value(ModelsData { models }),
        Reply::CycleThinkingLevel(None) => Value::Null,
        Reply::CycleThinkingLevel(Some(level)) => to_value(LevelData { level: level.as_str() }),
        Reply::ThinkingLevels(levels) => to_value(LevelsData { levels: levels.iter().map(|l| l.as_str()).collect() }),
        Reply::Compaction(result) => to_value(compaction_result(*result)),
        Reply::Bash(b) => to_value(BashData {
            output: b.output,
            exit_code: b.exit_code,
            cancelled: b.cancelled,
            truncated: b.truncated,
            full_output_path: b.full_output_path,
        }),
        Reply::SessionStats(s) => to_value(SessionStatsData {
            session_file: s.session_file,
            session_id: s.session_id,
            user_messages: s.user_messages,
            assistant_messages: s.assistant_messages,
            tool_calls: s.tool_calls,
            tool_results: s.tool_results,
            total_messages: s.total_messages,
            tokens: TokensData {
                input: s.tokens.input,
                output: s.tokens.output,
                cache_read: s.tokens.cache_read,
                cache_write: s.tokens.cache_write,
                total: s.tokens.total,
            },
            cost: s.cost,
            context_usage: s.context_usage.map(context_usage),
        }),
        Reply::ExportHtml { path } => to_value(ExportHtmlData { path }),
        Reply::ForkMessages(messages) => to_value(ForkMessagesData {
            messages: messages.into_iter().map(|m| ForkMessageData { entry_id: m.entry_id, text: m.text }).collect(),
        }),
        Reply::Entries { entries, leaf_id } => to_value(EntriesData { entries, leaf_id }),
        Reply::Tree { tree, leaf_id } => {
            // Raw all the way to the writer: a deep tree must not become a `Value`.
            let raw =
                TreeJson::write(&tree).and_then(|tree| serde_json::value::to_raw_value(&TreeData { tree, leaf_id }));
            return match raw {
                Ok(raw) => ResponseData::Raw(raw),
                Err(_) => ResponseData::Value(Value::Null),
            };
        }
        Reply::LastAssistantText(text) => to_value(LastAssistantTextData { text }),
        Reply::Commands(commands) => to_value(CommandsData {
            commands: commands
                .into_iter()
                .map(|c| CommandData {
                    name: c.name,
                    description: c.description,
                    source: c.source.as_str().to_string(),
                    location: c.location.map(|l| l.as_str().to_string()),
                    path: c.path,
                })
                .collect(),
        }),
        Reply::QueueCleared { steering, follow_up } => to_value(QueueData { steering, follow_up }),
        Reply::Session(info) => {
            to_value(SessionIdData { session_id: info.session_id, session_file: info.session_path })
        }
        Reply::ActiveTools(tools) => to_value(ToolsData { tools }),
    };
    ResponseData::Value(value)
}
