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

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::message::BranchSummaryMessage;

    fn entry(kind: &str, messages: Vec<AgentMessage>) -> BranchEntry {
        BranchEntry { kind: kind.to_string(), messages, summary_details: None }
    }

    fn summary(text: &str) -> AgentMessage {
        let m = BranchSummaryMessage { summary: text.into(), from_id: "x".into(), timestamp: 0, extra: Map::new() };
        AgentMessage::BranchSummary(m)
    }

    #[test]
    fn the_newest_messages_that_fit_the_budget_are_kept_in_order() {
        let long = "x".repeat(400); // 100 tokens by pi's estimate
        let entries = vec![
            entry("message", vec![AgentMessage::user(&long, &[])]),
            entry("message", vec![AgentMessage::user("second", &[])]),
            entry("message", vec![AgentMessage::user("third", &[])]),
        ];
        let all = prepare_branch(&entries, 0);
        assert_eq!(all.messages.len(), 3);
        let recent = prepare_branch(&entries, 50);
        let texts: Vec<String> =
            recent.messages.iter().map(|m| serialize_conversation(std::slice::from_ref(m))).collect();
        assert_eq!(texts, ["[User]: second", "[User]: third"]);
        // A summary that does not fit still goes in while under 90% of the budget is used.
        let with_summary =
            vec![entry("branch_summary", vec![summary(&long)]), entry("message", vec![AgentMessage::user("t", &[])])];
        assert_eq!(prepare_branch(&with_summary, 50).messages.len(), 2);
        assert_eq!(prepare_branch(&with_summary, 1).messages.len(), 1);
    }

    #[test]
    fn file_lists_come_from_generated_summaries_only() {
        let mut generated = entry("branch_summary", vec![summary("s")]);
        generated.summary_details = Some((json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"]}), false));
        let mut from_hook = entry("branch_summary", vec![summary("h")]);
        from_hook.summary_details = Some((json!({"readFiles": ["hook.rs"]}), true));
        let input = prepare_branch(&[generated, from_hook], 0);
        assert_eq!(input.file_ops.lists(), (vec!["a.rs".to_string()], vec!["b.rs".to_string()]));
    }

    #[test]
    fn custom_instructions_add_focus_or_replace_the_prompt() {
        let messages = [AgentMessage::user("hi", &[])];
        let plain = branch_prompt(&messages, None, false);
        assert!(plain.starts_with("<conversation>\n[User]: hi\n</conversation>\n\nCreate a structured summary"));
        assert!(branch_prompt(&messages, Some("Files"), false).ends_with("error messages.\n\nAdditional focus: Files"));
        assert_eq!(
            branch_prompt(&messages, Some("Only X"), true),
            "<conversation>\n[User]: hi\n</conversation>\n\nOnly X"
        );
    }
}
