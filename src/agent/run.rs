//! The run task: one prompt's whole session-level run — turns (model call,
//! tools), steering and follow-up delivery, auto-retry — ending in `agent_settled`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Map;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::compacting::{AfterRun, RunCompaction};
use super::internal::Emitter;
use super::internal::{Internal, QueueKind};
use super::tool_exec::execute_tool_calls;
use crate::config::settings::RetrySettings;
use crate::event::{AgentEvent, ContextUsage};
use crate::message::{AgentMessage, AssistantMessage, StopReason, ToolCall, Usage, now_ms};
use crate::model::{Model, ThinkingLevel};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
use crate::stream::stream_assistant;
use crate::tools::{ToolContext, ToolRegistry};

/// Text of the assistant message that closes a run aborted between turns.
const ABORTED_BETWEEN_TURNS: &str = "This operation was aborted";

/// Everything one run needs, captured when the prompt is accepted.
pub(crate) struct RunSetup {
    pub run_id: u64,
    pub emitter: Emitter,
    /// Cancelled by `abort`.
    pub cancel: CancellationToken,
    /// Cancelled by `abort_retry` (only matters during a retry wait).
    pub retry_cancel: CancellationToken,
    pub provider: Arc<dyn Provider>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub api_key: Option<String>,
    pub headers: std::collections::HashMap<String, String>,
    pub session_id: String,
    pub system_prompt: String,
    pub tools: ToolRegistry,
    pub tool_specs: Vec<ToolSpec>,
    pub tool_ctx: ToolContext,
    /// New messages that start the run (the prompt); empty for a continuation.
    pub initial: Vec<AgentMessage>,
    pub retry: RetrySettings,
    pub retry_enabled: Arc<AtomicBool>,
}

/// How one low-level run (agent_start … agent_end) ended.
enum LowLevelEnd {
    Done,
    Aborted,
    Failed { error: ProviderError, message: Box<AgentMessage> },
}

/// Where the messages injected at a turn start came from.
#[derive(PartialEq, Eq)]
enum Pending {
    Prompt,
    Steering,
    FollowUp,
}

/// Run until settled, then tell the actor.
pub(crate) async fn run_session(mut s: RunSetup) {
    let mut attempt: u32 = 0;
    let mut initial = std::mem::take(&mut s.initial);
    let aborted: bool;
    let mut totals = Usage::default();
    let mut compaction = RunCompaction::default();
    if !initial.is_empty() {
        compaction.before_prompt(&mut s).await;
    }
    loop {
        let (new_messages, end) = low_level_run(&mut s, std::mem::take(&mut initial), attempt, &mut totals).await;
        match end {
            LowLevelEnd::Done => {
                s.emitter.emit(AgentEvent::AgentEnd { messages: new_messages.clone(), will_retry: false }).await;
                match compaction.after_run(&mut s, &new_messages).await {
                    AfterRun::Continue(next) => {
                        (initial, attempt) = (next, 0);
                        continue;
                    }
                    AfterRun::Settle { aborted: a } => aborted = a,
                }
                break;
            }
            LowLevelEnd::Aborted => {
                s.emitter.emit(AgentEvent::AgentEnd { messages: new_messages, will_retry: false }).await;
                if attempt > 0 {
                    s.emitter.emit(retry_end_failed(attempt, "Request was aborted")).await;
                }
                aborted = true;
                break;
            }
            LowLevelEnd::Failed { error, message } => {
                let max = s.retry.max_retries;
                let will_retry = error.is_retryable() && s.retry_enabled.load(Ordering::SeqCst) && attempt < max;
                s.emitter.emit(AgentEvent::AgentEnd { messages: new_messages.clone(), will_retry }).await;
                if !will_retry {
                    if attempt > 0 {
                        s.emitter.emit(retry_end_failed(attempt, &error.message)).await;
                    }
                    // An overflow may still be recovered by compacting: the
                    // error is reported once that is decided.
                    let after = compaction.after_run(&mut s, &new_messages).await;
                    let recovering = matches!(after, AfterRun::Continue(_));
                    s.emitter.emit(AgentEvent::RunError { error: error.to_core(), will_retry: recovering }).await;
                    match after {
                        AfterRun::Continue(next) => {
                            (initial, attempt) = (next, 0);
                            continue;
                        }
                        AfterRun::Settle { aborted: a } => aborted = a,
                    }
                    break;
                }
                s.emitter.emit(AgentEvent::RunError { error: error.to_core(), will_retry }).await;
                attempt += 1;
                let delay = s.retry.delay(attempt, error.retry_after());
                s.emitter
                    .emit(AgentEvent::AutoRetryStart {
                        attempt,
                        max_attempts: max,
                        delay_ms: delay.as_millis() as u64,
                        error_message: error.message.clone(),
                    })
                    .await;
                s.emitter.send(Internal::RetractFromContext { message: *message }).await;
                let cancelled = tokio::select! {
                    _ = tokio::time::sleep(delay) => false,
                    _ = s.cancel.cancelled() => true,
                    _ = s.retry_cancel.cancelled() => true,
                };
                if cancelled {
                    s.emitter.emit(retry_end_failed(attempt, "Retry cancelled")).await;
                    aborted = true;
                    break;
                }
            }
        }
    }
    s.emitter.emit(AgentEvent::AgentSettled { aborted, usage: totals }).await;
    s.emitter.send(Internal::RunFinished { run_id: s.run_id }).await;
}

