//! The session as compaction sees it: pi 1.6's `buildSessionProjection`
//! entries (context entries with the messages each contributes after context
//! edits), plus the facts the cut-point rules and token estimates need.

use serde_json::Value;

use super::estimate::{estimate_messages, estimate_system_value, estimate_tokens, valid_usage};
use crate::message::AgentMessage;
use crate::session::Session;
use crate::session::SessionEntry;
use crate::session::entry::{KnownEntry, StoredMessage};

/// One context entry of the projection.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedEntry {
    pub id: Option<String>,
    /// The entry type as written in the file (`message`, `compaction`, …).
    pub kind: String,
    /// Messages the entry contributes to the model context (after edits),
    /// system messages apart (see `system_tokens`).
    pub messages: Vec<AgentMessage>,
    /// Estimated tokens of the system messages this entry contributes.
    pub system_tokens: Option<u64>,
    /// The entry would contribute messages without context edits
    /// (pi's `sessionEntryToContextMessages(entry).length > 0`).
    pub raw_visible: bool,
    /// For `message` entries: the stored message's role (also when edited away).
    pub role: Option<String>,
    /// For `context_edit` entries: the target id and whether the replacement is null.
    pub edit: Option<(String, bool)>,
    /// For `compaction` entries: the summary, details and `fromHook`.
    pub compaction: Option<CompactionInfo>,
}

/// What a compaction entry carries forward into the next compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionInfo {
    pub summary: String,
    pub details: Option<Value>,
    pub from_hook: bool,
    pub timestamp_ms: Option<i64>,
}

impl ProjectedEntry {
    /// pi's `entry.messages.length > 0`.
    pub fn contributes(&self) -> bool {
        !self.messages.is_empty() || self.system_tokens.is_some()
    }

    /// Estimated tokens of everything the entry contributes.
    pub fn tokens(&self) -> u64 {
        estimate_messages(&self.messages) + self.system_tokens.unwrap_or(0)
    }
}

/// The compaction-aware context of the current leaf, entry by entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    pub entries: Vec<ProjectedEntry>,
    /// Ids and types of the root-to-leaf path from its latest context edit
    /// or compaction on (the whole path when it has none), for staleness
    /// checks: what lies before that entry is stale whatever it is.
    pub branch: Vec<(Option<String>, String)>,
}

/// A context edit or compaction: the usage reported before it no longer
/// describes the context.
fn is_invalidating(kind: &str) -> bool {
    kind == "context_edit" || kind == "compaction"
}

fn is_system(message: &StoredMessage) -> bool {
    matches!(message, StoredMessage::Other(v) if v.get("role").and_then(Value::as_str) == Some("system"))
}

fn entry_ms(entry: &SessionEntry) -> Option<i64> {
    entry.timestamp().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.timestamp_millis())
}

