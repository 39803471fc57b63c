//! Reading a session file into raw JSON records, tolerating damage.
//!
//! Rules (pi's, plus warnings): lines are split on `\n`; blank lines are
//! ignored; a line that is not valid JSON (typically a truncated last line
//! after a crash) or not a JSON object is skipped with a warning, never
//! fatal. The first readable record must be a header
//! (`{"type":"session","id":"<string>",…}`), otherwise the file is not a
//! session. Further `session` records inside the file are skipped with a
//! warning. Invalid UTF-8 is replaced by U+FFFD, as node's decoder does.
//!
//! After the header every line is read on its own, so a large file is cut
//! at line ends into parts read on several threads at once; the parts'
//! records and warnings are joined in file order, with the line numbers a
//! reading from the top gives.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::Value;

use super::entry::SESSION_VERSION;
use super::error::SessionError;
use super::record::{Record, is_header};
use super::scan::scan_line;
use super::slot::{Slot, Span};

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
        /// The file read, when entries may be read again from it (a regular file).
        source: Option<File>,
    },
}

/// The entries of a session file.
pub(crate) enum Entries {
    /// A current (v3) file: each line read once, straight into its record
    /// or (messages, custom entries) into a slot that reads it when needed.
    Current(Vec<Slot>),
    /// An older file: raw records, to be migrated before they become entries.
    Legacy(Vec<Value>),
}

impl Entries {
    fn append(&mut self, other: Entries) {
        match (self, other) {
            (Entries::Current(records), Entries::Current(more)) => records.extend(more),
            (Entries::Legacy(values), Entries::Legacy(more)) => values.extend(more),
            // Every part of one file is read in the same mode.
            _ => {}
        }
    }
}

/// How a file is cut into parts read at once, and read.
#[derive(Clone, Copy)]
pub(crate) struct Parts {
    /// Parts at most (threads, the calling one included).
    pub(crate) most: usize,
    /// A part is at least this many bytes (smaller files are read whole).
    pub(crate) min_bytes: u64,
    /// Bytes read from the file at a time (the file itself is never held whole).
    pub(crate) buffer: usize,
}

impl Parts {
    /// One part per core, at most four, of at least 2 MiB each, read 1 MiB at a time.
    fn for_this_machine() -> Parts {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Parts { most: cores.min(4), min_bytes: 2 * 1024 * 1024, buffer: 1024 * 1024 }
    }
}

/// Read and classify `path`: only the lines being read and the records made
/// so far are in memory, never the whole file and its parse together.
pub(crate) fn read_session_file(path: &Path) -> Result<FileContents, SessionError> {
    read_session_file_in(path, Parts::for_this_machine())
}

