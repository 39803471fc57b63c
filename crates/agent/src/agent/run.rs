//! The run task: one prompt's whole session-level run — turns (model call,
//! tools), steering and follow-up delivery, auto-retry — ending in `agent_settled`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::cache_warmer::{WarmMsg, WarmableRequest};
use super::compaction_msg::{CheckOutcome, CheckPoint, CompactionJob, CompactionMsg};
use super::internal::{Delivered, Emitter, Internal, QueueKind};
use super::tool_exec::execute_tool_calls;
use crate::config::settings::RetrySettings;
use crate::event::{AgentEvent, ContextUsage};
use crate::message::{AgentMessage, AssistantMessage, StopReason, ToolCall, Usage};
use crate::model::{Model, ThinkingBudgets, ThinkingLevel};
use crate::provider::{ApiOptions, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ToolSpec};
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
    /// The prompt as the `before_agent_start` hooks see it (and may replace).
    pub system_prompt: String,
    /// The settings' `images.blockImages`: requests carry a note for each image.
    pub block_images: bool,
    /// pi's `BuildSystemPromptOptions` of the run: before the
    /// `before_agent_start` hooks, the session's (only when an extension
    /// listens); after them, the ones they changed (`None`: unchanged).
    pub prompt_options: Option<serde_json::Value>,
    /// The prompt's sections for the run's tools (system messages record them).
    pub sections: crate::system_prompt::Sections,
    /// Sections added for this run (`mcp_servers`), text without tags.
    pub extra_sections: Vec<(String, String)>,
    /// A prompt an extension forced: sent instead of the sections' text,
    /// while the system messages keep recording the sections.
    pub forced_prompt: Option<String>,
    pub tools: ToolRegistry,
    pub tool_specs: Vec<ToolSpec>,
    /// Inactive `codemode` / `deferred` tools: codemode and `tool_search` reach them.
    pub indirect: Vec<Arc<dyn crate::tools::Tool>>,
    /// The names of the active tools, in order (the MCP tools among them are declared).
    pub active: Arc<Vec<String>>,
    pub tool_ctx: ToolContext,
    /// New messages that start the run (the prompt); empty for a continuation.
    pub initial: Vec<AgentMessage>,
    pub retry: RetrySettings,
    /// Settings' `thinkingBudgets`, sent with every model request of the run.
    pub thinking_budgets: ThinkingBudgets,
    pub retry_enabled: Arc<AtomicBool>,
    /// For the `before_agent_start` and `context` hooks.
    pub extensions: crate::extensions::Extensions,
    /// Bumped when an extension changes the tools (`setActiveTools`, a new
    /// registration): the next model request asks the actor for them.
    pub tools_version: Arc<std::sync::atomic::AtomicU64>,
    /// The version `tools` and `tool_specs` are of.
    pub tools_seen: u64,
    /// MCP tools, `codemode` and `tool_search` join `tools` at each model call.
    pub mcp: Option<Arc<crate::mcp::McpManager>>,
    pub reach: crate::mcp::turn::Reach,
    /// `models.*` of codemode scripts: the session's catalog and credentials.
    pub models: Option<Arc<pi_mcp::codemode::ModelsHost>>,
    /// A virtual model is selected: each request is routed first.
    pub router: Option<super::virtual_route::VirtualRouter>,
}

/// MCP before a prompt's first turn: at the session's first prompt, wait
/// for `direct` servers; then add the `<mcp_servers>` section.
async fn mcp_before_prompt(s: &mut RunSetup) {
    let Some(mcp) = &s.mcp else { return };
    if let Some(note) = mcp.startup_wait().await {
        // pi's note when a `direct` server was still connecting once the wait ended.
        let kind =
            crate::event::ExtensionUiKind::Notify { message: note.to_string(), notify_type: Some("info".into()) };
        let extension = crate::mcp::command::NAME.to_string();
        let request = crate::event::ExtensionUiRequest { id: uuid::Uuid::new_v4().to_string(), extension, kind };
        s.emitter.emit(AgentEvent::ExtensionUiRequest(Box::new(request))).await;
    }
    // The `mcp_servers` section, recorded by the system messages.
    if let Some(section) = mcp.servers_section() {
        s.extra_sections.push(("mcp_servers".to_string(), section));
    }
}

