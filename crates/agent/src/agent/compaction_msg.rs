//! What the run and the compaction share: a prepared [`CompactionJob`], the
//! points of a run where compaction is considered, and the messages a run
//! sends the actor about it ([`CompactionMsg`]). The actor's side is
//! `compacting.rs`, the run's side `RunCompaction` in `run.rs`; neither
//! imports the other.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use crate::compaction::{Preparation, Summarizer, SummaryError, SummaryOutput, summarize};
use crate::error::CoreError;
use crate::event::{AgentEvent, CompactionReason, EventSink, SummarizationSource};
use crate::extensions::Extensions;
use crate::extensions::hooks::CompactDecision;
use crate::message::{AssistantMessage, Usage};
use crate::op::{Reply, RequestTag};

/// A prepared compaction: what to summarise, and how.
pub(crate) struct CompactionJob {
    pub reason: CompactionReason,
    /// Overflow recovery: the interrupted prompt is retried afterwards.
    pub will_retry: bool,
    pub prep: Preparation,
    pub summarizer: Summarizer,
    pub custom_instructions: Option<String>,
    pub cancel: CancellationToken,
    /// Estimated tokens of the system prompt (for `estimatedTokensAfter`).
    pub system_tokens: u64,
    /// The `session_before_compact` subscribers and their event, when any listens.
    pub hook: Option<CompactHook>,
    /// A virtual model is selected: its router names the model that writes the summaries.
    pub route: Option<DirectRoute>,
}

/// The routing of a summary made with a virtual model (pi's reason `direct`).
pub(crate) struct DirectRoute {
    pub router: tokio::sync::Mutex<crate::agent::virtual_route::VirtualRouter>,
    /// The conversation the router is shown.
    pub messages: std::sync::Arc<Vec<crate::message::AgentMessage>>,
}

/// Extensions to ask before summarising (pi's `session_before_compact`).
pub(crate) struct CompactHook {
    pub extensions: Extensions,
    /// pi's event without `type`: `preparation`, `branchEntries`, `customInstructions`, `reason`, `willRetry`.
    pub event: Value,
}

/// A written summary and where it came from.
pub(crate) struct JobOutput {
    pub summary: SummaryOutput,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// An extension supplied it (`fromHook` of the entry, pi's `fromExtension`).
    pub from_extension: bool,
}

impl CompactionJob {
    /// Ask the extensions, then write the summaries unless one cancelled or
    /// supplied them (off the actor).
    pub(crate) async fn run(&self, emitter: &dyn EventSink) -> Result<JobOutput, SummaryError> {
        if let Some(hook) = &self.hook {
            let decision = hook.extensions.before_compact(hook.event.clone(), &self.cancel).await;
            if self.cancel.is_cancelled() {
                return Err(SummaryError::Aborted);
            }
            match decision {
                CompactDecision::Cancel => return Err(SummaryError::Aborted),
                CompactDecision::Replace(compaction) => return Ok(self.extension_output(&compaction)),
                CompactDecision::Default => {}
            }
        }
        let routed = match &self.route {
            Some(route) => Some(self.routed_summarizer(route).await?),
            None => None,
        };
        let summarizer = routed.as_ref().unwrap_or(&self.summarizer);
        // Retry events of a summarisation go through the actor like every event.
        let source = SummarizationSource::Compaction(self.reason);
        let summary =
            summarize(&self.prep, self.custom_instructions.as_deref(), summarizer, source, emitter, &self.cancel)
                .await?;
        Ok(JobOutput {
            summary,
            first_kept_entry_id: self.prep.first_kept_entry_id.clone(),
            tokens_before: self.prep.tokens_before,
            from_extension: false,
        })
    }

