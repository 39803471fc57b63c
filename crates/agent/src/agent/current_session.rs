//! The session the agent works in ([`CurrentSession`]): its record (the
//! entries and the file they are written to) and the conversation as the
//! model sees it, kept in step with each other.

use pi_types::MessageList;
use serde_json::Value;

use crate::compaction::SummaryOutput;
use crate::message::AgentMessage;
use crate::model::{Model, ThinkingLevel};
use crate::session::{NewCompaction, Session, SessionError};

/// The session's record and its conversation.
pub(super) struct CurrentSession {
    record: Session,
    /// The conversation as the model sees it (what `get_messages` returns,
    /// shared with the reply instead of copied; read from the session file
    /// until something needs it whole).
    messages: MessageList,
    /// True from a compaction until the next successful reply (usage unknown).
    usage_unknown: bool,
    /// Bumped each time the conversation is rebuilt or replaced rather than
    /// added to: a [`ConversationMark`] of before no longer holds.
    rebuilds: u64,
}

impl ConversationMark {
    /// The mark of a request whose conversation its caller checks itself
    /// (an extension's SDK session: extension_cache_warming.rs).
    pub(crate) fn unchecked() -> Self {
        ConversationMark { rebuilds: 0, len: 0 }
    }
}

#[cfg(test)]
impl ConversationMark {
    /// A mark of a conversation of `len` messages after `rebuilds` rebuilds.
    pub(super) fn new_for_tests(rebuilds: u64, len: usize) -> Self {
        ConversationMark { rebuilds, len }
    }
}

/// The conversation at one moment (a model request's): later, the
/// conversation still starts with those messages when nothing rebuilt it
/// and it did not shrink ([`CurrentSession::extends`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConversationMark {
    rebuilds: u64,
    len: usize,
}

impl CurrentSession {
    /// Work in `record`, with the conversation it holds.
    pub(super) fn new(record: Session) -> Self {
        let messages = record.context_messages();
        CurrentSession { record, messages, usage_unknown: false, rebuilds: 0 }
    }

    /// The session's entries, header and file.
    pub(super) fn record(&self) -> &Session {
        &self.record
    }

    /// Name the session (`session_info`): the entry's id.
    pub(super) fn set_name(&mut self, name: &str) -> Result<String, SessionError> {
        self.record.append_session_info(name)
    }

    /// Record that the conversation goes on with `model`.
    pub(super) fn record_model(&mut self, model: &Model) -> Result<String, SessionError> {
        self.record.append_model_change(&model.provider, &model.id)
    }

    /// Record that the conversation goes on at thinking level `level`.
    pub(super) fn record_thinking(&mut self, level: ThinkingLevel) -> Result<String, SessionError> {
        self.record.append_thinking_level_change(level.as_str())
    }

    /// Label entry `target` (`None`: remove its label): the label entry's id.
    pub(super) fn label(&mut self, target: &str, label: Option<&str>) -> Result<String, SessionError> {
        self.record.append_label(target, label)
    }

