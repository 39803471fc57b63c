//! Appending entries: ids, parent links and timestamps, one helper per entry type.

use serde_json::{Map, Value};

use super::entry::{
    BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, EntryBase, KnownEntry, LabelEntry,
    MessageEntry, ModelChangeEntry, SessionEntry, SessionInfoEntry, StoredMessage, ThinkingLevelChangeEntry, iso_now,
};
use super::error::SessionError;
use super::record::message_role;
use super::store::{Session, generate_id};
use crate::message::{AgentMessage, Usage, UserContent};

/// A `compaction` entry to append: the summary, the first entry it keeps
/// (`None`: the entry names itself), the context's tokens before it, pi's
/// `details`, the usage of writing it, and `fromHook` (left out when
/// `None`, as pi leaves out an `appendCompaction` argument not given).
pub struct NewCompaction<'a> {
    pub summary: &'a str,
    pub first_kept_entry_id: Option<&'a str>,
    pub tokens_before: u64,
    pub details: Option<Value>,
    pub usage: Option<Usage>,
    pub from_hook: Option<bool>,
}

impl Session {
    /// A fresh entry id, unique in this session.
    pub fn new_entry_id(&self) -> String {
        generate_id(|id| self.index.contains_key(id))
    }

    /// The base of a new entry: fresh id, parent = current leaf, time now.
    fn next_base(&self) -> EntryBase {
        EntryBase { id: self.new_entry_id(), parent_id: self.leaf.clone(), timestamp: iso_now() }
    }

    /// Append any known entry; `build` receives the base (id, parentId = leaf,
    /// timestamp) to embed. The leaf moves to the new entry.
    pub fn append_entry(&mut self, build: impl FnOnce(EntryBase) -> KnownEntry) -> Result<&SessionEntry, SessionError> {
        let entry = build(self.next_base());
        self.push(SessionEntry::Known(entry))
    }