impl Projection {
    /// Project the session's current leaf.
    pub fn of(session: &Session) -> Projection {
        let mut entries = Vec::new();
        for (n, (pos, messages)) in session.projected_entries().into_iter().enumerate() {
            let entry = session.entry_at(pos);
            // System messages are prompt state, not conversation (pi 1.6.0):
            // they count as tokens, never as cut points or history.
            let (system, messages): (Vec<AgentMessage>, Vec<AgentMessage>) =
                messages.into_iter().partition(|m| matches!(m, AgentMessage::System(_)));
            let mut projected = ProjectedEntry {
                id: entry.id().map(str::to_string),
                kind: entry.type_name().to_string(),
                messages,
                system_tokens: (!system.is_empty()).then(|| estimate_messages(&system)),
                raw_visible: false,
                role: None,
                edit: None,
                compaction: None,
            };
            match entry {
                SessionEntry::Known(KnownEntry::Message(m)) => {
                    projected.raw_visible = true;
                    projected.role = match &m.message {
                        StoredMessage::Known(known) => Some(known.role().to_string()),
                        StoredMessage::Other(v) => v.get("role").and_then(Value::as_str).map(str::to_string),
                    };
                    if is_system(&m.message) {
                        let StoredMessage::Other(v) = &m.message else { continue };
                        projected.system_tokens = Some(estimate_system_value(v));
                    }
                }
                SessionEntry::Known(KnownEntry::CustomMessage(_)) => projected.raw_visible = true,
                SessionEntry::Known(KnownEntry::BranchSummary(b)) => projected.raw_visible = !b.summary.is_empty(),
                SessionEntry::Known(KnownEntry::Compaction(c)) => {
                    projected.raw_visible = true;
                    if n == 0
                        && c.system_message.is_none()
                        && let Some(system) = c.extra.get("systemMessage").filter(|v| v.is_object())
                    {
                        projected.system_tokens = Some(estimate_system_value(system));
                    }
                    projected.compaction = Some(CompactionInfo {
                        summary: c.summary.clone(),
                        details: c.details.clone(),
                        from_hook: c.from_hook.unwrap_or(false),
                        timestamp_ms: entry_ms(entry),
                    });
                }
                SessionEntry::Unknown(v) if entry.type_name() == "context_edit" => {
                    if let Some(target) = v.get("targetId").and_then(Value::as_str) {
                        let null = v.get("replacement").is_none_or(Value::is_null);
                        projected.edit = Some((target.to_string(), null));
                    }
                }
                _ => {}
            }
            entries.push(projected);
        }
        let heads = session.branch_heads();
        let from = heads.iter().rposition(|(_, kind)| is_invalidating(kind)).unwrap_or(0);
        let branch = heads[from..].iter().map(|(id, kind)| (id.map(str::to_string), kind.to_string())).collect();
        Projection { entries, branch }
    }

    /// All projected messages in order (pi's `projection.messages`, without system messages).
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.entries.iter().flat_map(|e| e.messages.iter().cloned()).collect()
    }

    /// pi's `estimateProjectedContextTokens`: the last valid usage plus the
    /// estimate of later messages, unless a context edit or compaction came
    /// after that usage; then an estimate of the whole projection, with
    /// `system_tokens` standing for the system prompt.
    pub fn estimate_tokens(&self, system_tokens: u64) -> u64 {
        self.estimate_tokens_with(|| system_tokens)
    }

    /// [`Projection::estimate_tokens`], computing the system prompt estimate
    /// only when it is needed.
    pub fn estimate_tokens_with(&self, system_tokens: impl FnOnce() -> u64) -> u64 {
        // (entry index, estimated tokens, valid usage tokens) per contributed message.
        let mut items: Vec<(usize, u64, Option<u64>)> = Vec::new();
        for (n, entry) in self.entries.iter().enumerate() {
            if let Some(tokens) = entry.system_tokens {
                items.push((n, tokens, None));
            }
            for m in &entry.messages {
                items.push((n, estimate_tokens(m), valid_usage(m).map(|u| u.context_tokens())));
            }
        }
        if let Some(k) = items.iter().rposition(|(_, _, usage)| usage.is_some())
            && self.usage_is_fresh(items[k].0)
        {
            let usage = items[k].2.unwrap_or(0);
            return usage + items[k + 1..].iter().map(|(_, tokens, _)| tokens).sum::<u64>();
        }
        // Recorded system messages are the prompt; without any, the stand-in.
        let declared: Option<u64> = self.entries.iter().filter_map(|e| e.system_tokens).reduce(|a, b| a + b);
        let prompt = declared.unwrap_or_else(system_tokens);
        prompt + self.entries.iter().map(|e| estimate_messages(&e.messages)).sum::<u64>()
    }

    /// True when the entry at `n` comes after the latest context edit or
    /// compaction on the branch (its usage still describes the context).
    fn usage_is_fresh(&self, n: usize) -> bool {
        let Some(id) = self.entries[n].id.as_deref() else { return false };
        let Some(usage_index) = self.branch.iter().position(|(bid, _)| bid.as_deref() == Some(id)) else {
            return false;
        };
        let invalidating = self.branch.iter().rposition(|(_, kind)| is_invalidating(kind));
        invalidating.is_none_or(|i| usage_index > i)
    }
}