/// [`read_session_file`], the entries cut into `parts`.
pub(crate) fn read_session_file_in(path: &Path, parts: Parts) -> Result<FileContents, SessionError> {
    let io = |e| SessionError::io(path, e);
    let file = File::open(path).map_err(io)?;
    // Up to the header, in order: the first readable record decides.
    let mut lines = Lines::new(&file, 0, u64::MAX, parts.buffer);
    let mut number = 0usize;
    let mut warnings = Vec::new();
    let mut missing_final_newline = false;
    let header = loop {
        let Some((_, raw, last)) = lines.next_line().map_err(io)? else {
            return if number == 0 {
                Ok(FileContents::Empty)
            } else {
                Err(SessionError::NotASession(path.to_path_buf()))
            };
        };
        number += 1;
        missing_final_newline |= last;
        match read_carefully(raw, last) {
            Careful::Blank => {}
            Careful::Skipped(why) => warnings.push(warning(path, number, &why)),
            Careful::Object(value) if is_header(&value) => break value,
            Careful::Object(_) => return Err(SessionError::NotASession(path.to_path_buf())),
        }
    };
    let legacy = header.get("version").and_then(Value::as_u64).unwrap_or(1) < u64::from(SESSION_VERSION);
    // The entries, in parts read at once, joined in file order. A file that
    // is not a regular one (a pipe) is read on from where the header ended.
    let metadata = file.metadata().map_err(io)?;
    let lazy = metadata.is_file();
    let cuts = match lazy {
        true => cut_points(&file, lines.consumed, metadata.len(), parts).map_err(io)?,
        false => Vec::new(),
    };
    let read = std::thread::scope(|scope| {
        let others: Vec<_> = cuts
            .windows(2)
            .skip(1)
            .map(|part| {
                let file = &file;
                scope.spawn(move || read_part(Lines::new(file, part[0], part[1], parts.buffer), legacy, lazy))
            })
            .collect();
        // The first part goes on with the header's reader and what it has buffered.
        if let Some(&end) = cuts.get(1) {
            lines.limit(end);
        }
        let first = read_part(lines, legacy, lazy);
        let others = others.into_iter().map(|thread| thread.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        std::iter::once(first).chain(others).collect::<Result<Vec<Part>, _>>()
    });
    let mut entries = if legacy { Entries::Legacy(Vec::new()) } else { Entries::Current(Vec::new()) };
    for part in read.map_err(io)? {
        warnings.extend(part.warnings.iter().map(|(at, why)| warning(path, number + at, why)));
        number += part.lines;
        missing_final_newline |= part.missing_final_newline;
        entries.append(part.entries);
    }
    let source = lazy.then_some(file);
    Ok(FileContents::Session { header, entries, warnings, missing_final_newline, source })
}

fn warning(path: &Path, number: usize, why: &str) -> String {
    format!("{}: line {number}: {why}", path.display())
}

/// A line that is not an entry read straight into its record.
enum Careful {
    Blank,
    Object(Value),
    /// Skipped, and why (the warning's text after the line number).
    Skipped(String),
}

/// Read one line as JSON (`last`: the file's last line, without its `\n`).
fn read_carefully(raw: &[u8], last: bool) -> Careful {
    let text = String::from_utf8_lossy(raw);
    if text.trim().is_empty() {
        return Careful::Blank;
    }
    match serde_json::from_str::<Value>(&text) {
        Err(e) => {
            let what = if last { "truncated last line" } else { "invalid JSON" };
            Careful::Skipped(format!("{what} skipped ({e})"))
        }
        Ok(value) if !value.is_object() => Careful::Skipped("not a JSON object, skipped".into()),
        Ok(value) => Careful::Object(value),
    }
}

/// The entries of one part of the file, in order.
struct Part {
    /// Lines in the part.
    lines: usize,
    entries: Entries,
    /// (line number within the part, from 1; why the line was skipped).
    warnings: Vec<(usize, String)>,
    missing_final_newline: bool,
}

/// The record one entry line of a current file holds, as the loader reads
/// it (`None` for a line the loader skips).
pub(crate) fn record_of_line(raw: &[u8]) -> Option<Record> {
    if let Some(record) = Record::from_line(raw) {
        return Some(record);
    }
    match read_carefully(raw, false) {
        Careful::Object(value) if value.get("type").and_then(Value::as_str) != Some("session") => {
            Some(Record::from_value(value))
        }
        _ => None,
    }
}

/// A slot that reads the line at `offset` when needed, when the line is
/// certainly an entry of a kind kept that way.
fn lazy_slot(raw: &[u8], offset: u64) -> Option<Slot> {
    let len = u32::try_from(raw.len()).ok()?;
    Slot::lazy(&scan_line(raw)?, Span { offset, len })
}

/// Read the entry lines `lines` gives (a region that begins at a line
/// start); `lazy`: the file can be read again at a line's offset.
fn read_part(mut lines: Lines<'_>, legacy: bool, lazy: bool) -> std::io::Result<Part> {
    let entries = if legacy { Entries::Legacy(Vec::new()) } else { Entries::Current(Vec::new()) };
    let mut part = Part { lines: 0, entries, warnings: Vec::new(), missing_final_newline: false };
    while let Some((offset, raw, last)) = lines.next_line()? {
        part.lines += 1;
        part.missing_final_newline |= last;
        // The common cases: a well-formed entry of a current file, kept by
        // its place in the file, or parsed once.
        if let Entries::Current(slots) = &mut part.entries {
            if let Some(slot) = lazy.then(|| lazy_slot(raw, offset)).flatten() {
                slots.push(slot);
                continue;
            }
            if let Some(record) = Record::from_line(raw) {
                slots.push(Slot::resident(record));
                continue;
            }
        }
        match read_carefully(raw, last) {
            Careful::Blank => {}
            Careful::Skipped(why) => part.warnings.push((part.lines, why)),
            Careful::Object(value) if value.get("type").and_then(Value::as_str) == Some("session") => {
                part.warnings.push((part.lines, "extra session header skipped".into()));
            }
            Careful::Object(value) => match &mut part.entries {
                Entries::Current(slots) => slots.push(Slot::resident(Record::from_value(value))),
                Entries::Legacy(values) => values.push(value),
            },
        }
    }
    Ok(part)
}

/// Where `[start, ..)` is cut: `start`, then up to `parts.most - 1` points
/// just after a `\n` near equal shares of `[start, len)`, then the end
/// (`u64::MAX`: the last part reads to the end of the file).
pub(super) fn cut_points(file: &File, start: u64, len: u64, parts: Parts) -> std::io::Result<Vec<u64>> {
    let size = len.saturating_sub(start);
    let count = usize::try_from(size / parts.min_bytes.max(1)).unwrap_or(usize::MAX).clamp(1, parts.most.max(1));
    let mut cuts = vec![start];
    for k in 1..count as u64 {
        let share = start + size / count as u64 * k;
        let from = share.saturating_sub(1).max(cuts[cuts.len() - 1]);
        match next_newline(file, from, len)? {
            Some(at) if at + 1 < len => cuts.push(at + 1),
            _ => break,
        }
    }
    cuts.push(u64::MAX);
    Ok(cuts)
}

/// The position of the first `\n` at or after `from` (before `len`).
fn next_newline(file: &File, mut from: u64, len: u64) -> std::io::Result<Option<u64>> {
    let mut block = vec![0u8; 64 * 1024];
    while from < len {
        let n = file.read_at(&mut block, from)?;
        if n == 0 {
            break;
        }
        if let Some(at) = memchr::memchr(b'\n', &block[..n]) {
            return Ok(Some(from + at as u64));
        }
        from += n as u64;
    }
    Ok(None)
}

/// Reads `[pos, end)` of a file with positioned reads, so that several
/// readers share one open file.
struct Region<'f> {
    file: &'f File,
    pos: u64,
    end: u64,
    /// Positioned reads (a regular file), or reads in order from where the file is.
    positioned: bool,
}

