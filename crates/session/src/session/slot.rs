//! One entry as the store keeps it ([`Slot`]): either resident (its typed
//! record always in memory), or known by its head (type, id, parent, role)
//! and its place in the session file, its record read from there when it is
//! needed and dropped again when the session releases memory.
//!
//! Messages, `custom`, `custom_message` and `compaction` entries are the
//! ones kept by their place: they hold nearly all of a session's bytes (a
//! compaction carries the prompt and tools declared, several KB), and the
//! tree, the leaf, the labels and the session name need none of their bodies. A
//! long-lived session so holds its whole history in a few dozen bytes per
//! entry, and opening a large file reads each line once, quickly, without
//! building its entry.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::entry::{KnownEntry, SessionEntry, StoredMessage};
use super::record::Record;
use super::scan::LineHead;

/// Where a line lies in the session file (without its `\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// The entry types whose bodies are read from the file when needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LazyKind {
    Message,
    Custom,
    CustomMessage,
    Compaction,
}

impl LazyKind {
    fn of(kind: &str) -> Option<LazyKind> {
        match kind {
            "message" => Some(LazyKind::Message),
            "custom" => Some(LazyKind::Custom),
            "custom_message" => Some(LazyKind::CustomMessage),
            "compaction" => Some(LazyKind::Compaction),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            LazyKind::Message => "message",
            LazyKind::Custom => "custom",
            LazyKind::CustomMessage => "custom_message",
            LazyKind::Compaction => "compaction",
        }
    }
}

/// What is known of a lazily read entry without its body.
#[derive(Debug, Clone)]
struct Head {
    kind: LazyKind,
    id: Box<str>,
    parent: Option<Box<str>>,
    role: Option<Box<str>>,
}

/// One entry of the session (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// Set for entries read from the file when needed.
    head: Option<Box<Head>>,
    body: OnceLock<Box<Record>>,
    /// Where the entry's line is in the file, once it is known to be there.
    span: Option<Span>,
}

impl Slot {
    /// An entry kept in memory.
    pub(crate) fn resident(record: Record) -> Slot {
        Slot { head: None, body: OnceLock::from(Box::new(record)), span: None }
    }

    /// An entry read later from `span`, when its line's head allows it.
    pub(crate) fn lazy(head: &LineHead<'_>, span: Span) -> Option<Slot> {
        let kind = LazyKind::of(head.kind)?;
        let head = Head {
            kind,
            id: head.id?.into(),
            parent: head.parent.map(Into::into),
            role: head.role.filter(|_| kind == LazyKind::Message).map(Into::into),
        };
        Some(Slot { head: Some(Box::new(head)), body: OnceLock::new(), span: Some(span) })
    }

    /// The record when it is in memory.
    pub(crate) fn loaded(&self) -> Option<&Record> {
        self.body.get().map(|b| &**b)
    }

    /// The record, read from `source` when it is not in memory.
    pub(crate) fn record(&self, source: Option<&File>) -> &Record {
        self.body.get_or_init(|| Box::new(self.read(source)))
    }

    fn read(&self, source: Option<&File>) -> Record {
        let read = |span: Span, file: &File| -> std::io::Result<Record> {
            let mut line = vec![0u8; span.len as usize];
            file.read_exact_at(&mut line, span.offset)?;
            super::load::record_of_line(&line)
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "the line changed on disk"))
        };
        let result = match (self.span, source) {
            (Some(span), Some(file)) => read(span, file),
            _ => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no session file to read from")),
        };
        result.unwrap_or_else(|e| {
            tracing::error!("cannot read session entry {} back from its file: {e}", self.id().unwrap_or(""));
            self.placeholder()
        })
    }

    /// What stands for an entry whose line cannot be read back (the file was
    /// cut or rewritten under us): its head, as an entry of unknown shape.
    fn placeholder(&self) -> Record {
        let mut fields = Map::new();
        if let Some(head) = &self.head {
            fields.insert("type".into(), Value::String(head.kind.as_str().into()));
            fields.insert("id".into(), Value::String(head.id.to_string()));
            fields.insert("parentId".into(), head.parent.as_deref().map_or(Value::Null, |p| Value::String(p.into())));
        }
        Record::new(SessionEntry::Unknown(Value::Object(fields)))
    }

    pub(crate) fn id(&self) -> Option<&str> {
        match &self.head {
            Some(head) => Some(&head.id),
            None => self.loaded().and_then(|r| r.entry.id()),
        }
    }

    pub(crate) fn parent_id(&self) -> Option<&str> {
        match &self.head {
            Some(head) => head.parent.as_deref(),
            None => self.loaded().and_then(|r| r.entry.parent_id()),
        }
    }

    /// The type name as written in the file.
    pub(crate) fn type_name(&self) -> &str {
        match &self.head {
            Some(head) => head.kind.as_str(),
            None => self.loaded().map_or("", |r| r.entry.type_name()),
        }
    }

    /// The role of a `message` entry, whether or not we model that role.
    pub(crate) fn role(&self) -> Option<&str> {
        match &self.head {
            Some(head) => head.role.as_deref(),
            None => self.loaded().and_then(|r| super::record::message_role(&r.entry)),
        }
    }

    /// True when the entry's body is in memory for good (not read from the file on demand).
    pub(crate) fn is_resident(&self) -> bool {
        self.head.is_none()
    }

    /// Where its line lies in the file, when known.
    pub(crate) fn span(&self) -> Option<Span> {
        self.span
    }

    /// The entry's line now lies at `span` in the file: entries of the
    /// kinds read on demand give their body up at the next [`Slot::release`].
    pub(crate) fn written_at(&mut self, span: Span) {
        let Some(record) = self.loaded() else { return };
        let entry = &record.entry;
        let kind = LazyKind::of(entry.type_name()).filter(|_| matches!(entry, SessionEntry::Known(_)));
        let (Some(kind), Some(id)) = (kind, entry.id()) else { return };
        let role = match entry {
            SessionEntry::Known(KnownEntry::Message(m)) => match &m.message {
                StoredMessage::Known(known) => Some(known.role().into()),
                StoredMessage::Other(v) => v.get("role").and_then(Value::as_str).map(Into::into),
            },
            _ => None,
        };
        let head = Head { kind, id: id.into(), parent: entry.parent_id().map(Into::into), role };
        self.head = Some(Box::new(head));
        self.span = Some(span);
    }

    /// The file no longer holds the line where it was (rewritten): keep the body for good.
    pub(crate) fn pin(&mut self, source: Option<&File>) {
        self.record(source);
        self.head = None;
        self.span = None;
    }

    /// Drop the body if it can be read again from the file.
    pub(crate) fn release(&mut self) {
        if self.head.is_some() && self.span.is_some() {
            self.body.take();
        }
    }
}
