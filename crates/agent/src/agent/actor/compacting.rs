//! Compaction in the agent (pi 1.6 `AgentSession.compact` / `_checkCompaction`
//! / `_runAutoCompaction`): the manual `compact` op, and automatic compaction
//! decided by the actor at three points of a run (before a prompt, between
//! turns, after a low-level run: threshold, overflow recovery).
//!
//! The actor prepares a [`CompactionJob`] (what to summarise, with which
//! model) and emits `compaction_start`; the summaries are written off the
//! actor (a task for `compact`, the run task for automatic compaction); the
//! actor then appends the `compaction` entry, rebuilds the context and emits
//! `compaction_end`. The run side is `RunCompaction` in `run.rs`; what both
//! share is in `compaction_msg.rs`.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::agent::compaction_msg::{
    CheckOutcome, CheckPoint, CompactionEnd, CompactionJob, CompactionMsg, CompactionState, JobOutput,
};
use crate::agent::internal::Internal;
use crate::compaction::estimate::{estimate_context, estimate_system_prompt};
use crate::compaction::{NotCompactable, Projection, Summarizer, SummaryError, prepare, should_compact};
use crate::error::{CoreError, ErrorKind};
use crate::event::{AgentEvent, CompactionReason, CompactionResult};
use crate::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason};
use crate::op::{Reply, RequestTag};
use crate::provider::classify::is_context_overflow;
use crate::session::SessionEntry;

const OVERFLOW_RECOVERY_EXHAUSTED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";
const LENGTH_RECOVERY_EXHAUSTED: &str = "Truncated response recovery failed after one compact-and-retry attempt.";
/// Error of a compaction that was aborted.
const CANCELLED: &str = "Compaction cancelled";

/// Why a job could not be prepared.
enum JobError {
    /// Nothing to cut (automatic compaction then stays silent).
    NotCompactable(NotCompactable),
    /// The model cannot be called.
    Unavailable(CoreError),
}

pub(super) fn failure_prefix(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Manual => "Compaction failed: ",
        CompactionReason::Threshold => "Auto-compaction failed: ",
        CompactionReason::Overflow => "Context overflow recovery failed: ",
    }
}

fn end_event(reason: CompactionReason, aborted: bool, error: Option<String>) -> AgentEvent {
    AgentEvent::CompactionEnd { reason, result: None, aborted, will_retry: false, error_message: error }
}

fn iso_ms(timestamp: Option<&str>) -> Option<i64> {
    timestamp.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.timestamp_millis())
}

impl Agent {
    /// True while a compaction (manual or automatic) runs.
    pub(super) fn is_compacting(&self) -> bool {
        self.activity.work().is_compacting()
    }

    /// Estimated tokens of our system prompt and tool declarations.
    pub(super) fn system_tokens(&self) -> u64 {
        estimate_system_prompt(&self.system_prompt(), &self.active_tool_set().1)
    }

    fn prepare_job(
        &self,
        reason: CompactionReason,
        will_retry: bool,
        custom_instructions: Option<String>,
        cancel: CancellationToken,
    ) -> Result<CompactionJob, JobError> {
        let system_tokens = self.system_tokens();
        let projection = Projection::of(self.session.record());
        let (_, keep) = self.prefs.settings().compaction.tokens_for(&self.models.model().full_id());
        let prep = prepare(&projection, keep, system_tokens).map_err(JobError::NotCompactable)?;
        self.preflight().map_err(JobError::Unavailable)?;
        let route = self.virtual_router().map(|router| crate::agent::compaction_msg::DirectRoute {
            router: tokio::sync::Mutex::new(router),
            messages: self.session.messages().shared(),
        });
        let provider = match (self.models.provider(), &route) {
            (Some(provider), _) => provider,
            // Replaced by the routed model's before the summary is asked for.
            (None, Some(_)) => crate::agent::virtual_route::unrouted(String::new()),
            (None, None) => {
                let api = &self.models.model().api;
                let error = CoreError::new(ErrorKind::Unsupported, format!("No provider for {api}"));
                return Err(JobError::Unavailable(error));
            }
        };
        let summarizer = self.summarizer(provider);
        let hook = self.compact_hook(&prep, reason, will_retry, custom_instructions.as_deref());
        Ok(CompactionJob {
            reason,
            will_retry,
            prep,
            summarizer,
            custom_instructions,
            cancel,
            system_tokens,
            hook,
            route,
        })
    }