impl Read for Region<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = match self.positioned {
            true => self.file.read_at(&mut buf[..want], self.pos)?,
            false => {
                let mut file = self.file;
                file.read(&mut buf[..want])?
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

/// The lines of a region, one at a time. A line that lies whole in the read
/// buffer is handed out from there; only a line across two reads is copied.
struct Lines<'f> {
    reader: BufReader<Region<'f>>,
    /// Buffered bytes of the line handed out last, consumed at the next call.
    handed_out: usize,
    line: Vec<u8>,
    /// Where the next line starts (bytes of the file read as lines so far).
    consumed: u64,
    /// No line starting here or later is handed out (a cut point).
    end: u64,
}

impl<'f> Lines<'f> {
    fn new(file: &'f File, start: u64, end: u64, buffer: usize) -> Self {
        // Positioned reads need a regular file; anything else is read in order.
        let positioned = file.metadata().is_ok_and(|m| m.is_file());
        let region = Region { file, pos: start, end, positioned };
        let reader = BufReader::with_capacity(buffer, region);
        Lines { reader, handed_out: 0, line: Vec::new(), consumed: start, end }
    }

    /// Stop at `end`, a line start: lines from there on are another part's,
    /// even if they are already buffered.
    fn limit(&mut self, end: u64) {
        self.end = end;
    }

    /// The next line's offset in the file, the line without its `\n`, and
    /// whether it ended without one (only the file's last line can).
    fn next_line(&mut self) -> std::io::Result<Option<(u64, &[u8], bool)>> {
        self.reader.consume(std::mem::take(&mut self.handed_out));
        if self.consumed >= self.end {
            return Ok(None);
        }
        let offset = self.consumed;
        let buffered = self.reader.fill_buf()?;
        if let Some(at) = memchr::memchr(b'\n', buffered) {
            self.handed_out = at + 1;
            self.consumed += at as u64 + 1;
            return Ok(Some((offset, &self.reader.buffer()[..at], false)));
        }
        self.line.clear();
        let read = self.reader.read_until(b'\n', &mut self.line)?;
        if read == 0 {
            return Ok(None);
        }
        self.consumed += read as u64;
        Ok(Some(match self.line.strip_suffix(b"\n") {
            Some(raw) => (offset, raw, false),
            None => (offset, &self.line[..], true),
        }))
    }
}
