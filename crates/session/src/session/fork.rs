//! Fork and clone: new sessions made of one branch of the current one.
//!
//! Like pi 1.6 (`createBranchedSession`): the new session holds the path
//! root..=target with the entries' own ids; `label` entries on the path are
//! dropped and the remaining entries re-chained (each `parentId` = the
//! previous kept entry), then every label currently set on a kept entry is
//! re-created at the end as a fresh `label` entry (new id, original label
//! timestamp). A compaction whose `firstKeptEntryId` named a dropped label
//! is pointed at the entry that followed it. The new header gets a new id,
//! the current cwd and `parentSession` = the current file (none in memory).
//! The new file is written at once when the copied path already holds a user
//! or assistant message, otherwise on its first one.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::entry::{KnownEntry, SessionEntry};
use super::error::SessionError;
use super::store::{Record, Session, generate_id, new_header, session_file_name};
use crate::message::AgentMessage;

impl Session {
    /// Fork before the user message `entry_id` (`fork`): returns the new
    /// session (holding the branch that led to that message) and the
    /// message's text. A root user message gives an empty session.
    pub fn fork(&self, entry_id: &str) -> Result<(Session, String), SessionError> {
        let entry = self.get(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        let SessionEntry::Known(KnownEntry::Message(m)) = entry else {
            return Err(SessionError::InvalidForkEntry);
        };
        let Some(AgentMessage::User(user)) = m.message.known() else {
            return Err(SessionError::InvalidForkEntry);
        };
        let text = user.content.text();
        let session = match m.base.parent_id.as_deref() {
            None => self.empty_child(),
            Some(parent) => {
                self.check_saved()?;
                self.branched(parent)?
            }
        };
        Ok((session, text))
    }

    /// Copy the current branch up to the leaf into a new session (`clone`).
    pub fn clone_branch(&self) -> Result<Session, SessionError> {
        let leaf = self.leaf.as_deref().ok_or(SessionError::NoLeaf)?;
        self.check_saved()?;
        self.branched(leaf)
    }

    /// Copy the path from the root to `entry_id` into a new session (pi's
    /// `fork(id, {position: "at"})`): that entry is the new leaf.
    pub fn clone_to(&self, entry_id: &str) -> Result<Session, SessionError> {
        self.get(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        self.check_saved()?;
        self.branched(entry_id)
    }

    /// A persisted session must have its file before it can be forked.
    fn check_saved(&self) -> Result<(), SessionError> {
        match &self.file {
            Some(path) if !self.flushed || !path.exists() => Err(SessionError::NotSaved),
            _ => Ok(()),
        }
    }

    /// A new empty session in the same place, child of this one.
    fn empty_child(&self) -> Session {
        let parent = self.file.as_ref().map(|p| p.to_string_lossy().into_owned());
        let header = new_header(&self.cwd, parent);
        let file = self.session_dir.as_ref().map(|dir| session_file_name(dir, &header));
        Session::from_parts(header, self, file)
    }

    fn from_parts(header: super::entry::SessionHeader, from: &Session, file: Option<std::path::PathBuf>) -> Session {
        let mut session = Session {
            header: std::sync::Arc::new(header),
            header_raw: None,
            cwd: from.cwd.clone(),
            slots: Vec::new(),
            source: None,
            index: HashMap::new(),
            parents: Vec::new(),
            dangling: false,
            labels: HashMap::new(),
            leaf: None,
            file,
            session_dir: from.session_dir.clone(),
            flushed: false,
            fence: None,
        };
        session.rebuild_index();
        session
    }

    /// The new session holding root..=`leaf_id` (see the module docs).
    fn branched(&self, leaf_id: &str) -> Result<Session, SessionError> {
        let path = self.path_positions(leaf_id);
        if path.is_empty() {
            return Err(SessionError::EntryNotFound(leaf_id.to_string()));
        }
        let mut records: Vec<Record> = Vec::with_capacity(path.len());
        let mut label_successor: HashMap<String, String> = HashMap::new();
        let mut pending_labels: Vec<String> = Vec::new();
        let mut parent: Option<String> = None;
        for &i in &path {
            let record = self.record_at(i);
            let id = record.entry.id().unwrap_or_default().to_string();
            if matches!(record.entry, SessionEntry::Known(KnownEntry::Label(_))) {
                pending_labels.push(id);
                continue;
            }
            for label_id in pending_labels.drain(..) {
                label_successor.insert(label_id, id.clone());
            }
            let mut first_kept_fix = None;
            if let SessionEntry::Known(KnownEntry::Compaction(c)) = &record.entry
                && c.first_kept_entry_id != id
            {
                first_kept_fix = label_successor.get(&c.first_kept_entry_id).cloned();
            }
            let same_parent = record.entry.parent_id() == parent.as_deref();
            if same_parent && first_kept_fix.is_none() {
                records.push(record.clone());
            } else {
                let mut value = record.to_value()?;
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("parentId".into(), parent.clone().map_or(Value::Null, Value::String));
                    if let Some(kept) = first_kept_fix {
                        obj.insert("firstKeptEntryId".into(), Value::String(kept));
                    }
                }
                records.push(Record::from_value(value));
            }
            parent = Some(id);
        }
        // Labels currently set on kept entries, re-created at the end.
        let mut used: HashSet<String> = records.iter().filter_map(|r| r.entry.id().map(str::to_string)).collect();
        let mut labels: Vec<(&String, &super::store::Label)> =
            self.labels.iter().filter(|(target, _)| used.contains(target.as_str())).collect();
        // pi walks its label map in insertion order.
        labels.sort_by_key(|(_, label)| label.seq);
        for (target, label) in labels {
            let id = generate_id(|c| used.contains(c));
            used.insert(id.clone());
            let value = serde_json::json!({
                "type": "label",
                "id": id,
                "parentId": parent,
                "timestamp": label.timestamp,
                "targetId": target,
                "label": label.label,
            });
            records.push(Record::from_value(value));
            parent = Some(id);
        }

        let parent_session = self.file.as_ref().map(|p| p.to_string_lossy().into_owned());
        let header = new_header(&self.cwd, parent_session);
        let file = match (&self.file, &self.session_dir) {
            (Some(_), Some(dir)) => Some(session_file_name(dir, &header)),
            _ => None,
        };
        let mut session = Session::from_parts(header, self, file);
        session.slots = records.into_iter().map(super::slot::Slot::resident).collect();
        session.rebuild_index();
        if let Some(path) = session.file.clone()
            && session.has_conversation()
        {
            super::store::write_new_file(&path, &session.file_text()?)?;
            session.flushed = true;
        }
        Ok(session)
    }
}