    /// `compact`: `compaction_start`, the summaries in a task, then
    /// `compaction_end` and the reply (see [`Agent::finish_compaction`]).
    pub(super) async fn start_manual_compaction(
        &mut self,
        tag: Option<RequestTag>,
        custom_instructions: Option<String>,
    ) {
        let reason = CompactionReason::Manual;
        self.emit(AgentEvent::CompactionStart { reason }).await;
        let cancel = CancellationToken::new();
        let job = match self.prepare_job(reason, false, custom_instructions, cancel.clone()) {
            Ok(job) => job,
            Err(e) => {
                let error = match e {
                    JobError::NotCompactable(n) => CoreError::new(ErrorKind::InvalidParams, n.message()),
                    JobError::Unavailable(e) => e,
                };
                self.emit(end_event(reason, false, Some(format!("{}{}", failure_prefix(reason), error.message)))).await;
                let hook = self.compaction_failed_event(reason, &error, false);
                let end = CompactionEnd {
                    state: CompactionState::Left(Some(tag)),
                    event: None,
                    reply: Err(error),
                    context: false,
                    run_reply: None,
                };
                self.after_compaction_hook(hook, end).await;
                return;
            }
        };
        self.activity.begin_compaction(cancel, tag);
        let emitter = self.channels.emitter();
        tokio::spawn(async move {
            let outcome = job.run(&emitter).await;
            let msg = CompactionMsg::Finished { job: Box::new(job), outcome, reply: None };
            emitter.send(Internal::Compaction(Box::new(msg))).await;
        });
    }

    /// Start an automatic compaction; `None` (and no event) when nothing can be cut.
    async fn start_auto_compaction(&mut self, reason: CompactionReason, will_retry: bool) -> Option<CompactionJob> {
        let cancel = self.activity.run_cancel_token().unwrap_or_default();
        match self.prepare_job(reason, will_retry, None, cancel) {
            Ok(job) => {
                self.emit(AgentEvent::CompactionStart { reason }).await;
                self.activity.begin_auto_compaction();
                Some(job)
            }
            Err(JobError::NotCompactable(_)) => None,
            Err(JobError::Unavailable(e)) => {
                self.emit(AgentEvent::CompactionStart { reason }).await;
                self.emit(end_event(reason, false, Some(format!("{}{}", failure_prefix(reason), e.message)))).await;
                None
            }
        }
    }

    pub(super) async fn handle_compaction_msg(&mut self, msg: CompactionMsg) {
        match msg {
            CompactionMsg::Check { at, last, recovery_attempted, reply } => {
                let outcome = self.check_compaction(at, last.map(|b| *b), recovery_attempted).await;
                let _ = reply.send(outcome);
            }
            CompactionMsg::Finished { job, outcome, reply } => self.finish_compaction(*job, outcome, reply).await,
            CompactionMsg::Ended(end) => self.complete_compaction(*end).await,
        }
    }

    /// Record a finished compaction: entry, context, `compaction_end`,
    /// replies. True when the compaction took.
    async fn finish_compaction(
        &mut self,
        job: CompactionJob,
        outcome: Result<JobOutput, SummaryError>,
        run_reply: Option<oneshot::Sender<bool>>,
    ) {
        let reason = job.reason;
        let from_extension = outcome.as_ref().is_ok_and(|o| o.from_extension);
        let outcome = if job.cancel.is_cancelled() { Err(SummaryError::Aborted) } else { outcome };
        let recorded = outcome.and_then(|out| {
            self.session
                .compact(&out.summary, &out.first_kept_entry_id, out.tokens_before, out.from_extension)
                .map(|id| (out, id))
                .map_err(|e| {
                    SummaryError::Failed(CoreError::new(
                        ErrorKind::Model,
                        format!("cannot write the compaction entry: {e}"),
                    ))
                })
        });
        let (out, entry_id) = match recorded {
            Ok(recorded) => recorded,
            Err(e) => {
                // pi: compaction_end, then the session_compact_failed handlers, then the reply.
                let manual = self.activity.end_compaction();
                let (event, error) = match e {
                    SummaryError::Aborted => {
                        (end_event(reason, true, None), CoreError::new(ErrorKind::Aborted, CANCELLED))
                    }
                    SummaryError::Failed(error) => {
                        let text = format!("{}{}", failure_prefix(reason), error.message);
                        (end_event(reason, false, Some(text)), error)
                    }
                };
                self.emit(event).await;
                let hook = self.compaction_failed_event(reason, &error, from_extension);
                let end = CompactionEnd {
                    state: CompactionState::Left(manual),
                    event: None,
                    reply: Err(error),
                    context: false,
                    run_reply,
                };
                self.after_compaction_hook(hook, end).await;
                return;
            }
        };
        // pi: the session_compact handlers, then compaction_end and the reply.
        let hook = self.compacted_event(&entry_id, out.from_extension, reason, job.will_retry);
        let summary = out.summary;
        let result = CompactionResult {
            summary: summary.summary,
            first_kept_entry_id: out.first_kept_entry_id,
            tokens_before: out.tokens_before,
            estimated_tokens_after: crate::compaction::estimate_after(self.session.messages(), job.system_tokens),
            usage: summary.usage,
            details: summary.details,
        };
        let event = AgentEvent::CompactionEnd {
            reason,
            result: Some(Box::new(result.clone())),
            aborted: false,
            will_retry: job.will_retry,
            error_message: None,
        };
        let reply = Ok(Reply::Compaction(Box::new(result)));
        let end = CompactionEnd { state: CompactionState::Active, event: Some(event), reply, context: true, run_reply };
        self.after_compaction_hook(hook, end).await;
    }

