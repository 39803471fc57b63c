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
use crate::agent::compaction_decision::{CompactionDecision, DecisionInput, decide};
use crate::agent::compaction_msg::{
    CheckOutcome, CheckPoint, CompactionEnd, CompactionJob, CompactionMsg, CompactionState, JobOutput,
};
use crate::agent::internal::Internal;
use crate::compaction::estimate::estimate_system_prompt;
use crate::compaction::{NotCompactable, Projection, Summarizer, SummaryError, prepare};
use crate::error::{CoreError, ErrorKind};
use crate::event::{AgentEvent, CompactionReason, CompactionResult};
use crate::message::{AgentMessage, AssistantMessage, ContentBlock};
use crate::op::{Reply, RequestTag};

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

    /// pi's `_checkCompaction` (and the between-turn threshold check): the
    /// decision of [`decide`], acted on.
    async fn check_compaction(
        &mut self,
        at: CheckPoint,
        last: Option<AssistantMessage>,
        recovery_attempted: bool,
    ) -> CheckOutcome {
        let mut out = CheckOutcome { job: None, recovery_started: false };
        let decision = {
            let model = self.models.model();
            let (reserve_tokens, _) = self.prefs.settings().compaction.tokens_for(&model.full_id());
            let system_tokens = || self.system_tokens();
            let input = DecisionInput {
                record: self.session.record(),
                messages: self.session.messages(),
                model,
                enabled: self.prefs.auto_compaction(),
                reserve_tokens,
                system_tokens: &system_tokens,
            };
            decide(&input, at, last, recovery_attempted)
        };
        match decision {
            CompactionDecision::Nothing => {}
            CompactionDecision::Compact(reason) => out.job = self.start_auto_compaction(reason, false).await,
            CompactionDecision::Recover(answer) => {
                out.recovery_started = true;
                self.omit_attempt(&answer).await;
                out.job = self.start_auto_compaction(CompactionReason::Overflow, true).await;
            }
            CompactionDecision::Exhausted(error) => {
                self.emit(end_event(CompactionReason::Overflow, false, Some(error.to_string()))).await;
            }
        }
        out
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
            observer: self.ext.handle().summary_request_observer(),
        }
    }
}
