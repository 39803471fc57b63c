//! What the run and the compaction share: a prepared [`CompactionJob`], the
//! points of a run where compaction is considered, and the messages a run
//! sends the actor about it ([`CompactionMsg`]). The actor's side is
//! `compacting.rs`, the run's side `RunCompaction` in `run.rs`; neither
//! imports the other.

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::compaction::{Preparation, Summarizer, SummaryError, SummaryOutput, summarize};
use crate::event::{CompactionReason, EventSink, SummarizationSource};
use crate::message::AssistantMessage;

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
}

impl CompactionJob {
    /// Write the summaries (off the actor).
    pub(crate) async fn run(&self, emitter: &dyn EventSink) -> Result<SummaryOutput, SummaryError> {
        // Retry events of a summarisation go through the actor like every event.
        let source = SummarizationSource::Compaction(self.reason);
        summarize(&self.prep, self.custom_instructions.as_deref(), &self.summarizer, source, emitter, &self.cancel)
            .await
    }
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
    Finished {
        job: Box<CompactionJob>,
        outcome: Result<SummaryOutput, SummaryError>,
        reply: Option<oneshot::Sender<bool>>,
    },
}

impl std::fmt::Debug for CompactionMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompactionMsg::Check { at, .. } => write!(f, "CompactionMsg::Check({at:?})"),
            CompactionMsg::Finished { job, outcome, .. } => {
                write!(f, "CompactionMsg::Finished({:?}, ok={})", job.reason, outcome.is_ok())
            }
        }
    }
}