    /// Append an entry of a type we do not model (e.g. pi 1.6 `usage`):
    /// `{"type":kind,"id","parentId","timestamp",...fields}`.
    pub fn append_raw(&mut self, kind: &str, fields: Map<String, Value>) -> Result<&SessionEntry, SessionError> {
        let base = self.next_base();
        let mut obj = Map::new();
        obj.insert("type".into(), Value::String(kind.to_string()));
        obj.insert("id".into(), Value::String(base.id));
        obj.insert("parentId".into(), base.parent_id.map_or(Value::Null, Value::String));
        obj.insert("timestamp".into(), Value::String(base.timestamp));
        for (k, v) in fields {
            if !matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp") {
                obj.insert(k, v);
            }
        }
        self.push(SessionEntry::from_value(Value::Object(obj)))
    }

    fn append_known(&mut self, build: impl FnOnce(EntryBase) -> KnownEntry) -> Result<String, SessionError> {
        let entry = self.append_entry(build)?;
        Ok(entry.id().unwrap_or_default().to_string())
    }

    /// Append a `message` entry. Compaction and branch summaries have their
    /// own entry types, and extension messages (`custom` role) belong in
    /// [`Session::append_custom_message`], as in pi. Returns the entry id.
    pub fn append_message(&mut self, message: AgentMessage) -> Result<String, SessionError> {
        self.append_known(|base| {
            KnownEntry::Message(MessageEntry { base, message: StoredMessage::Known(message), extra: Map::new() })
        })
    }

    /// Append a `model_change` entry. Returns the entry id.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String, SessionError> {
        self.append_known(|base| {
            KnownEntry::ModelChange(ModelChangeEntry {
                base,
                provider: provider.to_string(),
                model_id: model_id.to_string(),
                extra: Map::new(),
            })
        })
    }

    /// Append a `thinking_level_change` entry. Returns the entry id.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, SessionError> {
        self.append_known(|base| {
            KnownEntry::ThinkingLevelChange(ThinkingLevelChangeEntry {
                base,
                thinking_level: level.to_string(),
                extra: Map::new(),
            })
        })
    }

    /// Append a `session_info` entry; like pi, line breaks become spaces and
    /// the name is trimmed. Returns the entry id.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        let mut clean = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    clean.push(' ');
                }
                in_break = true;
            } else {
                clean.push(c);
                in_break = false;
            }
        }
        let clean = clean.trim().to_string();
        self.append_known(|base| {
            KnownEntry::SessionInfo(SessionInfoEntry { base, name: Some(clean), extra: Map::new() })
        })
    }

    /// Append a `compaction` entry (`fromHook:false`, as pi writes for its
    /// own compactions) with the prompt and tools declared so far as its
    /// `systemMessage`. `first_kept_entry_id: None` keeps nothing: the entry
    /// names itself. Returns the entry id.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: u64,
        details: Option<Value>,
        usage: Option<Usage>,
    ) -> Result<String, SessionError> {
        let from_hook = Some(false);
        self.append_compaction_from(NewCompaction {
            summary,
            first_kept_entry_id,
            tokens_before,
            details,
            usage,
            from_hook,
        })
    }

    /// [`Session::append_compaction`] of a [`NewCompaction`], which also
    /// says whether an extension (pi's `session_before_compact`) wrote the summary.
    pub fn append_compaction_from(&mut self, compaction: NewCompaction<'_>) -> Result<String, SessionError> {
        let NewCompaction { summary, first_kept_entry_id, tokens_before, details, usage, from_hook } = compaction;
        let declared = crate::system_message::replay(&self.context().messages);
        self.append_known(|base| {
            let first_kept = first_kept_entry_id.map_or_else(|| base.id.clone(), str::to_string);
            let at = super::tree::iso_to_ms(&base.timestamp).unwrap_or_else(crate::message::now_ms);
            KnownEntry::Compaction(CompactionEntry {
                base,
                summary: summary.to_string(),
                first_kept_entry_id: first_kept,
                tokens_before,
                details,
                usage,
                from_hook,
                system_message: declared.checkpoint(at),
                extra: Map::new(),
            })
        })
    }

    /// Move the leaf to `branch_from` (`None`: a new root) and append a
    /// `branch_summary` of the abandoned path there (`fromId` = old leaf or
    /// `"root"`). Returns the entry id.
    pub fn branch_with_summary(
        &mut self,
        branch_from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        usage: Option<Usage>,
    ) -> Result<String, SessionError> {
        self.branch_with_summary_from(branch_from, summary, details, usage, None)
    }

    /// [`Session::branch_with_summary`], recording `fromHook` (whether an
    /// extension wrote the summary) when given.
    pub fn branch_with_summary_from(
        &mut self,
        branch_from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        usage: Option<Usage>,
        from_hook: Option<bool>,
    ) -> Result<String, SessionError> {
        if let Some(id) = branch_from
            && !self.index.contains_key(id)
        {
            return Err(SessionError::EntryNotFound(id.to_string()));
        }
        let from_id = self.leaf.clone().unwrap_or_else(|| "root".into());
        let previous_leaf = std::mem::replace(&mut self.leaf, branch_from.map(str::to_string));
        let result = self.append_known(|base| {
            KnownEntry::BranchSummary(BranchSummaryEntry {
                base,
                from_id,
                summary: summary.to_string(),
                details,
                usage,
                from_hook,
                extra: Map::new(),
            })
        });
        if result.is_err() {
            self.leaf = previous_leaf;
        }
        result
    }

    /// Append a `label` entry on `target_id`; `None` or `""` clears the label.
    pub fn append_label(&mut self, target_id: &str, label: Option<&str>) -> Result<String, SessionError> {
        if !self.index.contains_key(target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_string()));
        }
        self.append_known(|base| {
            KnownEntry::Label(LabelEntry {
                base,
                target_id: target_id.to_string(),
                label: label.map(str::to_string),
                extra: Map::new(),
            })
        })
    }

    /// Append a `custom` entry (extension state, not in the model context).
    pub fn append_custom(&mut self, custom_type: &str, data: Option<Value>) -> Result<String, SessionError> {
        self.append_known(|base| {
            KnownEntry::Custom(CustomEntry { base, custom_type: custom_type.to_string(), data, extra: Map::new() })
        })
    }

    /// Append a `custom_message` entry (extension message, part of the context).
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append_known(|base| {
            KnownEntry::CustomMessage(CustomMessageEntry {
                base,
                custom_type: custom_type.to_string(),
                content,
                display,
                details,
                extra: Map::new(),
            })
        })
    }

    /// Append a pi 1.6 `context_edit` entry: `replacement` `None` hides the
    /// target from the model context, `Some({"content": …})` replaces its
    /// content. The target must be a user/assistant/toolResult message or a
    /// custom message on the active branch (pi's rules and texts).
    pub fn append_context_edit(&mut self, target_id: &str, replacement: Option<Value>) -> Result<String, SessionError> {
        if let Some(r) = &replacement
            && !r.get("content").is_some_and(|c| c.is_string() || c.is_array())
        {
            return Err(SessionError::InvalidContextEdit(
                "Context edit replacement must be null or contain string/array content".into(),
            ));
        }
        let Some(target) = self.get(target_id) else {
            return Err(SessionError::EntryNotFound(target_id.to_string()));
        };
        let role = match &target {
            SessionEntry::Known(KnownEntry::CustomMessage(_)) => Some("custom"),
            other => message_role(other).filter(|r| matches!(*r, "user" | "assistant" | "toolResult")),
        };
        if !self.branch().iter().any(|e| e.id() == Some(target_id)) {
            return Err(SessionError::InvalidContextEdit(format!("Entry {target_id} is not on the active branch")));
        }
        let Some(role) = role else {
            return Err(SessionError::InvalidContextEdit(format!(
                "Entry {target_id} does not contribute editable model content"
            )));
        };
        let replacement = match replacement {
            Some(Value::Object(mut obj)) if matches!(role, "assistant" | "toolResult") => {
                if let Some(Value::String(text)) = obj.get("content").cloned() {
                    obj = Map::new();
                    obj.insert("content".into(), serde_json::json!([{"type": "text", "text": text}]));
                }
                Value::Object(obj)
            }
            Some(other) => other,
            None => Value::Null,
        };
        let mut fields = Map::new();
        fields.insert("targetId".into(), Value::String(target_id.to_string()));
        fields.insert("replacement".into(), replacement);
        let entry = self.append_raw("context_edit", fields)?;
        Ok(entry.id().unwrap_or_default().to_string())
    }
}
