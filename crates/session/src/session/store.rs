//! `Session`: the entry tree of one session, its backing file, and appending.
//!
//! Persistence follows pi 1.6: a new session's file is created only once the
//! session holds a user or assistant message; that first write puts the
//! header and every buffered entry into a new file in one `write_all`, and
//! every later entry is appended at once as one `write_all` of a complete
//! line. Entries read from a file keep their exact JSON (see [`Record`]), so
//! re-writing them (fork, clone, migration) never drops fields that our typed
//! structs do not model.
//!
//! Entries that hold a session's bulk (messages, custom entries) are kept by
//! their place in the file once they are there (see `slot`): their bodies are
//! read back when needed and given up again by [`Session::release_memory`]
//! and at every append, so memory does not grow with the history.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::entry::{KnownEntry, SESSION_VERSION, SessionEntry, SessionHeader, iso_now};
use super::error::SessionError;
use super::load::{Entries, FileContents, read_session_file};
use super::migrate::migrate_to_current;
use super::slot::{Slot, Span};

pub(crate) use super::record::{Record, generate_id};

/// `Session::parents` of an entry without a parent in the session.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// A label currently set on an entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Label {
    pub(crate) label: String,
    pub(crate) timestamp: String,
    /// When the target first got its current run of labels (pi's map
    /// insertion order, which fork/clone follow).
    pub(crate) seq: usize,
}

/// One session: header, entries in append order, the leaf pointer, and
/// (unless in-memory) the file it lives in.
#[derive(Debug, Clone)]
pub struct Session {
    /// Shared with the state snapshots that show it (`get_state` copies no string of it).
    pub(crate) header: Arc<SessionHeader>,
    /// Exact header JSON when the typed header would serialize differently.
    pub(crate) header_raw: Option<Box<str>>,
    /// Effective working directory (header `cwd`, or the caller's when absent).
    pub(crate) cwd: String,
    pub(crate) slots: Vec<Slot>,
    /// The backing file opened for reading entries back (see `slot`).
    pub(crate) source: Option<Arc<File>>,
    /// Entry id -> position in `slots` (the last one wins for duplicate ids).
    pub(crate) index: HashMap<String, usize>,
    /// Position in `slots` of each entry's parent, through `index`
    /// ([`NO_PARENT`] for a root or a missing parent): walking a path costs
    /// no id look-up.
    pub(crate) parents: Vec<u32>,
    /// Some entry names a parent id that no entry has (a damaged or
    /// hand-edited file): a later entry may be that parent.
    pub(crate) dangling: bool,
    /// Target entry id -> its current label.
    pub(crate) labels: HashMap<String, Label>,
    pub(crate) leaf: Option<String>,
    /// Backing file; `None` for an in-memory (`--no-session`) session.
    pub(crate) file: Option<PathBuf>,
    /// Directory new sessions (fork, clone) are created in.
    pub(crate) session_dir: Option<PathBuf>,
    /// The file exists and holds every entry.
    pub(crate) flushed: bool,
    /// Entered before each write of the file (a cluster's fencing; none alone).
    pub(crate) fence: Option<super::SharedFence>,
}

fn absolute(path: &Path) -> PathBuf {
    super::lookup::resolve_from_cwd(path)
}

pub(crate) fn new_header(cwd: &str, parent_session: Option<String>) -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: SESSION_VERSION,
        id: uuid::Uuid::now_v7().to_string(),
        timestamp: iso_now(),
        cwd: cwd.to_string(),
        parent_session,
        extra: Map::new(),
    }
}

/// `<dir>/<header timestamp with ':' and '.' -> '-'>_<session id>.jsonl`.
pub(crate) fn session_file_name(dir: &Path, header: &SessionHeader) -> PathBuf {
    dir.join(format!("{}_{}.jsonl", header.timestamp.replace([':', '.'], "-"), header.id))
}

/// Lenient header reading: pi only requires `type:"session"` and a string id.
fn header_from_value(value: &Value) -> SessionHeader {
    if let Ok(h) = serde_json::from_value::<SessionHeader>(value.clone()) {
        return h;
    }
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
    let mut extra = value.as_object().cloned().unwrap_or_default();
    for k in ["type", "version", "id", "timestamp", "cwd", "parentSession"] {
        extra.shift_remove(k);
    }
    SessionHeader {
        kind: "session".into(),
        version: value.get("version").and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok()).unwrap_or(1),
        id: text("id").unwrap_or_default(),
        timestamp: text("timestamp").unwrap_or_default(),
        cwd: text("cwd").unwrap_or_default(),
        parent_session: text("parentSession"),
        extra,
    }
}

