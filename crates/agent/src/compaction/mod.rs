//! Context compaction (pi 1.6 `core/compaction`): summarise the older part of
//! a session so the conversation fits the model's context window again.
//!
//! * `projection`: the session as the model sees it, entry by entry.
//! * `prepare`: the cut point (keep about `keepRecentTokens`, never cut a
//!   tool result from its call, note a turn split by the cut), the previous
//!   summary, the files read and modified.
//! * `prompt`: the texts the summarising model sees (verbatim from pi).
//! * `summarize`: the model calls with retries and their events.
//! * `estimate`: pi's token estimates and threshold rule.
//! * `branch`: the summary of a branch left by tree navigation.
//!
//! The agent (`agent::compacting`) decides when to compact, runs these
//! steps off the actor, and records the result as a `compaction` entry.

pub mod branch;
pub mod estimate;
pub mod prepare;
pub mod projection;
pub mod prompt;
pub mod summarize;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_reference;

pub use estimate::should_compact;
pub use prepare::{FileOps, NotCompactable, Preparation, prepare};
pub use projection::Projection;
pub use summarize::{Summarizer, SummaryError, SummaryOutput, summarize};

use crate::message::AgentMessage;
use crate::session::Session;

/// True when the branch holds a compaction and no reply with usable usage
/// came after it: the context size is unknown until the next reply
/// (`get_session_stats.contextUsage` then reports `null`).
pub fn awaiting_usage(session: &Session) -> bool {
    // Most branches have no compaction: no path is built for them.
    if !session.branch_has_type("compaction") {
        return false;
    }
    let branch = session.branch_heads();
    let Some(at) = branch.iter().rposition(|(_, kind)| *kind == "compaction") else { return false };
    let projection = Projection::of(session);
    let with_usage: Vec<&str> = projection
        .entries
        .iter()
        .filter(|e| e.messages.iter().any(|m| estimate::valid_usage(m).is_some()))
        .filter_map(|e| e.id.as_deref())
        .collect();
    !branch[at + 1..].iter().any(|(id, _)| id.is_some_and(|id| with_usage.contains(&id)))
}

/// Estimated context tokens of `messages` (pi's `estimatedTokensAfter`):
/// the compacted context leads with its system message, which counts for
/// the prompt; a context without one (a session written before system
/// messages) adds the system prompt estimate instead.
pub fn estimate_after(messages: &[AgentMessage], system_tokens: u64) -> u64 {
    let has_system = messages.iter().any(|m| matches!(m, AgentMessage::System(_)));
    estimate::estimate_messages(messages) + if has_system { 0 } else { system_tokens }
}
