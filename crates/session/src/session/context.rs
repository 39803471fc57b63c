//! The model context of a session: messages, model and thinking level along the root-to-leaf path.
//!
//! Mirrors pi 1.6's `buildSessionContext`:
//! 1. take the root-to-leaf path; the model and thinking level are the
//!    latest `model_change` / assistant message and `thinking_level_change`
//!    on the whole path;
//! 2. if the path holds compactions, the latest one comes first (its
//!    `systemMessage` checkpoint, then a `compactionSummary` message),
//!    followed by the entries from its `firstKeptEntryId` up to it (system
//!    messages excepted: the checkpoint holds them) and everything after it;
//!    older compactions inside the kept range contribute nothing;
//! 3. the latest `context_edit` per target among those entries hides the
//!    target (`replacement: null`) or replaces its content;
//! 4. entries become messages: `message` -> its message, `custom_message` ->
//!    `custom`, `branch_summary` (non-empty) -> `branchSummary`.
//!
//! System messages are part of the context: they declare the model's prompt
//! and tools (`pi_types::system_message`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::entry::{KnownEntry, SessionEntry, StoredMessage};
use super::store::Session;
use super::tree::iso_to_ms;
use crate::message::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, ContentBlock, CustomMessage, UserContent,
};

/// What the model sees for the current leaf.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionContext {
    pub messages: Vec<AgentMessage>,
    /// `(provider, model id)` of the latest model change or assistant message on the path.
    pub model: Option<(String, String)>,
    /// Latest `thinking_level_change` on the path (pi defaults to `"off"` when absent).
    pub thinking_level: Option<String>,
}

fn entry_ms(entry: &SessionEntry) -> i64 {
    entry.timestamp().and_then(iso_to_ms).unwrap_or(0)
}

/// The message of a `message` entry, repairing a null/missing `content` of
/// a user/assistant/toolResult message as pi does (to `[]`).
fn stored_message(message: &StoredMessage) -> Option<AgentMessage> {
    match message {
        StoredMessage::Known(m) => Some(m.clone()),
        StoredMessage::Other(v) => {
            let role = v.get("role").and_then(Value::as_str)?;
            let content_missing = v.get("content").is_none_or(Value::is_null);
            if !(matches!(role, "user" | "assistant" | "toolResult") && content_missing) {
                return None;
            }
            let mut fixed = v.clone();
            if let Some(obj) = fixed.as_object_mut() {
                obj.insert("content".into(), Value::Array(Vec::new()));
            }
            serde_json::from_value(fixed).ok()
        }
    }
}

/// The messages one selected entry contributes (before edits).
pub(super) fn entry_messages(entry: &SessionEntry, first: bool) -> Vec<AgentMessage> {
    let SessionEntry::Known(known) = entry else { return Vec::new() };
    match known {
        KnownEntry::Message(m) => stored_message(&m.message).into_iter().collect(),
        KnownEntry::CustomMessage(c) => vec![AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: entry_ms(entry),
            extra: Map::new(),
        })],
        KnownEntry::BranchSummary(b) if !b.summary.is_empty() => {
            vec![AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: entry_ms(entry),
                extra: Map::new(),
            })]
        }
        KnownEntry::Compaction(c) if first => {
            let summary = AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: entry_ms(entry),
                extra: Map::new(),
            });
            match &c.system_message {
                Some(system) => vec![AgentMessage::System(system.clone()), summary],
                None => vec![summary],
            }
        }
        _ => Vec::new(),
    }
}

impl Session {
    /// The messages entry `id` gives a branch summary (pi's
    /// `getMessageFromEntry`): its context messages, a compaction's summary
    /// included, tool results and system messages left out.
    pub fn summary_messages_of(&self, id: &str) -> Vec<AgentMessage> {
        let Some(entry) = self.get(id) else { return Vec::new() };
        let keep = |m: &AgentMessage| !matches!(m, AgentMessage::ToolResult(_) | AgentMessage::System(_));
        entry_messages(entry, true).into_iter().filter(keep).collect()
    }
}

/// Apply a context edit's non-null replacement to one message.
pub(super) fn replace_content(message: AgentMessage, replacement: &Value) -> AgentMessage {
    let Some(content) = replacement.get("content") else { return message };
    let blocks = || -> Option<Vec<ContentBlock>> {
        match content {
            Value::String(s) => Some(vec![ContentBlock::text(s.clone())]),
            other => serde_json::from_value(other.clone()).ok(),
        }
    };
    let user_content = || serde_json::from_value::<UserContent>(content.clone()).ok();
    match message {
        AgentMessage::User(mut m) => {
            if let Some(c) = user_content() {
                m.content = c;
            }
            AgentMessage::User(m)
        }
        AgentMessage::Custom(mut m) => {
            if let Some(c) = user_content() {
                m.content = c;
            }
            AgentMessage::Custom(m)
        }
        AgentMessage::Assistant(mut m) => {
            if let Some(b) = blocks() {
                m.content = b;
            }
            AgentMessage::Assistant(m)
        }
        AgentMessage::ToolResult(mut m) => {
            if let Some(b) = blocks() {
                m.content = b;
            }
            AgentMessage::ToolResult(m)
        }
        other => other,
    }
}

