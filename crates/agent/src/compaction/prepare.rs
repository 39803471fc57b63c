//! Choosing what to summarise (pi 1.6 `prepareCompaction`): the cut point that
//! keeps about `keepRecentTokens` of recent context, the turn it may split,
//! the previous summary, and the files read and modified.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::projection::{ProjectedEntry, Projection};
use crate::message::{AgentMessage, ContentBlock};

/// Files the summarised conversation touched (pi's `FileOperations`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub written: BTreeSet<String>,
    pub edited: BTreeSet<String>,
}

impl FileOps {
    /// Record the `read` / `write` / `edit` tool calls of an assistant
    /// message, or the nested calls recorded on a tool result (calls a tool
    /// made through an extension's `ctx.executeTool()`).
    pub fn add_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant(a) => {
                for block in &a.content {
                    if let ContentBlock::ToolCall(call) = block {
                        self.add_call(&call.name, Some(&call.arguments));
                    }
                }
            }
            AgentMessage::ToolResult(r) => {
                for call in r.nested_calls.iter().flat_map(|n| &n.calls) {
                    self.add_call(&call.name, call.arguments.as_ref());
                }
            }
            _ => {}
        }
    }

    fn add_call(&mut self, name: &str, args: Option<&Value>) {
        let Some(path) = args.and_then(|a| a.get("path")).and_then(Value::as_str).filter(|p| !p.is_empty()) else {
            return;
        };
        let set = match name {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// `(readFiles, modifiedFiles)`: files only read, and files written or
    /// edited, each sorted (pi's `computeFileLists`).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<&String> = self.edited.iter().chain(self.written.iter()).collect();
        let read = self.read.iter().filter(|f| !modified.contains(f)).cloned().collect();
        (read, modified.into_iter().cloned().collect())
    }

    /// The compaction entry's `details`.
    pub fn details(&self) -> Value {
        let (read, modified) = self.lists();
        json!({"readFiles": read, "modifiedFiles": modified})
    }
}

/// Everything a compaction needs, computed from the session before any model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    /// First entry kept verbatim after the summary.
    pub first_kept_entry_id: String,
    /// Messages summarised into the history summary.
    pub messages_to_summarize: Vec<AgentMessage>,
    /// Start of a turn split by the cut (summarised separately).
    pub turn_prefix_messages: Vec<AgentMessage>,
    pub is_split_turn: bool,
    /// Estimated context tokens before compaction.
    pub tokens_before: u64,
    /// Summary of the previous compaction, which the new one builds on.
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
}

/// Why nothing can be compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotCompactable {
    /// The leaf is already a compaction.
    AlreadyCompacted,
    /// Everything fits in `keepRecentTokens`.
    TooSmall,
}

impl NotCompactable {
    /// pi's error text.
    pub fn message(self) -> &'static str {
        match self {
            NotCompactable::AlreadyCompacted => "Already compacted",
            NotCompactable::TooSmall => "Nothing to compact (session too small)",
        }
    }
}

fn is_cut_point(m: &AgentMessage) -> bool {
    !matches!(m, AgentMessage::ToolResult(_))
}

fn is_turn_start(m: &AgentMessage) -> bool {
    !matches!(m, AgentMessage::Assistant(_) | AgentMessage::ToolResult(_))
}

fn starts_turn(e: &ProjectedEntry) -> bool {
    e.kind != "compaction" && e.messages.iter().any(is_turn_start)
}

/// Where to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    pub first_kept: usize,
    /// The entry starting the split turn, when the cut is inside a turn.
    pub turn_start: Option<usize>,
}

