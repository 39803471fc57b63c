//! Reading a session file into raw JSON records, tolerating damage.
//!
//! Rules (pi's, plus warnings): lines are split on `\n`; blank lines are
//! ignored; a line that is not valid JSON (typically a truncated last line
//! after a crash) or not a JSON object is skipped with a warning, never
//! fatal. The first readable record must be a header
//! (`{"type":"session","id":"<string>",…}`), otherwise the file is not a
//! session. Further `session` records inside the file are skipped with a
//! warning. Invalid UTF-8 is replaced by U+FFFD, as node's decoder does.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use super::entry::SESSION_VERSION;
use super::error::SessionError;
use super::store::Record;

/// What a file on disk holds.
pub(crate) enum FileContents {
    /// The file is empty (0 bytes).
    Empty,
    /// A session: its header, then the entries in file order.
    Session {
        header: Value,
        entries: Entries,
        warnings: Vec<String>,
        /// The file does not end with `\n` (pi appends one before writing more).
        missing_final_newline: bool,
    },
}

/// The entries of a session file.
pub(crate) enum Entries {
    /// A current (v3) file: each line parsed once, straight into its record.
    Current(Vec<Record>),
    /// An older file: raw records, to be migrated before they become entries.
    Legacy(Vec<Value>),
}

/// True when `value` is a session header record.
pub(crate) fn is_header(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("session") && value.get("id").is_some_and(Value::is_string)
}

/// Bytes read from the file at a time (the file itself is never held whole).
const READ_BUFFER: usize = 256 * 1024;

/// Read and classify `path`, one line at a time: only the line being read
/// and the records made so far are in memory, never the whole file and its
/// parse together.
pub(crate) fn read_session_file(path: &Path) -> Result<FileContents, SessionError> {
    let file = std::fs::File::open(path).map_err(|e| SessionError::io(path, e))?;
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut header: Option<Value> = None;
    let mut entries = Entries::Current(Vec::new());
    let mut warnings = Vec::new();
    let mut missing_final_newline = false;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(|e| SessionError::io(path, e))?;
        if read == 0 {
            break;
        }
        number += 1;
        let raw = match line.strip_suffix(b"\n") {
            Some(raw) => raw,
            None => {
                // Only the last line can end without a newline.
                missing_final_newline = true;
                &line[..]
            }
        };
        // The common case: a well-formed entry of a current file, parsed once.
        if header.is_some()
            && let Entries::Current(records) = &mut entries
            && let Some(record) = Record::from_line(raw)
        {
            records.push(record);
            continue;
        }
        let text = String::from_utf8_lossy(raw);
        if text.trim().is_empty() {
            continue;
        }
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                let what = if missing_final_newline { "truncated last line" } else { "invalid JSON" };
                warnings.push(format!("{}: line {number}: {what} skipped ({e})", path.display()));
                continue;
            }
        };
        if !value.is_object() {
            warnings.push(format!("{}: line {number}: not a JSON object, skipped", path.display()));
            continue;
        }
        if header.is_none() {
            if !is_header(&value) {
                return Err(SessionError::NotASession(path.to_path_buf()));
            }
            let version = value.get("version").and_then(Value::as_u64).unwrap_or(1);
            if version < u64::from(SESSION_VERSION) {
                entries = Entries::Legacy(Vec::new());
            }
            header = Some(value);
            continue;
        }
        if value.get("type").and_then(Value::as_str) == Some("session") {
            warnings.push(format!("{}: line {number}: extra session header skipped", path.display()));
            continue;
        }
        match &mut entries {
            Entries::Current(records) => records.push(Record::from_value(value)),
            Entries::Legacy(values) => values.push(value),
        }
    }
    if number == 0 {
        return Ok(FileContents::Empty);
    }
    let Some(header) = header else { return Err(SessionError::NotASession(path.to_path_buf())) };
    Ok(FileContents::Session { header, entries, warnings, missing_final_newline })
}

/// Read only the header of `path` (for discovery): the first readable record
/// if it is a header, within the first MiB. Any failure gives `None`.
pub(crate) fn read_header_value(path: &Path) -> Option<Value> {
    use std::io::Read;
    const LIMIT: u64 = 1024 * 1024;
    let file = std::fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file.take(LIMIT));
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if is_header(&v) => return Some(v),
            Ok(_) => return None,
            Err(_) => continue,
        }
    }
}