/// How one low-level run (agent_start … agent_end) ended.
enum LowLevelEnd {
    Done,
    Aborted,
    Failed { error: ProviderError, message: Box<AgentMessage> },
}

/// Where the messages injected at a turn start came from.
#[derive(PartialEq, Eq, Default)]
enum Pending {
    #[default]
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
    // pi awaits `message_end` handlers, which may replace each finalized message.
    s.emitter = s.emitter.with_message_end_hooks(s.extensions.clone(), s.cancel.clone());
    if !initial.is_empty() {
        mcp_before_prompt(&mut s).await;
        s.system_prompt = crate::system_prompt::render(&super::system_update::desired(&s));
        let extensions = s.extensions.clone();
        if let Some(mut options) = s.prompt_options.take() {
            // The run's own sections (`mcp_servers`) are among the options' `sections`.
            for (name, text) in &s.extra_sections {
                options["sections"][name.as_str()] = serde_json::Value::String(text.clone());
            }
            let base = options.clone();
            extensions.before_agent_start(&mut initial, &mut options, &s.system_prompt, &s.cancel).await;
            super::system_update::apply_prompt_options(&mut s, options, &base);
        }
        super::system_update::note_forced_prompt(&mut s);
        compaction.before_prompt(&mut s).await;
    }
    // The restored tools a `before_agent_start` handler registered are the run's.
    s.emitter.send(Internal::RunPrepared).await;
    // Queued messages a fresh low-level run starts with (pi's `continue()`).
    let mut queued = Queued::default();
    // Only the prompt's low-level run was prepared (pi's `_prepareRun`);
    // the others are pi's `agent.continue()`.
    let mut prepared = !initial.is_empty();
    loop {
        let start = (std::mem::take(&mut initial), std::mem::take(&mut queued));
        let (new_messages, end) = low_level_run(&mut s, start, prepared, attempt, &mut totals).await;
        prepared = false;
        match end {
            LowLevelEnd::Done => {
                agent_end(&s, AgentEvent::AgentEnd { messages: new_messages.clone(), will_retry: false }).await;
                match compaction.after_run(&mut s, &new_messages).await {
                    AfterRun::Continue(next) => {
                        (initial, attempt) = (next, 0);
                        continue;
                    }
                    AfterRun::Settle { aborted: a } => match settle_or_continue(&s, a, &new_messages).await {
                        Ok(a) => aborted = a,
                        Err(next) => {
                            (queued, attempt) = (next, 0);
                            continue;
                        }
                    },
                }
                break;
            }
            LowLevelEnd::Aborted => {
                agent_end(&s, AgentEvent::AgentEnd { messages: new_messages, will_retry: false }).await;
                if attempt > 0 {
                    s.emitter.emit(retry_end_failed(attempt, "Request was aborted")).await;
                }
                aborted = true;
                break;
            }
            LowLevelEnd::Failed { error, message } => {
                let max = s.retry.max_retries;
                let will_retry = error.is_retryable() && s.retry_enabled.load(Ordering::SeqCst) && attempt < max;
                agent_end(&s, AgentEvent::AgentEnd { messages: new_messages.clone(), will_retry }).await;
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
                        AfterRun::Settle { aborted: a } => match settle_or_continue(&s, a, &new_messages).await {
                            Ok(a) => aborted = a,
                            Err(next) => {
                                (queued, attempt) = (next, 0);
                                continue;
                            }
                        },
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
                if let Some(router) = &mut s.router {
                    router.note_failed(&message);
                }
                s.emitter.send(Internal::RetractFromContext { message }).await;
                // `abort` ends the run as aborted; `abort_retry` only stops
                // retrying (pi 1.6.0 settles with `aborted: false` then).
                let cancelled = tokio::select! {
                    _ = tokio::time::sleep(delay) => None,
                    _ = s.cancel.cancelled() => Some(true),
                    _ = s.retry_cancel.cancelled() => Some(false),
                };
                if let Some(by_abort) = cancelled {
                    s.emitter.emit(retry_end_failed(attempt, "Retry cancelled")).await;
                    aborted = by_abort;
                    break;
                }
            }
        }
    }
    s.emitter.send(Internal::RunSettling { run_id: s.run_id }).await;
    s.emitter.emit(AgentEvent::AgentSettled { aborted, usage: Box::new(totals) }).await;
    s.emitter.send(Internal::RunFinished { run_id: s.run_id }).await;
}

