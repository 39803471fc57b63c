//! What the summarising model sees: pi 1.6's system prompt and instructions
//! (verbatim, they are part of the protocol with the model), the serialized
//! conversation, and how summaries are merged and annotated.

use serde_json::Value;

use super::estimate::js_len;
use crate::message::{AgentMessage, ContentBlock, UserContent};
use crate::provider::convert::{LlmMessage, to_llm};

/// Tool results longer than this many characters are cut in the serialized conversation.
pub const TOOL_RESULT_MAX_CHARS: u64 = 2000;

/// Separator between the history summary and the summary of a split turn's prefix.
pub const SPLIT_TURN_SEPARATOR: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// History summary used for a split turn when there is nothing else to summarise.
pub const NO_PRIOR_HISTORY: &str = "No prior history.";

pub const SUMMARIZATION_SYSTEM_PROMPT: &str = r#"You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary."#;

pub const SUMMARIZATION_PROMPT: &str = r#"The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."#;

/// Put before a generated branch summary.
pub const BRANCH_SUMMARY_PREAMBLE: &str =
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

pub const BRANCH_SUMMARY_PROMPT: &str = r#"Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages."#;

pub const UPDATE_SUMMARIZATION_INSTRUCTIONS: &str = r#"Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."#;

pub const TURN_PREFIX_SUMMARIZATION_PROMPT: &str = r#"The messages above are earlier context from an ongoing conversation. Later messages are stored separately and do not need to be reconstructed.

Create a concise checkpoint of the user's request and the progress shown above. This checkpoint will be placed before the later messages so the conversation can continue with the necessary context.

## Original Request
[What did the user ask for?]

## Progress So Far
- [Key decisions and work completed in these messages]

## Context Needed to Continue
- [Information from these messages needed to understand the later work]

Only summarize information explicitly present above. Do not infer or recreate later messages."#;

/// The instructions when a previous summary is updated.
pub fn update_summarization_prompt() -> String {
    format!(
        "The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.\n\n{UPDATE_SUMMARIZATION_INSTRUCTIONS}"
    )
}

/// The first `max` UTF-16 code units of `text`, never splitting a surrogate pair.
fn slice_head(text: &str, max: u64) -> &str {
    let mut units = 0u64;
    for (i, c) in text.char_indices() {
        units += c.len_utf16() as u64;
        if units > max {
            return &text[..i];
        }
    }
    text
}

/// pi's `truncateForSummary`.
pub fn truncate_for_summary(text: &str, max: u64) -> String {
    let len = js_len(text);
    if len <= max {
        return text.to_string();
    }
    format!("{}\n\n[... {} more characters truncated]", slice_head(text, max), len - max)
}

/// Text blocks of a content list joined with `separator` (pi's `contentText`).
fn content_text(blocks: &[ContentBlock], separator: &str) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(separator)
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Blocks(b) => content_text(b, ""),
    }
}

/// `name(key=<JSON>, …)` for one tool call.
fn tool_call_text(name: &str, arguments: &Value) -> String {
    let args = match arguments {
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
        _ => String::new(),
    };
    format!("{name}({args})")
}

/// pi's `serializeConversation(convertToLlm(messages))`: the conversation as
/// tagged text, so the model summarises it instead of continuing it. Thinking
/// is left out; tool results are cut at [`TOOL_RESULT_MAX_CHARS`].
pub fn serialize_conversation(messages: &[AgentMessage]) -> String {
    let mut parts = Vec::new();
    for message in to_llm(messages) {
        match message {
            LlmMessage::User { content, .. } => {
                let text = user_text(&content);
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            LlmMessage::Assistant(a) => {
                let calls: Vec<String> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolCall(c) => Some(tool_call_text(&c.name, &c.arguments)),
                        _ => None,
                    })
                    .collect();
                if a.content.iter().any(|b| matches!(b, ContentBlock::Text(_))) {
                    parts.push(format!("[Assistant]: {}", content_text(&a.content, "\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            LlmMessage::ToolResult(t) => {
                let text = content_text(&t.content, "");
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)));
                }
            }
        }
    }
    parts.join("\n\n")
}

fn with_focus(mut prompt: String, custom_instructions: Option<&str>) -> String {
    if let Some(focus) = custom_instructions.filter(|f| !f.is_empty()) {
        prompt.push_str("\n\nAdditional focus: ");
        prompt.push_str(focus);
    }
    prompt
}

/// The user message of a history summary request.
pub fn history_prompt(
    messages: &[AgentMessage],
    previous_summary: Option<&str>,
    custom_instructions: Option<&str>,
) -> String {
    let base = match previous_summary {
        Some(_) => update_summarization_prompt(),
        None => SUMMARIZATION_PROMPT.to_string(),
    };
    let mut text = format!("<conversation>\n{}\n</conversation>\n\n", serialize_conversation(messages));
    if let Some(previous) = previous_summary {
        text.push_str(&format!("<previous-summary>\n{previous}\n</previous-summary>\n\n"));
    }
    text.push_str(&with_focus(base, custom_instructions));
    text
}

/// The user message of a split turn's prefix summary request.
pub fn turn_prefix_prompt(messages: &[AgentMessage], custom_instructions: Option<&str>) -> String {
    let text = format!(
        "# Conversation\n{}\n\n# Instructions\n{TURN_PREFIX_SUMMARIZATION_PROMPT}",
        serialize_conversation(messages)
    );
    with_focus(text, custom_instructions)
}

/// pi's `formatFileOperations`: the file lists appended to the summary.
pub fn format_file_operations(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!("<modified-files>\n{}\n</modified-files>", modified.join("\n")));
    }
    if sections.is_empty() { String::new() } else { format!("\n\n{}", sections.join("\n\n")) }
}