fn retry_end_failed(attempt: u32, error: &str) -> AgentEvent {
    AgentEvent::AutoRetryEnd { success: false, attempt, final_error: Some(error.to_string()) }
}

async fn take_queued(s: &RunSetup, kind: QueueKind) -> Vec<AgentMessage> {
    let (tx, rx) = oneshot::channel();
    s.emitter.send(Internal::TakeQueued { kind, reply: tx }).await;
    rx.await.unwrap_or_default()
}

/// The conversation now, from the actor that owns it (every event sent
/// before this request is already in it).
async fn context(s: &RunSetup) -> Vec<AgentMessage> {
    let (tx, rx) = oneshot::channel();
    s.emitter.send(Internal::Context { reply: tx }).await;
    rx.await.unwrap_or_default()
}

async fn emit_message(s: &mut RunSetup, message: AgentMessage, new_messages: &mut Vec<AgentMessage>) {
    s.emitter.emit(AgentEvent::MessageStart { message: message.clone() }).await;
    s.emitter.emit(AgentEvent::MessageEnd { message: message.clone() }).await;
    new_messages.push(message);
}

/// One agent_start … (turns) sequence; the caller emits `agent_end`.
async fn low_level_run(
    s: &mut RunSetup,
    initial: Vec<AgentMessage>,
    retry_attempt: u32,
    totals: &mut Usage,
) -> (Vec<AgentMessage>, LowLevelEnd) {
    s.emitter.emit(AgentEvent::AgentStart).await;
    let mut new_messages = Vec::new();
    let mut pending = initial;
    let mut pending_kind = Pending::Prompt;
    let mut retry_end_pending = retry_attempt > 0;
    loop {
        s.emitter.emit(AgentEvent::TurnStart).await;
        if pending_kind != Pending::Prompt && !pending.is_empty() {
            s.emitter.send(Internal::QueueChanged).await;
        }
        for message in std::mem::take(&mut pending) {
            emit_message(s, message, &mut new_messages).await;
        }
        if pending_kind != Pending::Steering && !s.cancel.is_cancelled() {
            let steering = take_queued(s, QueueKind::Steering).await;
            if !steering.is_empty() {
                s.emitter.send(Internal::QueueChanged).await;
                for message in steering {
                    emit_message(s, message, &mut new_messages).await;
                }
            }
        }

        let assistant = if s.cancel.is_cancelled() {
            aborted_assistant(s).await
        } else {
            let request = ProviderRequest {
                model: s.model.clone(),
                system_prompt: s.system_prompt.clone(),
                messages: context(s).await,
                tools: s.tool_specs.clone(),
                thinking_level: s.thinking,
                api_key: s.api_key.clone(),
                headers: s.headers.clone(),
                max_tokens: None,
                session_id: Some(s.session_id.clone()),
            };
            let outcome = stream_assistant(
                Some(&s.emitter),
                s.provider.clone(),
                request,
                s.cancel.clone(),
                &s.model,
                s.api_key.as_deref(),
            )
            .await;
            if let Some(error) = outcome.error {
                let message = AgentMessage::Assistant(outcome.message);
                totals.add(&message.as_assistant().map(|a| a.usage.clone()).unwrap_or_default());
                new_messages.push(message.clone());
                s.emitter.emit(AgentEvent::TurnEnd { message: message.clone(), tool_results: Vec::new() }).await;
                let end = if error.kind == ProviderErrorKind::Aborted {
                    LowLevelEnd::Aborted
                } else {
                    LowLevelEnd::Failed { error, message: Box::new(message) }
                };
                return (new_messages, end);
            }
            outcome.message
        };
        totals.add(&assistant.usage);
        let aborted = assistant.stop_reason == StopReason::Aborted;
        if !aborted {
            if retry_end_pending {
                retry_end_pending = false;
                s.emitter
                    .emit(AgentEvent::AutoRetryEnd { success: true, attempt: retry_attempt, final_error: None })
                    .await;
            }
            s.emitter
                .emit(AgentEvent::ContextUsage(ContextUsage {
                    tokens: assistant.usage.context_tokens(),
                    context_window: s.model.context_window,
                }))
                .await;
        }
        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        let message = AgentMessage::Assistant(assistant);
        new_messages.push(message.clone());
        if aborted {
            s.emitter.emit(AgentEvent::TurnEnd { message, tool_results: Vec::new() }).await;
            return (new_messages, LowLevelEnd::Aborted);
        }

        if !calls.is_empty() {
            let mut ctx = s.tool_ctx.clone();
            ctx.cancel = s.cancel.child_token();
            let results = execute_tool_calls(&s.emitter, &s.tools, &calls, &ctx).await;
            let mut result_messages = Vec::with_capacity(results.len());
            for result in results {
                let result = AgentMessage::ToolResult(result);
                emit_message(s, result.clone(), &mut new_messages).await;
                result_messages.push(result);
            }
            s.emitter.emit(AgentEvent::TurnEnd { message, tool_results: result_messages }).await;
            RunCompaction::between_turns(s).await;
            continue;
        }

        s.emitter.emit(AgentEvent::TurnEnd { message, tool_results: Vec::new() }).await;
        if s.cancel.is_cancelled() {
            return (new_messages, LowLevelEnd::Aborted);
        }
        let steering = take_queued(s, QueueKind::Steering).await;
        if !steering.is_empty() {
            pending = steering;
            pending_kind = Pending::Steering;
            continue;
        }
        let follow_up = take_queued(s, QueueKind::FollowUp).await;
        if !follow_up.is_empty() {
            pending = follow_up;
            pending_kind = Pending::FollowUp;
            continue;
        }
        return (new_messages, LowLevelEnd::Done);
    }
}

/// The assistant message that ends a run aborted before its next model call.
async fn aborted_assistant(s: &RunSetup) -> AssistantMessage {
    let message = AssistantMessage {
        content: Vec::new(),
        api: s.model.api.clone(),
        provider: s.model.provider.clone(),
        model: s.model.id.clone(),
        usage: Usage::default(),
        stop_reason: StopReason::Aborted,
        timestamp: now_ms(),
        response_id: None,
        error_message: Some(ABORTED_BETWEEN_TURNS.to_string()),
        extra: Map::new(),
    };
    s.emitter.emit(AgentEvent::MessageStart { message: AgentMessage::Assistant(message.clone()) }).await;
    s.emitter.emit(AgentEvent::MessageEnd { message: AgentMessage::Assistant(message.clone()) }).await;
    message
}