    /// The summarizer of the physical model the virtual model's router picks
    /// (pi routes the summary request before sizing it).
    async fn routed_summarizer(&self, route: &DirectRoute) -> Result<Summarizer, SummaryError> {
        let routed = route.router.lock().await.route_direct(&route.messages, &self.cancel).await;
        if self.cancel.is_cancelled() {
            return Err(SummaryError::Aborted);
        }
        let routed = routed.map_err(|e| SummaryError::Failed(CoreError::new(crate::error::ErrorKind::Model, e)))?;
        Ok(Summarizer {
            provider: routed.provider,
            model: routed.model,
            thinking: routed.thinking,
            api_key: routed.api_key,
            headers: routed.headers,
            retry: self.summarizer.retry,
            retry_enabled: self.summarizer.retry_enabled,
            observer: self.summarizer.observer.clone(),
        })
    }

    /// An extension's `{summary, firstKeptEntryId, tokensBefore, usage?, details?}`, taken as
    /// pi takes it (what it leaves out falls back to the preparation's values).
    fn extension_output(&self, compaction: &Value) -> JobOutput {
        let summary = compaction.get("summary").and_then(Value::as_str).unwrap_or_default().to_string();
        let usage = compaction.get("usage").and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
        let details = compaction.get("details").cloned().unwrap_or(Value::Null);
        JobOutput {
            summary: SummaryOutput { summary, usage, details },
            first_kept_entry_id: compaction
                .get("firstKeptEntryId")
                .and_then(Value::as_str)
                .map_or_else(|| self.prep.first_kept_entry_id.clone(), str::to_string),
            tokens_before: compaction.get("tokensBefore").and_then(Value::as_u64).unwrap_or(self.prep.tokens_before),
            from_extension: true,
        }
    }
}

/// The compaction state at the end of a compaction.
pub(crate) enum CompactionState {
    /// Still compacting: it is left when the compaction ends.
    Active,
    /// Left already; a manual compaction gave its `compact` request.
    Left(Option<Option<RequestTag>>),
}

/// What is left of a compaction's ending once the extensions' handlers ran.
pub(crate) struct CompactionEnd {
    /// Whether the compaction state was left already.
    pub state: CompactionState,
    /// `compaction_end`, when it is still to be emitted.
    pub event: Option<AgentEvent>,
    pub reply: Result<Reply, CoreError>,
    /// Whether the compaction took (the run's answer).
    pub context: bool,
    pub run_reply: Option<oneshot::Sender<bool>>,
}

/// Where in a run an automatic compaction is considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckPoint {
    /// Before a prompt's first turn (pi `_prepareRun`).
    BeforePrompt,
    /// After tool results, before the next model call (pi `prepareNextTurn`).
    BetweenTurns,
    /// After a low-level run ended (pi `_handlePostAgentRun`).
    AfterRun,
}

/// The actor's answer to a check.
pub(crate) struct CheckOutcome {
    pub job: Option<CompactionJob>,
    /// An overflow recovery (compact and retry) was started.
    pub recovery_started: bool,
}

/// Compaction traffic from tasks to the actor (always boxed in `Internal`).
#[allow(clippy::large_enum_variant)]
pub(crate) enum CompactionMsg {
    Check {
        at: CheckPoint,
        last: Option<Box<AssistantMessage>>,
        recovery_attempted: bool,
        reply: oneshot::Sender<CheckOutcome>,
    },
    /// The summaries are written (or failed); `reply` learns whether the compaction took.
    Finished { job: Box<CompactionJob>, outcome: Result<JobOutput, SummaryError>, reply: Option<oneshot::Sender<bool>> },
    /// The extensions' `session_compact` / `session_compact_failed` handlers ran: end the compaction.
    Ended(Box<CompactionEnd>),
}

impl std::fmt::Debug for CompactionMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompactionMsg::Check { at, .. } => write!(f, "CompactionMsg::Check({at:?})"),
            CompactionMsg::Finished { job, outcome, .. } => {
                write!(f, "CompactionMsg::Finished({:?}, ok={})", job.reason, outcome.is_ok())
            }
            CompactionMsg::Ended(_) => write!(f, "CompactionMsg::Ended"),
        }
    }
}
