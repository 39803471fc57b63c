//! The summary of an abandoned branch when an extension command navigates
//! the session tree with `summarize` and no handler gives one (pi 1.6
//! `generateBranchSummary`): the branch's messages, newest first within the
//! token budget, serialized for the model with pi's branch instructions; the
//! answer gets pi's preamble and the files the branch read and modified.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::estimate::estimate_tokens;
use super::prepare::FileOps;
use super::prompt::{BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, format_file_operations, serialize_conversation};
use super::summarize::{Summarizer, SummaryError, SummaryOutput, generate};
use crate::event::{EventSink, SummarizationSource};
use crate::message::AgentMessage;

/// pi's default `branchSummary.reserveTokens`.
pub const BRANCH_SUMMARY_RESERVE_TOKENS: u64 = 16_384;

/// What to summarise of the abandoned entries (oldest first, each with its messages).
#[derive(Debug, Default)]
pub struct BranchInput {
    /// The messages that fit the budget, oldest first.
    pub messages: Vec<AgentMessage>,
    pub file_ops: FileOps,
}

/// One abandoned entry: its type, the messages it contributes (tool results
/// and system messages left out), and its `details`/`fromHook` when it is a
/// branch summary.
pub struct BranchEntry {
    pub kind: String,
    pub messages: Vec<AgentMessage>,
    pub summary_details: Option<(Value, bool)>,
}

/// pi's `prepareBranchEntries`: the file lists of earlier generated branch
/// summaries, then messages from the newest back while they fit `budget`
/// tokens (0: no limit); a summary that does not fit still goes in while
/// less than 90% of the budget is used.
pub fn prepare_branch(entries: &[BranchEntry], budget: u64) -> BranchInput {
    let mut input = BranchInput::default();
    for entry in entries {
        let Some((details, false)) = &entry.summary_details else { continue };
        let names = |key: &str| -> Vec<String> {
            let list = details.get(key).and_then(Value::as_array);
            list.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
        };
        input.file_ops.read.extend(names("readFiles"));
        input.file_ops.edited.extend(names("modifiedFiles"));
    }
    let mut total = 0u64;
    let mut kept: Vec<AgentMessage> = Vec::new();
    'entries: for entry in entries.iter().rev() {
        for message in entry.messages.iter().rev() {
            input.file_ops.add_message(message);
            let tokens = estimate_tokens(message);
            if budget > 0 && total + tokens > budget {
                let is_summary = entry.kind == "compaction" || entry.kind == "branch_summary";
                if is_summary && (total as f64) < budget as f64 * 0.9 {
                    kept.push(message.clone());
                }
                break 'entries;
            }
            kept.push(message.clone());
            total += tokens;
        }
    }
    kept.reverse();
    input.messages = kept;
    input
}

/// The user message of a branch summary request.
pub fn branch_prompt(messages: &[AgentMessage], custom: Option<&str>, replace: bool) -> String {
    let instructions = match custom {
        Some(c) if replace => c.to_string(),
        Some(c) => format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {c}"),
        None => BRANCH_SUMMARY_PROMPT.to_string(),
    };
    format!("<conversation>\n{}\n</conversation>\n\n{instructions}", serialize_conversation(messages))
}

/// Ask the model for the summary of `input`.
pub async fn summarize_branch(
    input: &BranchInput,
    custom: Option<&str>,
    replace: bool,
    s: &Summarizer,
    events: &dyn EventSink,
    cancel: &CancellationToken,
) -> Result<SummaryOutput, SummaryError> {
    let prompt = branch_prompt(&input.messages, custom, replace);
    let source = SummarizationSource::BranchSummary;
    let (text, usage) = generate(s, &prompt, "Branch summarization", source, events, cancel).await?;
    let (read, modified) = input.file_ops.lists();
    let summary = format!("{BRANCH_SUMMARY_PREAMBLE}{text}{}", format_file_operations(&read, &modified));
    Ok(SummaryOutput { summary, usage: Some(usage), details: input.file_ops.details() })
}