    /// An extension's custom entry (not part of the conversation): its id.
    pub(super) fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.record.append_custom(custom_type, data)
    }

    /// Leave entry `target` out of the model's context from now on (a
    /// `context_edit`, as pi appends for a failed attempt): the edit's id.
    /// The conversation is the caller's to trim ([`CurrentSession::retract`]).
    pub(super) fn hide_from_context(&mut self, target: &str) -> Result<String, SessionError> {
        self.record.append_context_edit(target, None)
    }

    /// Append the drafts an `agent_before_settle` boundary proposed
    /// (`custom`, `custom_message`, `context_edit`, `compaction`; other types
    /// are skipped, as pi skips them), in order; the conversation is rebuilt
    /// from the record. Returns the appended entries' ids; stops at the first
    /// draft the record refuses, with its error.
    pub(super) fn append_drafts(&mut self, drafts: &[Value]) -> (Vec<String>, Option<SessionError>) {
        let mut ids = Vec::new();
        let mut failure = None;
        for draft in drafts {
            match self.append_draft(draft) {
                Ok(Some(id)) => ids.push(id),
                Ok(None) => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if !ids.is_empty() {
            self.rebuild_from_record();
        }
        (ids, failure)
    }

    /// A write of an extension's `sessionManager` (pi's `appendMessage`,
    /// `appendCustomEntry`, `appendCustomMessageEntry`, `appendLabelChange`,
    /// `appendSessionInfo`, `appendModelChange`, `appendThinkingLevelChange`,
    /// `appendCompaction`, `branchWithSummary`; `branch` and `resetLeaf` move
    /// the leaf), chained from the leaf without events. As in pi, a model or
    /// thinking-level entry changes neither of them; the conversation (what
    /// the next request holds) is rebuilt from the record. The new entry's id.
    pub(super) fn append_entry(&mut self, kind: &str, params: &Value) -> Result<Option<String>, String> {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_string);
        let field = |key: &str| params.get(key).filter(|v| !v.is_null()).cloned();
        let usage = || field("usage").and_then(|u| serde_json::from_value(u).ok());
        let id = match kind {
            "message" => {
                let message = params.get("message").cloned().ok_or("\"message\" is required")?;
                let message: AgentMessage =
                    serde_json::from_value(message).map_err(|e| format!("invalid message: {e}"))?;
                self.record.append_message(message).map(Some)
            }
            "label" => {
                let target = text("targetId").ok_or("\"targetId\" is required")?;
                self.record.append_label(&target, text("label").as_deref().filter(|l| !l.is_empty())).map(Some)
            }
            "session_info" => self.record.append_session_info(&text("name").unwrap_or_default()).map(Some),
            "model_change" => self
                .record
                .append_model_change(&text("provider").unwrap_or_default(), &text("modelId").unwrap_or_default())
                .map(Some),
            "thinking_level_change" => {
                self.record.append_thinking_level_change(&text("thinkingLevel").unwrap_or_default()).map(Some)
            }
            "compaction" => {
                let summary = text("summary").unwrap_or_default();
                let first_kept = text("firstKeptEntryId");
                self.record
                    .append_compaction_from(NewCompaction {
                        summary: &summary,
                        first_kept_entry_id: first_kept.as_deref(),
                        tokens_before: params.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
                        details: field("details"),
                        usage: usage(),
                        from_hook: params.get("fromHook").and_then(Value::as_bool),
                    })
                    .map(Some)
            }
            "branch_summary" => {
                let from_hook = params.get("fromHook").and_then(Value::as_bool);
                let (target, summary) = (text("targetId"), text("summary").unwrap_or_default());
                self.record
                    .branch_with_summary_from(target.as_deref(), &summary, field("details"), usage(), from_hook)
                    .map(Some)
            }
            "branch" => {
                let target = text("targetId").ok_or("\"targetId\" is required")?;
                self.record.set_leaf(&target).map(|()| None)
            }
            "reset_leaf" => {
                self.record.reset_leaf();
                Ok(None)
            }
            "custom" | "custom_message" => {
                let mut draft = params.clone();
                draft["type"] = Value::String(kind.to_string());
                self.append_draft(&draft)
            }
            other => return Err(format!("sessionManager: appending a {other} entry is not supported by pi-rpc")),
        }
        .map_err(|e| e.to_string())?;
        self.rebuild_from_record();
        Ok(id)
    }

    fn append_draft(&mut self, draft: &Value) -> Result<Option<String>, SessionError> {
        let text = |key: &str| draft.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let field = |key: &str| draft.get(key).filter(|v| !v.is_null()).cloned();
        let id = match draft.get("type").and_then(Value::as_str) {
            Some("custom") => self.record.append_custom(&text("customType"), field("data"))?,
            Some("custom_message") => {
                let content = field("content").and_then(|c| serde_json::from_value(c).ok());
                let content = content.unwrap_or_else(|| crate::message::UserContent::Blocks(Vec::new()));
                let display = draft.get("display").and_then(Value::as_bool).unwrap_or(false);
                self.record.append_custom_message(&text("customType"), content, display, field("details"))?
            }
            Some("context_edit") => self.record.append_context_edit(&text("targetId"), field("replacement"))?,
            Some("compaction") => {
                let tokens_before = crate::compaction::estimate::estimate_context(&self.messages).0;
                let first_kept = draft.get("firstKeptEntryId").and_then(Value::as_str);
                let usage = field("usage").and_then(|u| serde_json::from_value(u).ok());
                let summary = text("summary");
                self.record.append_compaction_from(NewCompaction {
                    summary: &summary,
                    first_kept_entry_id: first_kept,
                    tokens_before,
                    details: field("details"),
                    usage,
                    from_hook: Some(true),
                })?
            }
            _ => return Ok(None),
        };
        Ok(Some(id))
    }

    /// Record a compaction that keeps the entries from `first_kept` on; the
    /// conversation is rebuilt from the record, and context usage is
    /// unknown until the next reply.
    /// `from_hook`: an extension wrote the summary. Returns the entry id.
    pub(super) fn compact(
        &mut self,
        out: &SummaryOutput,
        first_kept: &str,
        tokens_before: u64,
        from_hook: bool,
    ) -> Result<String, SessionError> {
        let details = (!out.details.is_null()).then(|| out.details.clone());
        let id = self.record.append_compaction_from(NewCompaction {
            summary: &out.summary,
            first_kept_entry_id: Some(first_kept),
            tokens_before,
            details,
            usage: out.usage.clone(),
            from_hook: Some(from_hook),
        })?;
        self.rebuilds += 1;
        self.messages = self.record.context().messages.into();
        self.usage_unknown = true;
        Ok(id)
    }

    /// Move the leaf to `new_leaf` (`None`: before the first entry), with a
    /// `branch_summary` there when `summary` (text, details, usage, from an
    /// extension) is given; the conversation follows. Returns the summary's id.
    pub(super) fn navigate(
        &mut self,
        new_leaf: Option<&str>,
        summary: Option<(&str, Option<Value>, Option<crate::message::Usage>, bool)>,
    ) -> Result<Option<String>, SessionError> {
        let id = match summary {
            Some((text, details, usage, from_hook)) => {
                Some(self.record.branch_with_summary_from(new_leaf, text, details, usage, Some(from_hook))?)
            }
            None => {
                match new_leaf {
                    Some(id) => self.record.set_leaf(id)?,
                    None => self.record.reset_leaf(),
                }
                None
            }
        };
        self.rebuilds += 1;
        self.messages = self.record.context_messages();
        Ok(id)
    }

    /// The conversation as the model sees it.
    /// The conversation read back from the record after entries were
    /// appended to it; a rebuild only when it no longer starts as it did.
    fn rebuild_from_record(&mut self) {
        let rebuilt = self.record.context_messages();
        let kept = rebuilt.len() >= self.messages.len() && rebuilt[..self.messages.len()] == self.messages[..];
        if !kept {
            self.rebuilds += 1;
        }
        self.messages = rebuilt;
    }

    /// The conversation as it stands, to check later with [`CurrentSession::extends`].
    pub(super) fn mark(&self) -> ConversationMark {
        ConversationMark { rebuilds: self.rebuilds, len: self.messages.len() }
    }

    /// Whether the conversation still starts with the messages it had at `mark`.
    pub(super) fn extends(&self, mark: &ConversationMark) -> bool {
        self.rebuilds == mark.rebuilds && self.messages.len() >= mark.len
    }

    /// The prompt size of the branch's last model reply (input, cache read
    /// and cache write tokens, as the provider reported them); 0 without one.
    pub(super) fn last_prompt_tokens(&self) -> u64 {
        let branch = self.record.branch();
        let last = branch.iter().rev().find_map(|e| match e.message() {
            Some(AgentMessage::Assistant(a)) => Some(a.usage.input + a.usage.cache_read + a.usage.cache_write),
            _ => None,
        });
        last.unwrap_or(0)
    }

    /// Append a `usage` entry (model-attributed usage outside the
    /// conversation: a cache refresh's), as pi 1.6.0 writes it: the entry.
    pub(super) fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: &crate::message::Usage,
        note: Option<&str>,
    ) -> Result<Value, SessionError> {
        let mut fields = serde_json::Map::new();
        fields.insert("kind".into(), Value::String(kind.to_string()));
        fields.insert("provider".into(), Value::String(provider.to_string()));
        fields.insert("model".into(), Value::String(model.to_string()));
        fields.insert("usage".into(), serde_json::to_value(usage).unwrap_or(Value::Null));
        if let Some(note) = note {
            fields.insert("note".into(), Value::String(note.to_string()));
        }
        let entry = self.record.append_raw("usage", fields)?;
        Ok(serde_json::to_value(entry).unwrap_or(Value::Null))
    }

    pub(super) fn messages(&self) -> &MessageList {
        &self.messages
    }

    /// Switch to `record` (its conversation); the session left is returned.
    pub(super) fn replace(&mut self, record: Session) -> Session {
        self.rebuilds += 1;
        self.messages = record.context_messages();
        self.usage_unknown = false;
        std::mem::replace(&mut self.record, record)
    }

    /// Add a message to the conversation and the record.
    pub(super) fn append(&mut self, message: AgentMessage) {
        let written = match &message {
            AgentMessage::Custom(c) => {
                self.record.append_custom_message(&c.custom_type, c.content.clone(), c.display, c.details.clone())
            }
            _ => self.record.append_message(message.clone()),
        };
        if let Err(e) = written {
            tracing::error!("cannot write session entry: {e}");
        }
        self.messages.make_mut().push(message);
    }

    /// Drop the latest copy of `message` from the conversation (the record keeps it).
    pub(super) fn retract(&mut self, message: &AgentMessage) {
        if let Some(pos) = self.messages.iter().rposition(|m| m == message) {
            self.messages.make_mut().remove(pos);
        }
    }

    /// A reply reported its usage.
    pub(super) fn usage_known(&mut self) {
        self.usage_unknown = false;
    }

    /// No reply since the last compaction has told the context's usage.
    pub(super) fn is_usage_unknown(&self) -> bool {
        self.usage_unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_and_record_stay_in_step() {
        let dir = tempfile::tempdir().unwrap();
        let mut current = CurrentSession::new(Session::in_memory(dir.path()));
        let hello = AgentMessage::user("hello", &[]);
        current.append(hello.clone());
        current.append(AgentMessage::user("again", &[]));
        assert_eq!(current.messages().len(), 2);
        assert_eq!(current.record().context_messages().len(), 2);
        current.retract(&hello);
        assert_eq!(current.messages().len(), 1);
        assert_eq!(current.record().context_messages().len(), 2);
        current.record_thinking(ThinkingLevel::High).unwrap();
        current.set_name("named").unwrap();
        assert_eq!(current.record().name().as_deref(), Some("named"));
        let old = current.replace(Session::in_memory(dir.path()));
        assert_eq!(old.context_messages().len(), 2);
        assert!(current.messages().is_empty() && !current.is_usage_unknown());
    }
}