/// Write `contents` to a new or truncated file in one `write_all`.
fn write_file(path: &Path, contents: &str, create_new: bool) -> Result<(), SessionError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    let mut file = options.open(path).map_err(|e| SessionError::io(path, e))?;
    file.write_all(contents.as_bytes()).map_err(|e| SessionError::io(path, e))
}

/// Create `path` (which must not exist) holding `contents`.
pub(crate) fn write_new_file(path: &Path, contents: &str) -> Result<(), SessionError> {
    write_file(path, contents, true)
}

/// Replace `path` by `contents` atomically (temporary file + rename).
fn replace_file(path: &Path, contents: &str) -> Result<(), SessionError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    write_file(&tmp, contents, true)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        SessionError::io(path, e)
    })
}

impl Session {
    pub(crate) fn empty(header: SessionHeader, file: Option<PathBuf>, session_dir: Option<PathBuf>) -> Self {
        Session {
            cwd: header.cwd.clone(),
            header: Arc::new(header),
            header_raw: None,
            slots: Vec::new(),
            source: None,
            index: HashMap::new(),
            parents: Vec::new(),
            dangling: false,
            labels: HashMap::new(),
            leaf: None,
            file,
            session_dir,
            flushed: false,
            fence: None,
        }
    }

    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: impl AsRef<Path>) -> Self {
        let cwd = absolute(cwd.as_ref()).to_string_lossy().into_owned();
        Session::empty(new_header(&cwd, None), None, None)
    }

    /// A new session in `session_dir` (created if missing). Its file,
    /// `<dir>/<timestamp>_<uuid v7>.jsonl`, is written only once the session
    /// holds a user or assistant message.
    pub fn create(
        session_dir: impl AsRef<Path>,
        cwd: impl AsRef<Path>,
        parent_session: Option<String>,
    ) -> Result<Self, SessionError> {
        let dir = absolute(session_dir.as_ref());
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        let cwd = absolute(cwd.as_ref()).to_string_lossy().into_owned();
        let header = new_header(&cwd, parent_session);
        let file = session_file_name(&dir, &header);
        Ok(Session::empty(header, Some(file), Some(dir)))
    }

    /// Open the session file at `path` (pi's `switch_session` / `--session`).
    ///
    /// * missing file: a new empty session bound to that path (`cwd` =
    ///   `default_cwd`), written on its first conversation message;
    /// * empty file: a new session whose header is written at once;
    /// * v1/v2 file: migrated to v3 and the file rewritten (atomically);
    /// * damaged lines are skipped and reported in the returned warnings; a
    ///   file not ending in a newline gets one appended before anything else;
    /// * a non-empty file without a header: [`SessionError::NotASession`].
    ///
    /// New sessions made from it (fork, clone) go to the file's directory.
    pub fn open(path: impl AsRef<Path>, default_cwd: impl AsRef<Path>) -> Result<(Self, Vec<String>), SessionError> {
        let path = absolute(path.as_ref());
        let dir = path.parent().map(Path::to_path_buf);
        let default_cwd = absolute(default_cwd.as_ref()).to_string_lossy().into_owned();
        if !path.exists() {
            let header = new_header(&default_cwd, None);
            return Ok((Session::empty(header, Some(path), dir), Vec::new()));
        }
        match read_session_file(&path)? {
            FileContents::Empty => {
                let header = new_header(&default_cwd, None);
                let mut session = Session::empty(header, Some(path.clone()), dir);
                write_file(&path, &session.file_text()?, false)?;
                session.flushed = true;
                Ok((session, Vec::new()))
            }
            FileContents::Session { header, entries, mut warnings, missing_final_newline, source } => {
                let from_version = header.get("version").and_then(Value::as_u64).unwrap_or(1);
                let (header, slots, migrated) = match entries {
                    Entries::Current(slots) => (header, slots, false),
                    Entries::Legacy(values) => {
                        let mut values: Vec<Value> = std::iter::once(header).chain(values).collect();
                        let migrated = migrate_to_current(&mut values);
                        let header = values.remove(0);
                        (header, values.into_iter().map(|v| Slot::resident(Record::from_value(v))).collect(), migrated)
                    }
                };
                let mut session = Session::from_file_slots(header, slots, Some(path.clone()), dir, &default_cwd);
                session.source = source.map(Arc::new);
                if migrated {
                    replace_file(&path, &session.file_text()?)?;
                    warnings.push(format!(
                        "{}: migrated from session version {from_version} to {SESSION_VERSION} (file rewritten)",
                        path.display()
                    ));
                } else if missing_final_newline {
                    let mut file =
                        std::fs::OpenOptions::new().append(true).open(&path).map_err(|e| SessionError::io(&path, e))?;
                    file.write_all(b"\n").map_err(|e| SessionError::io(&path, e))?;
                }
                session.flushed = true;
                Ok((session, warnings))
            }
        }
    }

    /// A session never written, holding `entries` (pi's JSON) as they are;
    /// its leaf is the last of them. For pi's functions that take a branch's
    /// entries (`prepareCompaction`) and are computed with pi-rpc's code.
    pub fn of_entries(cwd: &str, entries: Vec<Value>) -> Self {
        let header = serde_json::to_value(new_header(cwd, None)).unwrap_or(Value::Null);
        let slots = entries.into_iter().map(|v| Slot::resident(Record::from_value(v))).collect();
        Session::from_file_slots(header, slots, None, None, cwd)
    }

    /// A session as pi's `SessionManager` holds it: its `header` and
    /// `entries` (pi's JSON), the `file` it is kept in (not read again), its
    /// `leaf` (none: before the first entry). For pi's SDK functions that are
    /// computed with pi-rpc's code (`AgentSession.exportToHtml`).
    pub fn of_header_and_entries(
        header: Value,
        entries: Vec<Value>,
        file: Option<PathBuf>,
        leaf: Option<&str>,
        cwd: &str,
    ) -> Self {
        let slots = entries.into_iter().map(|v| Slot::resident(Record::from_value(v))).collect();
        let mut session = Session::from_file_slots(header, slots, file, None, cwd);
        match leaf {
            Some(id) if session.set_leaf(id).is_ok() => {}
            _ => session.reset_leaf(),
        }
        session
    }

    /// Build a session from its header record and its entries.
    #[cfg(test)]
    pub(crate) fn from_file_records(
        header_value: Value,
        records: Vec<Record>,
        file: Option<PathBuf>,
        session_dir: Option<PathBuf>,
        default_cwd: &str,
    ) -> Self {
        let slots = records.into_iter().map(Slot::resident).collect();
        Session::from_file_slots(header_value, slots, file, session_dir, default_cwd)
    }

    /// Build a session from its header record and its entries.
    pub(crate) fn from_file_slots(
        header_value: Value,
        slots: Vec<Slot>,
        file: Option<PathBuf>,
        session_dir: Option<PathBuf>,
        default_cwd: &str,
    ) -> Self {
        let header = header_from_value(&header_value);
        let header_text = serde_json::to_string(&header_value).ok();
        let typed_text = serde_json::to_string(&header).ok();
        let header_raw = if typed_text.is_some() && typed_text == header_text {
            None
        } else {
            header_text.map(String::into_boxed_str)
        };
        let mut session = Session::empty(header, file, session_dir);
        session.header_raw = header_raw;
        if session.cwd.is_empty() {
            session.cwd = default_cwd.to_string();
        }
        session.slots = slots;
        session.rebuild_index();
        session
    }

    /// Recompute the id index, the labels and the leaf (= last entry) from `records`.
    pub(crate) fn rebuild_index(&mut self) {
        self.index.clear();
        self.index.reserve(self.slots.len());
        self.labels.clear();
        for i in 0..self.slots.len() {
            self.index_entry(i);
        }
        // The leaf is the last entry with an id.
        self.leaf = self.slots.iter().rev().find_map(Slot::id).map(str::to_string);
        self.resolve_parents();
    }

    /// Recompute every entry's parent position from `index`.
    pub(crate) fn resolve_parents(&mut self) {
        self.dangling = false;
        let mut parents = std::mem::take(&mut self.parents);
        parents.clear();
        parents.extend((0..self.slots.len()).map(|i| self.parent_position(i)));
        self.parents = parents;
    }

    /// The position of the parent of the entry at `i`, through `index`
    /// (noting a parent id that no entry has).
    fn parent_position(&mut self, i: usize) -> u32 {
        let Some(parent) = self.slots[i].parent_id() else { return NO_PARENT };
        match self.index.get(parent) {
            Some(&p) => u32::try_from(p).unwrap_or(NO_PARENT),
            None => {
                self.dangling = true;
                NO_PARENT
            }
        }
    }

    /// `parents` after `slots` gained its last element, which took the id of
    /// the entry at `replaced` if any: only a new id that no earlier entry
    /// waits for leaves the others' parents as they are.
    fn resolve_last_parent(&mut self, replaced: Option<usize>) {
        if replaced.is_some() || self.dangling || self.parents.len() + 1 != self.slots.len() {
            self.resolve_parents();
            return;
        }
        let parent = self.parent_position(self.slots.len() - 1);
        self.parents.push(parent);
    }

    /// Index the entry at `i` and make it the leaf (when it has an id).
    fn index_record(&mut self, i: usize) {
        if self.index_entry(i) {
            self.leaf = self.slots[i].id().map(str::to_string);
        }
    }

    /// Index the entry at `i`: its id and, for a label, the label it sets.
    /// False when it has no id (it is not indexed).
    fn index_entry(&mut self, i: usize) -> bool {
        let slot = &self.slots[i];
        let Some(id) = slot.id().map(str::to_string) else { return false };
        // Labels are always resident.
        if let Some(SessionEntry::Known(KnownEntry::Label(label))) = slot.loaded().map(|r| &r.entry) {
            match label.label.as_deref().filter(|l| !l.is_empty()) {
                Some(text) => {
                    let seq = self.labels.get(&label.target_id).map_or(i, |l| l.seq);
                    let value = Label { label: text.to_string(), timestamp: label.base.timestamp.clone(), seq };
                    self.labels.insert(label.target_id.clone(), value);
                }
                None => {
                    self.labels.remove(&label.target_id);
                }
            }
        }
        self.index.insert(id, i);
        true
    }

    /// The whole file: header line then one line per entry.
    pub(crate) fn file_text(&self) -> Result<String, SessionError> {
        let mut text = match &self.header_raw {
            Some(raw) => raw.to_string(),
            None => serde_json::to_string(&self.header)?,
        };
        text.push('\n');
        for i in 0..self.slots.len() {
            text.push_str(&self.record_at(i).to_line()?);
            text.push('\n');
        }
        Ok(text)
    }

    /// True once the session holds a user or assistant message (pi's rule
    /// for creating the file).
    pub(crate) fn has_conversation(&self) -> bool {
        self.slots.iter().any(|s| matches!(s.role(), Some("user" | "assistant")))
    }

    /// The record at `pos`, read from the file if it is not in memory.
    pub(crate) fn record_at(&self, pos: usize) -> &Record {
        self.slots[pos].record(self.source.as_deref())
    }

    /// Give up the bodies of entries that can be read again from the file
    /// (after a `get_tree`, an export, a fork…): a session's memory is its
    /// index and the entries not yet written, not its history.
    pub fn release_memory(&mut self) {
        for slot in &mut self.slots {
            slot.release();
        }
    }

    /// Every body in memory for good, the file no longer being where they are read from.
    fn pin_all(&mut self) {
        let source = self.source.take();
        for slot in &mut self.slots {
            slot.pin(source.as_deref());
        }
    }

    /// From now on every write of the file first enters `fence` (a cluster
    /// worker's fencing epoch): a refused write fails.
    pub fn set_fence(&mut self, fence: Option<super::SharedFence>) {
        self.fence = fence;
    }

    /// Write what the file needs after `slots` gained its last element.
    fn persist_last(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        let _fenced = match &self.fence {
            Some(fence) => Some(fence.enter().map_err(|refused| {
                SessionError::io(&path, std::io::Error::new(std::io::ErrorKind::PermissionDenied, refused))
            })?),
            None => None,
        };
        if !self.flushed {
            if !self.has_conversation() {
                return Ok(());
            }
            write_file(&path, &self.file_text()?, true)?;
            self.flushed = true;
            return Ok(());
        }
        let Some(last) = self.slots.len().checked_sub(1) else { return Ok(()) };
        let mut line = self.record_at(last).to_line()?;
        line.push('\n');
        match std::fs::OpenOptions::new().append(true).open(&path) {
            Ok(mut file) => {
                file.write_all(line.as_bytes()).map_err(|e| SessionError::io(&path, e))?;
                self.note_written(last, &file, &path, line.len());
                Ok(())
            }
            // The file vanished under us: write it again in full rather than
            // leaving a file without a header.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = self.file_text()?;
                self.pin_all();
                write_file(&path, &text, true)
            }
            Err(e) => Err(SessionError::io(&path, e)),
        }
    }

    /// The entry at `pos` was appended to `file` as a line of `written`
    /// bytes (its `\n` included): remember where, so that its body can be
    /// read back instead of kept. Any doubt keeps it in memory.
    fn note_written(&mut self, pos: usize, file: &File, path: &Path, written: usize) {
        let Ok(end) = file.metadata().map(|m| m.len()) else { return };
        let (Some(offset), Ok(len)) = (end.checked_sub(written as u64), u32::try_from(written - 1)) else { return };
        if self.source.is_none() {
            match File::open(path) {
                Ok(source) => self.source = Some(Arc::new(source)),
                Err(_) => return,
            }
        }
        self.slots[pos].written_at(Span { offset, len });
    }

    /// Append `entry`, advance the leaf, persist; on a write failure memory is
    /// rolled back so no later entry can point at an unwritten parent.
    pub(crate) fn push(&mut self, entry: SessionEntry) -> Result<&SessionEntry, SessionError> {
        let previous_leaf = self.leaf.clone();
        let previous_labels = matches!(entry, SessionEntry::Known(KnownEntry::Label(_))).then(|| self.labels.clone());
        let previous_index = entry.id().and_then(|id| self.index.get(id).copied());
        self.release_memory();
        self.slots.push(Slot::resident(Record::new(entry)));
        let pos = self.slots.len() - 1;
        self.index_record(pos);
        self.resolve_last_parent(previous_index);
        if let Err(e) = self.persist_last() {
            let slot = self.slots.pop();
            if let Some(id) = slot.as_ref().and_then(Slot::id) {
                match previous_index {
                    Some(i) => self.index.insert(id.to_string(), i),
                    None => self.index.remove(id),
                };
            }
            if let Some(labels) = previous_labels {
                self.labels = labels;
            }
            self.leaf = previous_leaf;
            self.resolve_parents();
            return Err(e);
        }
        Ok(self.entry_at(pos))
    }

    // ----- identity and queries ------------------------------------------

    /// The session header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The header, shared (no copy).
    pub fn shared_header(&self) -> Arc<SessionHeader> {
        self.header.clone()
    }

    /// The session id (UUID v7 for sessions we create).
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The backing file (which may not exist yet); `None` when in-memory.
    pub fn file_path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Directory new sessions (fork, clone, new) are created in.
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }

    /// True when the session is backed by a file (pi's `isPersisted`), even
    /// if that file is not written yet; false for `--no-session`.
    pub fn is_persisted(&self) -> bool {
        self.file.is_some()
    }

    /// True once the backing file exists and holds every entry.
    pub fn is_saved(&self) -> bool {
        self.flushed
    }

    /// The entry at `pos` in file order (a position [`Session::projected_entries`] gives).
    pub fn entry_at(&self, pos: usize) -> &SessionEntry {
        &self.record_at(pos).entry
    }

    /// All entries in append order (header excluded), every branch included.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &SessionEntry> {
        (0..self.slots.len()).map(|i| self.entry_at(i))
    }

    /// Every entry as the JSON the file holds (fields our types do not model
    /// included), in append order.
    pub fn entries_json(&self) -> Result<Vec<Value>, SessionError> {
        (0..self.slots.len()).map(|i| self.record_at(i).to_value()).collect()
    }

    /// Number of entries.
    pub fn entry_count(&self) -> usize {
        self.slots.len()
    }

    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&SessionEntry> {
        self.index.get(id).map(|&i| self.entry_at(i))
    }

    /// True when an entry has this id (without reading it).
    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// The current leaf id (`None` before the first entry or after `reset_leaf`).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// The current leaf entry.
    pub fn leaf_entry(&self) -> Option<&SessionEntry> {
        self.leaf.as_deref().and_then(|id| self.get(id))
    }

    /// Move the leaf to an existing entry: the next append branches from it.
    pub fn set_leaf(&mut self, id: &str) -> Result<(), SessionError> {
        if !self.index.contains_key(id) {
            return Err(SessionError::EntryNotFound(id.to_string()));
        }
        self.leaf = Some(id.to_string());
        Ok(())
    }

    /// Clear the leaf: the next append is a new root (`parentId: null`).
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Entries strictly after `since` in append order (`get_entries`).
    pub fn entries_since(&self, since: &str) -> Result<Vec<SessionEntry>, SessionError> {
        let pos = self
            .slots
            .iter()
            .position(|s| s.id() == Some(since))
            .ok_or_else(|| SessionError::CursorNotFound(since.to_string()))?;
        Ok((pos + 1..self.slots.len()).map(|i| self.entry_at(i).clone()).collect())
    }

    /// Display name: the latest `session_info` of the whole file (any
    /// branch), trimmed; an empty latest name clears it.
    pub fn name(&self) -> Option<String> {
        // `session_info` entries are resident: nothing is read from the file.
        self.slots.iter().rev().filter(|s| s.is_resident()).find_map(|s| match s.loaded().map(|r| &r.entry) {
            Some(SessionEntry::Known(KnownEntry::SessionInfo(info))) => {
                Some(info.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).map(str::to_string))
            }
            _ => None,
        })?
    }
}