impl Session {
    /// Positions of the entries selected for the context (compaction-aware).
    pub(crate) fn context_positions(&self) -> Vec<usize> {
        let path = match self.leaf.as_deref() {
            Some(leaf) => self.path_positions(leaf),
            None => return Vec::new(),
        };
        // Slot heads give the type: finding the compaction reads nothing from the file.
        let compaction_at = path.iter().rposition(|&i| self.slots[i].type_name() == "compaction");
        let Some(at) = compaction_at else { return path };
        let SessionEntry::Known(KnownEntry::Compaction(compaction)) = self.entry_at(path[at]) else {
            return path;
        };
        let mut selected = vec![path[at]];
        let mut kept = false;
        for &i in &path[..at] {
            let slot = &self.slots[i];
            if slot.id() == Some(compaction.first_kept_entry_id.as_str()) {
                kept = true;
            }
            let system = slot.type_name() == "message" && slot.role() == Some("system");
            if kept && !system {
                selected.push(i);
            }
        }
        selected.extend_from_slice(&path[at + 1..]);
        selected
    }

    /// Build what the model sees for the current leaf.
    pub fn context(&self) -> SessionContext {
        let (model, thinking_level) = self.context_model_and_thinking();
        let messages = self.projected_entries().into_iter().flat_map(|(_, messages)| messages).collect();
        SessionContext { messages, model, thinking_level }
    }

    /// The `model` and `thinking_level` of [`Session::context`], without
    /// building its messages.
    ///
    /// The path is walked from the leaf back: only the latest assistant
    /// message that names its model is read from the file.
    pub fn context_model_and_thinking(&self) -> (Option<(String, String)>, Option<String>) {
        let (mut model, mut thinking_level) = (None, None);
        let Some(leaf) = self.leaf.as_deref() else { return (model, thinking_level) };
        for i in self.path_positions(leaf).into_iter().rev() {
            if model.is_some() && thinking_level.is_some() {
                break;
            }
            let slot = &self.slots[i];
            let wanted = match slot.type_name() {
                "thinking_level_change" => thinking_level.is_none(),
                "model_change" => model.is_none(),
                "message" => model.is_none() && slot.role() == Some("assistant"),
                _ => false,
            };
            if !wanted {
                continue;
            }
            match self.entry_at(i) {
                SessionEntry::Known(KnownEntry::ThinkingLevelChange(t)) => {
                    thinking_level = Some(t.thinking_level.clone());
                }
                SessionEntry::Known(KnownEntry::ModelChange(m)) => {
                    model = Some((m.provider.clone(), m.model_id.clone()));
                }
                SessionEntry::Known(KnownEntry::Message(m)) => match &m.message {
                    StoredMessage::Known(AgentMessage::Assistant(a)) => {
                        model = Some((a.provider.clone(), a.model.clone()));
                    }
                    StoredMessage::Other(v) if v.get("role").and_then(Value::as_str) == Some("assistant") => {
                        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
                        if let (Some(p), Some(m)) = (text("provider"), text("model")) {
                            model = Some((p, m));
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        (model, thinking_level)
    }

    /// The context entries (positions in `records`, in context order) with
    /// the messages each contributes after context edits (pi's
    /// `buildSessionProjection().entries`). Compaction uses the per-entry view
    /// to pick its cut point.
    pub fn projected_entries(&self) -> Vec<(usize, Vec<AgentMessage>)> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        self.projected_entries_in_parts(1024, cores.min(4))
    }

    /// [`Session::projected_entries`], the messages of a long context made
    /// in up to `most` parts at once, of at least `min_part` entries each.
    pub(crate) fn projected_entries_in_parts(&self, min_part: usize, most: usize) -> Vec<(usize, Vec<AgentMessage>)> {
        let selected = self.context_positions();
        let edits = self.context_edits(&selected);
        map_in_parts(&selected, min_part, most, |n, &i| (i, self.messages_of(n, i, &edits)))
    }

    /// The latest `context_edit` per target among the `selected` entries:
    /// the target's id and the replacement (null: hidden).
    pub(super) fn context_edits(&self, selected: &[usize]) -> HashMap<&str, &Value> {
        let mut edits: HashMap<&str, &Value> = HashMap::new();
        for &i in selected {
            // Context edits are resident: only their slots are looked at.
            if self.slots[i].is_resident()
                && let SessionEntry::Unknown(v) = self.entry_at(i)
                && v.get("type").and_then(Value::as_str) == Some("context_edit")
                && let Some(target) = v.get("targetId").and_then(Value::as_str)
            {
                edits.insert(target, v.get("replacement").unwrap_or(&Value::Null));
            }
        }
        edits
    }

    /// The messages the `n`th selected entry, at position `i`, contributes after `edits`.
    pub(super) fn messages_of(&self, n: usize, i: usize, edits: &HashMap<&str, &Value>) -> Vec<AgentMessage> {
        let entry = self.entry_at(i);
        let messages = entry_messages(entry, n == 0);
        match entry.id().and_then(|id| edits.get(id)) {
            None => messages,
            Some(Value::Null) => Vec::new(),
            Some(replacement) => messages.into_iter().map(|m| replace_content(m, replacement)).collect(),
        }
    }
}

/// `f(position, item)` for every item, in order. A list of at least two
/// `min_part`s is cut into up to `most` parts, mapped on threads at once:
/// copying the messages of a large session is a good part of opening it.
fn map_in_parts<T: Sync, R: Send>(
    items: &[T],
    min_part: usize,
    most: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let parts = (items.len() / min_part.max(1)).min(most);
    if parts < 2 {
        return items.iter().enumerate().map(|(n, item)| f(n, item)).collect();
    }
    let size = items.len().div_ceil(parts);
    let map_part = |k: usize, part: &[T]| part.iter().enumerate().map(|(n, item)| f(k * size + n, item)).collect();
    std::thread::scope(|scope| {
        let map_part = &map_part;
        let others: Vec<_> =
            items.chunks(size).enumerate().skip(1).map(|(k, part)| scope.spawn(move || map_part(k, part))).collect();
        let mut all: Vec<R> = map_part(0, &items[..size]);
        for other in others {
            all.extend(other.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    })
}