/// What a fresh low-level run starts with: the queued messages it takes
/// first, and from which queue (empty: the conversation as it is).
#[derive(Default)]
struct Queued(Vec<Delivered>, Pending);

/// pi's end of a low-level run (skipped when it was aborted): messages
/// queued since its last turn (by `agent_end` handlers) start a fresh run
/// before anything else, as pi's `_handlePostAgentRun`; then the
/// `agent_before_settle` boundary. `Ok(aborted)` settles, `Err` starts one
/// more low-level run with what it holds.
async fn settle_or_continue(s: &RunSetup, aborted: bool, new_messages: &[AgentMessage]) -> Result<bool, Queued> {
    if aborted {
        return Ok(true);
    }
    if let Some(queued) = take_next_queued(s).await {
        return Err(queued);
    }
    match super::settle::before_settle(&s.emitter, &s.extensions, &s.cancel, new_messages).await {
        super::settle::Boundary::Continue => Err(take_next_queued(s).await.unwrap_or_default()),
        super::settle::Boundary::Settle => Ok(false),
        super::settle::Boundary::Aborted => Ok(true),
    }
}

/// What pi's `continue()` takes from the queues after an answer: the
/// steering messages, else the follow-ups (as the queue's mode delivers them).
async fn take_next_queued(s: &RunSetup) -> Option<Queued> {
    let steering = take_queued(s, QueueKind::Steering).await;
    if !steering.is_empty() {
        return Some(Queued(steering, Pending::Steering));
    }
    let follow_up = take_queued(s, QueueKind::FollowUp).await;
    (!follow_up.is_empty()).then_some(Queued(follow_up, Pending::FollowUp))
}

/// `agent_end`: pi awaits the extensions' handlers before the event goes
/// out and the run goes on or settles, so what they queue (`sendMessage`,
/// `sendUserMessage` as a follow-up) is still the run's.
async fn agent_end(s: &RunSetup, event: AgentEvent) {
    if let Some(payload) = crate::extensions::protocol::event_payload(&event).map(|(_, payload)| payload)
        && s.extensions.listens(crate::extensions::AGENT_END_HOOK)
    {
        // The events before it reach the extensions first.
        s.emitter.flush().await;
        s.extensions.agent_end(payload).await;
    }
    s.emitter.emit(event).await;
}

fn retry_end_failed(attempt: u32, error: &str) -> AgentEvent {
    AgentEvent::AutoRetryEnd { success: false, attempt, final_error: Some(error.to_string()) }
}

/// Take the actor's current tools when an extension changed them since the
/// last request (pi: `setActiveTools` during a tool applies to the next request).
async fn refresh_tools(s: &mut RunSetup) {
    let version = s.tools_version.load(Ordering::SeqCst);
    if version == s.tools_seen && !new_direct_mcp_tools(s) {
        return;
    }
    let (tx, rx) = oneshot::channel();
    s.emitter.send(Internal::CurrentTools { reply: tx }).await;
    if let Ok(super::internal::ToolSet(tools, specs, sections, indirect, active)) = rx.await {
        s.tools = tools;
        s.active = active;
        s.tool_specs = specs;
        s.indirect = indirect;
        s.sections = sections;
        s.tools_seen = version;
        super::system_update::retool_prompt_options(s);
    }
}

