//! Reading a session file into raw JSON records, tolerating damage.
//!
//! Rules (pi's, plus warnings): lines are split on `\n`; blank lines are
//! ignored; a line that is not valid JSON (typically a truncated last line
//! after a crash) or not a JSON object is skipped with a warning, never
//! fatal. The first readable record must be a header
//! (`{"type":"session","id":"<string>",…}`), otherwise the file is not a
//! session. Further `session` records inside the file are skipped with a
//! warning. Invalid UTF-8 is replaced by U+FFFD, as node's decoder does.

use std::path::Path;

use serde_json::Value;

use super::error::SessionError;

/// What a file on disk holds.
pub(crate) enum FileContents {
    /// The file is empty (0 bytes).
    Empty,
    /// A session: header at index 0, then the entries in file order.
    Session {
        records: Vec<Value>,
        warnings: Vec<String>,
        /// The file does not end with `\n` (pi appends one before writing more).
        missing_final_newline: bool,
    },
}

/// True when `value` is a session header record.
pub(crate) fn is_header(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("session") && value.get("id").is_some_and(Value::is_string)
}

/// Read and classify `path`.
pub(crate) fn read_session_file(path: &Path) -> Result<FileContents, SessionError> {
    let bytes = std::fs::read(path).map_err(|e| SessionError::io(path, e))?;
    if bytes.is_empty() {
        return Ok(FileContents::Empty);
    }
    let missing_final_newline = bytes.last() != Some(&b'\n');
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if !missing_final_newline {
        // `split` yields an empty piece after the final newline.
        lines.pop();
    }
    let line_count = lines.len();
    let mut records: Vec<Value> = Vec::new();
    let mut warnings = Vec::new();
    for (i, raw) in lines.into_iter().enumerate() {
        let number = i + 1;
        let text = String::from_utf8_lossy(raw);
        if text.trim().is_empty() {
            continue;
        }
        let is_last = number == line_count;
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                let what = if is_last && missing_final_newline { "truncated last line" } else { "invalid JSON" };
                warnings.push(format!("{}: line {number}: {what} skipped ({e})", path.display()));
                continue;
            }
        };
        if !value.is_object() {
            warnings.push(format!("{}: line {number}: not a JSON object, skipped", path.display()));
            continue;
        }
        if records.is_empty() {
            if !is_header(&value) {
                return Err(SessionError::NotASession(path.to_path_buf()));
            }
        } else if value.get("type").and_then(Value::as_str) == Some("session") {
            warnings.push(format!("{}: line {number}: extra session header skipped", path.display()));
            continue;
        }
        records.push(value);
    }
    if records.is_empty() {
        return Err(SessionError::NotASession(path.to_path_buf()));
    }
    Ok(FileContents::Session { records, warnings, missing_final_newline })
}

/// Read only the header of `path` (for discovery): the first readable record
/// if it is a header, within the first MiB. Any failure gives `None`.
pub(crate) fn read_header_value(path: &Path) -> Option<Value> {
    use std::io::{BufRead, BufReader, Read};
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