/// pi's `findProjectedCutPoint` over `entries[start..end]`.
pub fn find_cut_point(entries: &[ProjectedEntry], start: usize, end: usize, keep_recent_tokens: u64) -> CutPoint {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| entries[i].kind != "compaction" && entries[i].messages.iter().any(is_cut_point))
        .collect();
    let Some(&first_cut) = cut_points.first() else {
        return CutPoint { first_kept: start, turn_start: None };
    };
    let mut accumulated = 0u64;
    let mut exceeded = false;
    let mut cut = first_cut;
    for i in (start..end).rev() {
        let tokens = entries[i].tokens();
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            exceeded = true;
            cut = cut_points.iter().copied().find(|&c| c >= i).unwrap_or(cut_points[cut_points.len() - 1]);
            break;
        }
    }
    if exceeded && recovery_omission_suffix(&entries[(cut + 1).min(end)..end]) {
        cut += 1;
    }
    // Keep the metadata entries (model changes, labels, …) just before the cut.
    while cut > start {
        let previous = &entries[cut - 1];
        if previous.kind == "compaction" || previous.contributes() {
            break;
        }
        cut -= 1;
    }
    let turn_start = if cut < entries.len() && starts_turn(&entries[cut]) {
        None
    } else {
        (start..=cut.min(entries.len().saturating_sub(1))).rev().find(|&i| starts_turn(&entries[i]))
    };
    CutPoint { first_kept: cut, turn_start }
}

/// pi's recovery rule: advance the cut past a suffix that only holds an
/// omitted assistant attempt (and its omission edits and metadata).
fn recovery_omission_suffix(suffix: &[ProjectedEntry]) -> bool {
    let visible = |e: &ProjectedEntry| e.kind != "context_edit" && e.raw_visible;
    let omitted = |e: &ProjectedEntry| visible(e) && !e.contributes();
    let omitted_ids: Vec<&str> = suffix.iter().filter(|e| omitted(e)).filter_map(|e| e.id.as_deref()).collect();
    let external_replacement = suffix.iter().any(|e| {
        matches!(&e.edit, Some((target, is_null)) if e.kind == "context_edit" && !is_null && !omitted_ids.contains(&target.as_str()))
    });
    !external_replacement
        && suffix.iter().any(|e| e.kind == "message" && omitted(e) && omits_assistant(e))
        && suffix.iter().all(|e| e.kind != "compaction" && (!visible(e) || omitted(e)))
}

/// The stored message of this entry is an assistant message.
fn omits_assistant(e: &ProjectedEntry) -> bool {
    e.role.as_deref() == Some("assistant")
}

/// pi's `prepareCompaction`. `system_tokens` is the estimate used for the
/// system prompt when no usage can be trusted.
pub fn prepare(
    projection: &Projection,
    keep_recent_tokens: u64,
    system_tokens: u64,
) -> Result<Preparation, NotCompactable> {
    if projection.branch.last().is_some_and(|(_, kind)| kind == "compaction") {
        return Err(NotCompactable::AlreadyCompacted);
    }
    let entries = &projection.entries;
    let previous = entries.iter().position(|e| e.kind == "compaction" && e.contributes());
    let previous_info = previous.and_then(|i| entries[i].compaction.clone());
    let start = previous.map_or(0, |i| i + 1);
    let end = entries.len();
    let tokens_before = projection.estimate_tokens(system_tokens);
    let cut = find_cut_point(entries, start, end, keep_recent_tokens);
    let Some(first_kept_entry_id) = entries.get(cut.first_kept).and_then(|e| e.id.clone()) else {
        return Err(NotCompactable::TooSmall);
    };
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let collect = |range: std::ops::Range<usize>| -> Vec<AgentMessage> {
        entries[range].iter().filter(|e| e.kind != "compaction").flat_map(|e| e.messages.iter().cloned()).collect()
    };
    let messages_to_summarize = collect(start..history_end.max(start));
    let turn_prefix_messages = cut.turn_start.map(|t| collect(t..cut.first_kept)).unwrap_or_default();
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(NotCompactable::TooSmall);
    }
    let mut file_ops = FileOps::default();
    if let Some(info) = &previous_info
        && !info.from_hook
        && let Some(details) = &info.details
    {
        let files = |key: &str| -> Vec<String> {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        file_ops.read.extend(files("readFiles"));
        file_ops.edited.extend(files("modifiedFiles"));
    }
    for m in messages_to_summarize.iter().chain(turn_prefix_messages.iter()) {
        file_ops.add_message(m);
    }
    Ok(Preparation {
        first_kept_entry_id,
        messages_to_summarize,
        is_split_turn: cut.turn_start.is_some(),
        turn_prefix_messages,
        tokens_before,
        previous_summary: previous_info.map(|i| i.summary),
        file_ops,
    })
}
