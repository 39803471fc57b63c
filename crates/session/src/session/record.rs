//! One stored entry as read ([`Record`]: typed, plus its exact JSON when that
//! differs), and fresh entry ids.

use std::io::Write;

use serde_json::Value;

use super::entry::{KnownEntry, SessionEntry, StoredMessage};
use super::error::SessionError;

/// A fresh entry id: the first 8 hex digits of a random UUID, re-drawn while
/// `taken` says it is in use; after 100 collisions a full UUID (as pi does).
pub(crate) fn generate_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let uuid = uuid::Uuid::new_v4().simple().to_string();
        let id = &uuid[..8];
        if !taken(id) {
            return id.to_string();
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// One stored entry: its typed form plus, when the typed form would not
/// serialize to the same JSON text, the exact JSON it was read as.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) entry: SessionEntry,
    pub(crate) raw: Option<Box<str>>,
}

impl Record {
    pub(crate) fn new(entry: SessionEntry) -> Self {
        Record { entry, raw: None }
    }

    /// Classify a JSON record, remembering its text when the typed form differs.
    pub(crate) fn from_value(value: Value) -> Self {
        let text = serde_json::to_string(&value).ok();
        let entry = SessionEntry::from_value(value);
        let typed = serde_json::to_string(&entry).ok();
        let raw = if typed.is_some() && typed == text { None } else { text.map(String::into_boxed_str) };
        Record { entry, raw }
    }

    /// Parse one line of a current session file straight into a record, when
    /// it is a known entry that serializes back to exactly these bytes (what
    /// pi writes); `None` otherwise, and the line takes the careful path
    /// ([`Record::from_value`]), which gives the same record for such lines.
    ///
    /// One difference is accepted: the `usage` of an assistant message as pi
    /// writes it (`reasoning` before `totalTokens`), which our `Usage` writes
    /// in another order. When the rest of the line is exactly what the typed
    /// entry writes and the usage's text is what `serde_json` writes for its
    /// JSON, the whole line is what the careful path keeps as the record's
    /// text (the line read as JSON and written again), so it is kept as is.
    ///
    /// A line written with JSON spacing (`", "`, `": "`) is read as its
    /// compact form (see `compact`): the careful path keeps the same record
    /// for it, its JSON written again without the spacing.
    pub(crate) fn from_line(line: &[u8]) -> Option<Self> {
        // pi's lines start so; others are tried compacted first.
        const COMPACT_HEAD: &[u8] = br#"{"type":""#;
        if line.starts_with(COMPACT_HEAD) {
            if let Some(record) = Record::from_compact_line(line) {
                return Some(record);
            }
            return Record::from_compact_line(&super::compact::compact_json(line)?);
        }
        match super::compact::compact_json(line) {
            Some(compacted) => Record::from_compact_line(&compacted),
            None => Record::from_compact_line(line),
        }
    }

    /// [`Record::from_line`] for a line taken as it is.
    fn from_compact_line(line: &[u8]) -> Option<Self> {
        let (entry, usage) = match super::fast_line::read_line(line) {
            Some(read) => (read.entry, read.usage),
            None => (serde_json::from_slice::<KnownEntry>(line).ok()?, None),
        };
        let typed_usage = match (&entry, &usage) {
            (KnownEntry::Message(m), Some(span)) => match &m.message {
                StoredMessage::Known(crate::message::AgentMessage::Assistant(a)) => {
                    Some(serde_json::to_vec(&a.usage).ok()?).filter(|typed| typed[..] != line[span.clone()])
                }
                _ => None,
            },
            _ => None,
        };
        let Some((typed_usage, span)) = typed_usage.zip(usage) else {
            return writes_exactly(&entry, line).then(|| Record::new(SessionEntry::Known(entry)));
        };
        let usage_text = &line[span.clone()];
        let usage_round_trips = serde_json::from_slice::<Value>(usage_text)
            .ok()
            .and_then(|value| serde_json::to_vec(&value).ok())
            .is_some_and(|written| written == usage_text);
        if !usage_round_trips {
            return None;
        }
        let expected = [&line[..span.start], &typed_usage[..], &line[span.end..]].concat();
        let raw = std::str::from_utf8(line).ok()?;
        writes_exactly(&entry, &expected)
            .then(|| Record { entry: SessionEntry::Known(entry), raw: Some(raw.to_string().into_boxed_str()) })
    }

    /// The entry as one JSON line (without newline), faithful to what was read.
    pub(crate) fn to_line(&self) -> Result<String, SessionError> {
        match &self.raw {
            Some(raw) => Ok(raw.to_string()),
            None => Ok(serde_json::to_string(&self.entry)?),
        }
    }

    /// The entry as a JSON value, faithful to what was read.
    pub(crate) fn to_value(&self) -> Result<Value, SessionError> {
        match &self.raw {
            Some(raw) => Ok(serde_json::from_str(raw)?),
            None => Ok(serde_json::to_value(&self.entry)?),
        }
    }
}

/// True when `entry` serializes to exactly `bytes`.
fn writes_exactly(entry: &KnownEntry, bytes: &[u8]) -> bool {
    let mut same = SameBytes { rest: bytes, same: true };
    serde_json::to_writer(&mut same, entry).is_ok() && same.same && same.rest.is_empty()
}

/// A writer that only checks that what is written equals `rest`, byte for byte.
struct SameBytes<'a> {
    rest: &'a [u8],
    same: bool,
}

impl Write for SameBytes<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.rest.strip_prefix(buf) {
            Some(rest) if self.same => self.rest = rest,
            _ => self.same = false,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// True when `value` is a session header record.
pub(crate) fn is_header(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("session") && value.get("id").is_some_and(Value::is_string)
}

/// The role of a `message` entry, whether or not we model that role.
pub(crate) fn message_role(entry: &SessionEntry) -> Option<&str> {
    match entry {
        SessionEntry::Known(KnownEntry::Message(m)) => match &m.message {
            StoredMessage::Known(msg) => Some(msg.role()),
            StoredMessage::Other(v) => v.get("role").and_then(Value::as_str),
        },
        _ => None,
    }
}