    /// The session entry id of a message (the latest entry holding it).
    fn entry_id_of(&self, message: &AgentMessage) -> Option<String> {
        self.session.record().entry_id_of_message(message).map(str::to_string)
    }

    /// Hide a failed attempt (and its tool results) from the model context:
    /// pi appends `context_edit` entries with a null replacement.
    async fn omit_attempt(&mut self, attempt: &AssistantMessage) {
        let message = AgentMessage::Assistant(attempt.clone());
        let call_ids: Vec<&str> = attempt
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall(c) => Some(c.id.as_str()),
                _ => None,
            })
            .collect();
        let mut targets = vec![message.clone()];
        if let Some(pos) = self.session.messages().iter().rposition(|m| m == &message) {
            for m in &self.session.messages()[pos + 1..] {
                match m {
                    AgentMessage::Assistant(_) => break,
                    AgentMessage::ToolResult(t) if call_ids.contains(&t.tool_call_id.as_str()) => {
                        targets.push(m.clone())
                    }
                    _ => {}
                }
            }
        }
        for target in targets {
            self.session.retract(&target);
            if let Some(id) = self.entry_id_of(&target) {
                self.hide_from_context(&id).await;
            }
        }
    }

    /// pi's `_checkCompaction` (and the between-turn threshold check).
    async fn check_compaction(
        &mut self,
        at: CheckPoint,
        last: Option<AssistantMessage>,
        recovery_attempted: bool,
    ) -> CheckOutcome {
        let mut out = CheckOutcome { job: None, recovery_started: false };
        let window = self.models.model().context_window;
        if !self.prefs.auto_compaction() || window == 0 {
            return out;
        }
        let (reserve, _) = self.prefs.settings().compaction.tokens_for(&self.models.model().full_id());
        if at == CheckPoint::BetweenTurns {
            let tokens = Projection::of(self.session.record()).estimate_tokens_with(|| self.system_tokens());
            if should_compact(tokens, window, reserve) {
                out.job = self.start_auto_compaction(CompactionReason::Threshold, false).await;
            }
            return out;
        }
        let last = last.or_else(|| self.session.messages().iter().rev().find_map(|m| m.as_assistant().cloned()));
        let Some(last) = last else { return out };
        if at == CheckPoint::AfterRun && last.stop_reason == StopReason::Aborted {
            return out;
        }
        // Only the latest compaction's body is read, not the whole branch.
        let path = self.session.record().branch_positions();
        let compaction_ms = path
            .iter()
            .rev()
            .find(|&&i| self.session.record().type_at(i) == "compaction")
            .map(|&i| iso_ms(self.session.record().entry_at(i).timestamp()).unwrap_or(i64::MAX));
        // pi skips answers from before the latest compaction (`<=`); we use `<`
        // so that a retry started in the same millisecond as the compaction
        // entry still counts as after it.
        if compaction_ms.is_some_and(|ms| last.timestamp < ms) {
            return out;
        }
        let projection = Projection::of(self.session.record());
        match self.overflow_kind(&last, &projection) {
            Some(_) if last.stop_reason == StopReason::Stop => {
                // A complete answer over the window: compact, keep the answer.
                out.job = self.start_auto_compaction(CompactionReason::Overflow, false).await;
                return out;
            }
            Some(overflow) => {
                if recovery_attempted {
                    let error = if overflow { OVERFLOW_RECOVERY_EXHAUSTED } else { LENGTH_RECOVERY_EXHAUSTED };
                    self.emit(end_event(CompactionReason::Overflow, false, Some(error.to_string()))).await;
                    return out;
                }
                out.recovery_started = true;
                self.omit_attempt(&last).await;
                out.job = self.start_auto_compaction(CompactionReason::Overflow, true).await;
                return out;
            }
            None => {}
        }
        let Some(tokens) = self.threshold_tokens(&last, &projection, compaction_ms) else { return out };
        if should_compact(tokens, window, reserve) {
            out.job = self.start_auto_compaction(CompactionReason::Threshold, false).await;
        }
        out
    }

    /// `Some(true)` for a context overflow, `Some(false)` for a recoverable
    /// `length` stop, `None` otherwise (pi's overflow cases 1 and 2).
    fn overflow_kind(&self, last: &AssistantMessage, projection: &Projection) -> Option<bool> {
        let same_model = last.provider == self.models.model().provider && last.model == self.models.model().id;
        if !same_model {
            return None;
        }
        let window = self.models.model().context_window;
        let message = AgentMessage::Assistant(last.clone());
        let entry_id = self.entry_id_of(&message);
        let projected = entry_id.as_deref().is_none_or(|id| {
            projection.entries.iter().any(|e| {
                e.id.as_deref() == Some(id) && e.messages.iter().any(|m| matches!(m, AgentMessage::Assistant(_)))
            })
        });
        // Entries after the answer on the branch: edits and compactions.
        let path = self.session.record().branch_positions();
        let start =
            entry_id.as_deref().and_then(|id| path.iter().position(|&i| self.session.record().id_at(i) == Some(id)));
        let mut has_edit = false;
        let mut has_compaction = false;
        let mut latest_edit_keeps = true;
        for entry in start.map_or(&[][..], |i| &path[i + 1..]).iter().map(|&i| self.session.record().entry_at(i)) {
            match entry {
                SessionEntry::Unknown(v) if entry.type_name() == "context_edit" => {
                    has_edit = true;
                    if v.get("targetId").and_then(|t| t.as_str()) == entry_id.as_deref() {
                        latest_edit_keeps = v.get("replacement").is_some_and(|r| !r.is_null());
                    }
                }
                _ if entry.type_name() == "compaction" => has_compaction = true,
                _ => {}
            }
        }
        let retained = entry_id.is_none() || (!has_compaction && latest_edit_keeps);
        let usage_matches = projected && !has_edit;
        let explicit =
            last.stop_reason == StopReason::Error && last.error_message.as_deref().is_some_and(is_context_overflow);
        let input = last.usage.input + last.usage.cache_read;
        let silent = last.stop_reason == StopReason::Stop && input > window;
        let length_overflow =
            last.stop_reason == StopReason::Length && last.usage.output == 0 && input as f64 >= window as f64 * 0.99;
        let overflow = (explicit && retained) || (usage_matches && (explicit || silent || length_overflow));
        let max = self.models.model().max_tokens;
        let recoverable_length =
            projected && last.stop_reason == StopReason::Length && max > 0 && last.usage.output < max;
        if overflow {
            Some(true)
        } else if recoverable_length {
            Some(false)
        } else {
            None
        }
    }

    /// Context tokens for the threshold rule (pi's case 3); `None` when the
    /// only usage predates the latest compaction.
    fn threshold_tokens(
        &self,
        last: &AssistantMessage,
        projection: &Projection,
        compaction_ms: Option<i64>,
    ) -> Option<u64> {
        let direct = last.usage.context_tokens();
        if projection.entries.iter().any(|e| e.kind == "context_edit") {
            return Some(projection.estimate_tokens_with(|| self.system_tokens()));
        }
        if last.stop_reason == StopReason::Error || direct == 0 {
            let (tokens, usage_at) = estimate_context(self.session.messages());
            return match usage_at {
                Some(i) => {
                    let stale = compaction_ms.is_some_and(|ms| self.session.messages()[i].timestamp() < ms);
                    (!stale).then_some(tokens)
                }
                None => Some(tokens + self.system_tokens()),
            };
        }
        Some(direct)
    }
}

impl Agent {
    /// The current model asked for a summary (compactions and branch summaries).
    pub(super) fn summarizer(&self, provider: std::sync::Arc<dyn crate::provider::Provider>) -> Summarizer {
        Summarizer {
            provider,
            model: self.models.model().clone(),
            thinking: self.models.thinking(),
            api_key: self.models.api_key(),
            headers: self.models.headers(),
            retry: self.prefs.settings().retry,
            retry_enabled: self.prefs.auto_retry(),
        }
    }
}