/// A server's `direct` tool is not among the run's active tools: one that
/// registered since is activated (pi activates it as it registers) when the
/// actor is asked for the tools.
fn new_direct_mcp_tools(s: &RunSetup) -> bool {
    let Some(mcp) = &s.mcp else { return false };
    mcp.tools().iter().any(|t| {
        let name = t.tool.name();
        t.exposure == crate::mcp::Exposure::Direct && mcp.may_declare(name) && !s.active.iter().any(|a| a == name)
    })
}

async fn take_queued(s: &RunSetup, kind: QueueKind) -> Vec<Delivered> {
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

/// Queued messages into the turn, each after the `queue_update` without it
/// (none for an extension's custom message, which pi's queues do not list).
async fn deliver(s: &mut RunSetup, delivered: Vec<Delivered>, new_messages: &mut Vec<AgentMessage>) {
    for Delivered { message, steering, follow_up } in delivered {
        if !matches!(message, AgentMessage::Custom(_)) {
            s.emitter.emit(AgentEvent::QueueUpdate { steering, follow_up }).await;
        }
        emit_message(s, message, new_messages).await;
    }
}

/// Under a virtual selection, pi fits the conversation's images into the
/// limits of the model its latest answer came from (`_limitsModel()`): the
/// latest among `messages`; without one, the virtual model's own when
/// `or_selection`, else the limits stay.
fn fit_images_to_answer(s: &mut RunSetup, messages: &[AgentMessage], or_selection: bool) {
    let (Some(router), Some(_)) = (&mut s.router, s.tool_ctx.result_image_resize) else { return };
    let model = match router.answered_by(messages) {
        Some(model) => model,
        None if or_selection => router.virtual_model().clone(),
        None => return,
    };
    s.tool_ctx.result_image_resize = Some(crate::tools::image::Limits::of_model(&model));
}

/// One message into the turn; a user message's images prepared first, as pi
/// prepares a prompt's (after `before_agent_start`) and a queued one's.
async fn emit_message(s: &mut RunSetup, message: AgentMessage, new_messages: &mut Vec<AgentMessage>) {
    let message = super::input_images::user_message_prepared(message, s.tool_ctx.result_image_resize).await;
    s.emitter.emit(AgentEvent::MessageStart { message: Box::new(message.clone()) }).await;
    s.emitter.emit(AgentEvent::MessageEnd { message: Box::new(message.clone()) }).await;
    new_messages.push(s.emitter.replaced(message));
}

/// One agent_start … (turns) sequence; the caller emits `agent_end`.
/// `prepared`: the run's prompt was prepared for it; otherwise (pi's
/// `agent.continue()`) its first request declares the tools' changes only,
/// and the prompt's sections are brought up to date from its next turn on.
async fn low_level_run(
    s: &mut RunSetup,
    (initial, Queued(queued, queued_kind)): (Vec<AgentMessage>, Queued),
    prepared: bool,
    retry_attempt: u32,
    totals: &mut Usage,
) -> (Vec<AgentMessage>, LowLevelEnd) {
    s.emitter.emit(AgentEvent::AgentStart).await;
    let mut new_messages = Vec::new();
    let mut pending: Vec<Delivered> = queued;
    let mut prompt = initial;
    let mut pending_kind = queued_kind;
    let mut retry_end_pending = retry_attempt > 0;
    // pi's `turnIndex`: turns ended so far in this low-level run.
    let mut turn_index: u32 = 0;
    loop {
        s.emitter.emit(AgentEvent::TurnStart).await;
        // The conversation as the actor has it (none needed once aborted),
        // the turn's tools, and the system message declaring what changed
        // in the prompt and tools, before the turn's new messages.
        let mut context = if s.cancel.is_cancelled() {
            Vec::new()
        } else {
            refresh_tools(s).await;
            context(s).await
        };
        let turn_tools = |s: &RunSetup, context: &[AgentMessage]| {
            crate::mcp::turn::turn_tools(
                &s.tools,
                &s.tool_specs,
                &s.indirect,
                &s.active,
                s.mcp.as_ref(),
                s.reach,
                context,
                s.models.as_ref(),
            )
        };
        let mut turn = turn_tools(s, &context);
        // As pi's MCP extension on `turn_start`: servers another process signed
        // in to connect again. pi took this turn's tools before the event, so
        // the request offers those; what the servers brought may run at once.
        let reconnected = match &s.mcp {
            Some(mcp) if !s.cancel.is_cancelled() => mcp.reconnect_signed_in().await,
            _ => false,
        };
        if reconnected {
            // Their `direct` tools are activated as they register.
            refresh_tools(s).await;
            turn.registry = turn_tools(s, &context).registry;
        }
        fit_images_to_answer(s, &context, true);
        let first_new = new_messages.len();
        let update = if prepared || turn_index > 0 {
            super::system_update::update(s, &context, &turn.specs)
        } else {
            super::system_update::tools_update(s, &context, &turn.specs)
        };
        if !s.cancel.is_cancelled()
            && let Some(update) = update
        {
            emit_message(s, AgentMessage::System(update), &mut new_messages).await;
        }
        for message in std::mem::take(&mut prompt) {
            emit_message(s, message, &mut new_messages).await;
        }
        deliver(s, std::mem::take(&mut pending), &mut new_messages).await;
        if pending_kind != Pending::Steering && !s.cancel.is_cancelled() {
            let steering = take_queued(s, QueueKind::Steering).await;
            deliver(s, steering, &mut new_messages).await;
        }
        // What the actor appended meanwhile: the messages just emitted.
        if !s.cancel.is_cancelled() {
            context.extend_from_slice(&new_messages[first_new..]);
        }

        let assistant = if s.cancel.is_cancelled() {
            aborted_assistant(s).await
        } else {
            let messages = match s.extensions.context(&context, &s.cancel).await {
                Some(replaced) => replaced,
                None => context,
            };
            // The whole transcript, system messages included: what comes back is the request.
            let mut messages = match s.extensions.context_with_system(&messages, &s.cancel).await {
                Some(replaced) => replaced,
                None => messages,
            };
            if let Some(router) = &mut s.router {
                // The request, and its assistant message, name the physical model.
                match router.route(&messages, retry_end_pending, &s.cancel).await {
                    Ok(routed) => {
                        (s.model, s.thinking, s.provider) = (routed.model, routed.thinking, routed.provider);
                        (s.api_key, s.headers) = (routed.api_key, routed.headers);
                    }
                    Err(error) => {
                        s.model = router.virtual_model().clone();
                        s.provider = super::virtual_route::unrouted(error);
                    }
                }
            }
            if s.block_images {
                messages = super::input_images::without_images(messages);
            }
            let request = ProviderRequest {
                model: s.model.clone(),
                system_prompt: super::system_update::prompt(s, &messages),
                messages,
                tools: turn.offered(),
                thinking_level: s.thinking,
                api_key: s.api_key.clone(),
                headers: s.headers.clone(),
                max_tokens: None,
                session_id: Some(s.session_id.clone()),
                credential: None,
                env: Default::default(),
                api_options: ApiOptions { thinking_budgets: s.thinking_budgets, ..Default::default() },
            };
            // The session's prompt cache entry is now this request's: keep it warm.
            let warmable =
                crate::provider::cache_warming::prompt_cache_ttl(&s.model, request.api_options.cache_retention)
                    .map(|_| Box::new(WarmableRequest { provider: s.provider.clone(), request: request.clone() }));
            s.emitter.send(Internal::CacheWarming(Box::new(WarmMsg::Requested(warmable)))).await;
            // Extensions listening to pi's provider events watch the request.
            let observer = s.extensions.request_observer(&s.model);
            let outcome = crate::provider::observe::observed(
                observer,
                stream_assistant(
                    Some(&s.emitter),
                    s.provider.clone(),
                    request,
                    s.cancel.clone(),
                    &s.model,
                    s.api_key.as_deref(),
                ),
            )
            .await;
            let outcome_message = assistant_as_ended(s, outcome.message);
            if let Some(error) = outcome.error {
                let message = AgentMessage::Assistant(outcome_message);
                totals.add(&message.as_assistant().map(|a| a.usage.clone()).unwrap_or_default());
                new_messages.push(message.clone());
                turn_boundary(s, turn_index, &message, &[]).await;
                s.emitter
                    .emit(AgentEvent::TurnEnd { message: Box::new(message.clone()), tool_results: Vec::new() })
                    .await;
                let end = if error.kind == ProviderErrorKind::Aborted {
                    LowLevelEnd::Aborted
                } else {
                    LowLevelEnd::Failed { error, message: Box::new(message) }
                };
                return (new_messages, end);
            }
            outcome_message
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
        let cut_off = assistant.stop_reason == StopReason::Length;
        let message = AgentMessage::Assistant(assistant);
        fit_images_to_answer(s, std::slice::from_ref(&message), false);
        new_messages.push(message.clone());
        if aborted {
            turn_boundary(s, turn_index, &message, &[]).await;
            s.emitter.emit(AgentEvent::TurnEnd { message: Box::new(message), tool_results: Vec::new() }).await;
            return (new_messages, LowLevelEnd::Aborted);
        }

        // A turn with tool calls goes on to the next model request, unless
        // every tool result asked to end the run there (pi's `terminate`).
        let (tool_results, next_turn) = if calls.is_empty() {
            (Vec::new(), false)
        } else {
            let mut ctx = s.tool_ctx.clone();
            ctx.cancel = s.cancel.child_token();
            let batch = execute_tool_calls(&s.emitter, &turn.registry, &calls, &ctx, cut_off).await;
            let mut result_messages = Vec::with_capacity(batch.results.len());
            for result in batch.results {
                let result = AgentMessage::ToolResult(result);
                if batch.announced {
                    new_messages.push(result.clone());
                } else {
                    emit_message(s, result.clone(), &mut new_messages).await;
                }
                result_messages.push(result);
            }
            (result_messages, !batch.terminate)
        };
        let wants_more = turn_boundary(s, turn_index, &message, &tool_results).await;
        turn_index += 1;
        s.emitter.emit(AgentEvent::TurnEnd { message: Box::new(message), tool_results }).await;
        if next_turn {
            RunCompaction::between_turns(s).await;
            continue;
        }
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
        if wants_more {
            // A `turn_end` handler's continuation: one request from the conversation as it is.
            pending_kind = Pending::Prompt;
            continue;
        }
        return (new_messages, LowLevelEnd::Done);
    }
}

/// pi's `turn_end` boundary for the turn that `message` (and `tool_results`)
/// closed: whether a handler asked for one more model request.
async fn turn_boundary(s: &RunSetup, turn_index: u32, message: &AgentMessage, tool_results: &[AgentMessage]) -> bool {
    let turn = crate::extensions::boundary::TurnEnd { turn_index, message, tool_results };
    super::settle::turn_end(&s.emitter, &s.extensions, &s.cancel, turn).await
}

/// The assistant message that ends a run aborted before its next model call.
async fn aborted_assistant(s: &RunSetup) -> AssistantMessage {
    let mut message = AssistantMessage::empty(&s.model, StopReason::Aborted);
    message.error_message = Some(ABORTED_BETWEEN_TURNS.to_string());
    message.duration_ms = Some(0);
    message.thinking_level = Some(s.thinking.as_str().to_string());
    s.emitter.emit(AgentEvent::MessageStart { message: Box::new(AgentMessage::Assistant(message.clone())) }).await;
    s.emitter.emit(AgentEvent::MessageEnd { message: Box::new(AgentMessage::Assistant(message.clone())) }).await;
    assistant_as_ended(s, message)
}

/// The assistant message `message` as the `message_end` handlers left it.
fn assistant_as_ended(s: &RunSetup, message: AssistantMessage) -> AssistantMessage {
    match s.emitter.replaced(AgentMessage::Assistant(message.clone())) {
        AgentMessage::Assistant(replaced) => replaced,
        _ => message,
    }
}

// ----- compaction, the run's side -------------------------------------------

/// What a run does after its post-run compaction check.
pub(crate) enum AfterRun {
    /// Start another low-level run with these messages (empty: retry the prompt).
    Continue(Vec<AgentMessage>),
    /// The run is over.
    Settle { aborted: bool },
}

/// Compaction state of one session-level run: whether an overflow recovery
/// was tried since the last good answer (pi `_overflowRecoveryAttempted`).
#[derive(Debug, Default)]
pub(crate) struct RunCompaction {
    overflow_attempted: bool,
}

impl RunCompaction {
    async fn check(&self, s: &RunSetup, at: CheckPoint, last: Option<AssistantMessage>) -> CheckOutcome {
        let (reply, answer) = oneshot::channel();
        let msg =
            CompactionMsg::Check { at, last: last.map(Box::new), recovery_attempted: self.overflow_attempted, reply };
        s.emitter.send(Internal::Compaction(Box::new(msg))).await;
        answer.await.unwrap_or(CheckOutcome { job: None, recovery_started: false })
    }

    /// Write the summaries; the actor adopts the compacted context. True on success.
    async fn run_job(s: &mut RunSetup, job: CompactionJob) -> bool {
        let outcome = job.run(&s.emitter).await;
        let (reply, answer) = oneshot::channel();
        let msg = CompactionMsg::Finished { job: Box::new(job), outcome, reply: Some(reply) };
        s.emitter.send(Internal::Compaction(Box::new(msg))).await;
        answer.await.unwrap_or(false)
    }

    /// Before a prompt's first turn: compact if the previous answer left the
    /// context over the threshold (or overflowed without recovery).
    pub(crate) async fn before_prompt(&mut self, s: &mut RunSetup) {
        if let Some(job) = self.check(s, CheckPoint::BeforePrompt, None).await.job {
            Self::run_job(s, job).await;
        }
    }

    /// After tool results, before the next model call: threshold compaction.
    pub(crate) async fn between_turns(s: &mut RunSetup) {
        if s.cancel.is_cancelled() {
            return;
        }
        if let Some(job) = RunCompaction::default().check(s, CheckPoint::BetweenTurns, None).await.job {
            Self::run_job(s, job).await;
        }
    }

    /// After a low-level run (its `agent_end` emitted): overflow recovery
    /// (compact, then retry the prompt once) or threshold compaction.
    pub(crate) async fn after_run(&mut self, s: &mut RunSetup, new_messages: &[AgentMessage]) -> AfterRun {
        if s.cancel.is_cancelled() {
            return AfterRun::Settle { aborted: true };
        }
        for m in new_messages {
            match m {
                AgentMessage::User(_) => self.overflow_attempted = false,
                AgentMessage::Assistant(a) if !matches!(a.stop_reason, StopReason::Error | StopReason::Length) => {
                    self.overflow_attempted = false
                }
                _ => {}
            }
        }
        let Some(last) = new_messages.iter().rev().find_map(|m| m.as_assistant().cloned()) else {
            return AfterRun::Settle { aborted: false };
        };
        let outcome = self.check(s, CheckPoint::AfterRun, Some(last)).await;
        if outcome.recovery_started {
            self.overflow_attempted = true;
        }
        let Some(job) = outcome.job else { return AfterRun::Settle { aborted: false } };
        let will_retry = job.will_retry;
        let compacted = Self::run_job(s, job).await;
        if s.cancel.is_cancelled() {
            return AfterRun::Settle { aborted: true };
        }
        if !compacted {
            return AfterRun::Settle { aborted: false };
        }
        if will_retry {
            return AfterRun::Continue(Vec::new());
        }
        // Messages queued during the compaction get a run of their own.
        for kind in [QueueKind::Steering, QueueKind::FollowUp] {
            let (reply, answer) = oneshot::channel();
            s.emitter.send(Internal::TakeQueued { kind, reply }).await;
            let queued: Vec<AgentMessage> = answer.await.unwrap_or_default().into_iter().map(|d| d.message).collect();
            if !queued.is_empty() {
                s.emitter.send(Internal::QueueChanged).await;
                return AfterRun::Continue(queued);
            }
        }
        AfterRun::Settle { aborted: false }
    }
}
