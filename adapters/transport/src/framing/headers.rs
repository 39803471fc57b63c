//! `Content-Length` header framing (LSP's base protocol): header lines up to
//! an empty line, then exactly that many bytes of body.
//!
//! Header lines are capped ([`MAX_HEADER_LINE_BYTES`]) and bodies too
//! ([`MAX_RECORD_BYTES`]). A broken frame, or stray bytes between frames,
//! costs one error record, and reading resynchronises on the next
//! `Content-Length:` header, as LSP servers do, so later frames still run.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::lines::decode;
use super::{FrameError, MAX_RECORD_BYTES, Record};

/// Longest accepted header line (8 KiB); a longer one is an error and is skipped.
pub const MAX_HEADER_LINE_BYTES: usize = 8 * 1024;

/// The header that carries the body's length, lowercased.
pub(super) const CONTENT_LENGTH: &[u8] = b"content-length:";

enum State {
    /// Looking for the start of the next header block.
    Seeking,
    /// Inside a header block.
    Headers,
    /// Discarding the rest of an over-long header line.
    SkipLine,
    /// Reading a body of `len` bytes.
    Body { len: usize },
    /// Discarding a body over the record limit.
    SkipBody { len: usize, left: usize },
}

/// Reads header-framed records from a buffered reader.
pub struct HeaderReader<R> {
    inner: R,
    state: State,
    /// The current (partial) line, without its LF until complete.
    line: Vec<u8>,
    body: Vec<u8>,
    /// The `Content-Length` of the current header block, if one was seen.
    length: Option<Result<usize, String>>,
    /// Stray non-blank bytes skipped since the last frame.
    stray: usize,
    /// A record to hand out before reading on (after a stray-bytes error).
    pending: Option<Record>,
    eof: bool,
}

impl<R: AsyncBufRead + Unpin> HeaderReader<R> {
    pub fn new(inner: R) -> Self {
        HeaderReader {
            inner,
            state: State::Seeking,
            line: Vec::new(),
            body: Vec::new(),
            length: None,
            stray: 0,
            pending: None,
            eof: false,
        }
    }

    /// Continue after `first_line`, a header line another reader already took.
    pub fn resume(inner: R, first_line: &str) -> Self {
        let mut reader = HeaderReader::new(inner);
        reader.line = first_line.as_bytes().to_vec();
        reader.pending = reader.scan(true);
        reader
    }

    /// The next record; `None` at end of input. Cancel-safe.
    pub async fn next_record(&mut self) -> std::io::Result<Option<Record>> {
        loop {
            if let Some(record) = self.pending.take() {
                return Ok(Some(record));
            }
            if self.eof {
                return Ok(None);
            }
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.eof = true;
                return Ok(self.at_eof());
            }
            let newline = available.iter().position(|b| *b == b'\n');
            match self.state {
                State::Body { len } => {
                    let take = (len - self.body.len()).min(available.len());
                    self.body.extend_from_slice(&available[..take]);
                    self.inner.consume(take);
                    if self.body.len() == len {
                        self.state = State::Seeking;
                        return Ok(Some(decode(std::mem::take(&mut self.body))));
                    }
                }
                State::SkipBody { len, left } => {
                    let take = left.min(available.len());
                    self.inner.consume(take);
                    if take == left {
                        self.state = State::Seeking;
                        return Ok(Some(Err(FrameError::TooLong { len, limit: MAX_RECORD_BYTES })));
                    }
                    self.state = State::SkipBody { len, left: left - take };
                }
                State::SkipLine => match newline {
                    Some(pos) => {
                        self.inner.consume(pos + 1);
                        self.state = State::Seeking;
                    }
                    None => {
                        let n = available.len();
                        self.inner.consume(n);
                    }
                },
                State::Seeking | State::Headers => {
                    let (take, complete) = match newline {
                        Some(pos) => (pos + 1, true),
                        None => (available.len(), false),
                    };
                    self.line.extend_from_slice(&available[..take]);
                    self.inner.consume(take);
                    if let Some(record) = self.scan(complete) {
                        return Ok(Some(record));
                    }
                }
            }
        }
    }

    /// Look at the current line (complete when it ended with LF).
    fn scan(&mut self, complete: bool) -> Option<Record> {
        match self.state {
            State::Seeking => self.seek(complete),
            State::Headers => self.header_line(complete),
            _ => None,
        }
    }

    fn seek(&mut self, complete: bool) -> Option<Record> {
        let start = find_content_length(&self.line);
        let header_like = start.is_none() && complete && looks_like_header(trim_eol(&self.line));
        match start {
            Some(pos) => {
                self.stray += non_blank(&self.line[..pos]);
                self.line.drain(..pos);
            }
            None if header_like => {}
            None if complete => {
                self.stray += non_blank(&self.line);
                self.line.clear();
                return None;
            }
            None => {
                // Keep a tail that may be the start of the header name.
                if self.line.len() > MAX_HEADER_LINE_BYTES {
                    let cut = self.line.len() - (CONTENT_LENGTH.len() - 1);
                    self.stray += non_blank(&self.line[..cut]);
                    self.line.drain(..cut);
                }
                return None;
            }
        }
        self.state = State::Headers;
        self.length = None;
        let next = self.header_line(complete);
        match std::mem::take(&mut self.stray) {
            0 => next,
            stray => {
                self.pending = next;
                Some(Err(FrameError::Header(format!("{stray} stray bytes before a Content-Length header"))))
            }
        }
    }

    fn header_line(&mut self, complete: bool) -> Option<Record> {
        if self.line.len() > MAX_HEADER_LINE_BYTES {
            self.line.clear();
            self.state = if complete { State::Seeking } else { State::SkipLine };
            return Some(Err(FrameError::Header(format!("header line longer than {MAX_HEADER_LINE_BYTES} bytes"))));
        }
        if !complete {
            return None;
        }
        let text = trim_eol(&self.line);
        if text.is_empty() {
            self.line.clear();
            return self.end_of_headers();
        }
        match find_content_length(text) {
            Some(0) => {
                let value = String::from_utf8_lossy(&text[CONTENT_LENGTH.len()..]);
                self.length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length header: {}", String::from_utf8_lossy(text).trim())),
                );
            }
            // Stray bytes glued to a header, or a line that is no header:
            // drop this block and resynchronise on the next Content-Length.
            Some(_) => {
                self.state = State::Seeking;
                return self.seek(true);
            }
            None if looks_like_header(text) => {}
            None => {
                self.state = State::Seeking;
                return self.seek(true);
            }
        }
        self.line.clear();
        None
    }

    fn end_of_headers(&mut self) -> Option<Record> {
        self.state = State::Seeking;
        match self.length.take() {
            Some(Ok(0)) => Some(Ok(String::new())),
            Some(Ok(len)) if len > MAX_RECORD_BYTES => {
                self.state = State::SkipBody { len, left: len };
                None
            }
            Some(Ok(len)) => {
                self.state = State::Body { len };
                self.body = Vec::with_capacity(len.min(1 << 20));
                None
            }
            Some(Err(e)) => Some(Err(FrameError::Header(e))),
            None => Some(Err(FrameError::Header("missing Content-Length header".into()))),
        }
    }

    fn at_eof(&mut self) -> Option<Record> {
        let state = std::mem::replace(&mut self.state, State::Seeking);
        let error = match state {
            State::Body { len } => format!("input ended {} bytes into a {len}-byte body", self.body.len()),
            State::SkipBody { len, left } => format!("input ended {} bytes into a {len}-byte body", len - left),
            State::Headers | State::SkipLine => "input ended inside a header block".to_string(),
            State::Seeking => {
                let stray = self.stray + non_blank(&self.line);
                if stray == 0 {
                    return None;
                }
                format!("{stray} stray bytes before a Content-Length header")
            }
        };
        Some(Err(FrameError::Header(error)))
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn non_blank(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| !b.is_ascii_whitespace()).count()
}

/// Where `Content-Length:` (any case) starts in `bytes`.
fn find_content_length(bytes: &[u8]) -> Option<usize> {
    bytes.windows(CONTENT_LENGTH.len()).position(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

/// `Name: value` with a token for a name (`Content-Type: …`).
fn looks_like_header(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|b| *b == b':') else { return false };
    colon > 0 && line[..colon].iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn records(input: &[u8]) -> Vec<Record> {
        let mut reader = HeaderReader::new(tokio::io::BufReader::with_capacity(7, input));
        let mut out = Vec::new();
        while let Some(record) = reader.next_record().await.unwrap() {
            out.push(record);
        }
        out
    }

    fn header_error(text: &str) -> Record {
        Err(FrameError::Header(text.to_string()))
    }

    #[tokio::test]
    async fn bodies_are_read_across_small_buffers() {
        let got = records(b"Content-Length: 2\r\n\r\n{}Content-Type: x\r\ncontent-length: 7\r\n\r\n[1,2,3]\r\n").await;
        assert_eq!(got, vec![Ok("{}".to_string()), Ok("[1,2,3]".to_string())]);
    }

    #[tokio::test]
    async fn stray_bytes_cost_one_error_and_the_next_frame_runs() {
        let got =
            records(b"Content-Length: 2\r\n\r\n{}garbageContent-Length: 2\r\n\r\n[]junk\r\nContent-Length: 1\r\n\r\n1")
                .await;
        assert_eq!(
            got,
            vec![
                Ok("{}".to_string()),
                header_error("7 stray bytes before a Content-Length header"),
                Ok("[]".to_string()),
                header_error("4 stray bytes before a Content-Length header"),
                Ok("1".to_string()),
            ]
        );
    }

    #[tokio::test]
    async fn a_header_line_without_end_is_bounded() {
        let mut input = b"Content-Length: 2\r\nX-Big: ".to_vec();
        input.extend(std::iter::repeat_n(b'a', 3 * MAX_HEADER_LINE_BYTES));
        input.extend_from_slice(b"\r\n\r\nContent-Length: 2\r\n\r\n{}");
        let mut reader = HeaderReader::new(tokio::io::BufReader::with_capacity(1024, &input[..]));
        let first = reader.next_record().await.unwrap();
        assert_eq!(first, Some(header_error("header line longer than 8192 bytes")));
        assert!(reader.line.capacity() < 4 * MAX_HEADER_LINE_BYTES);
        assert_eq!(reader.next_record().await.unwrap(), Some(Ok("{}".to_string())));
        assert_eq!(reader.next_record().await.unwrap(), None);
    }

    #[tokio::test]
    async fn endless_stray_bytes_are_bounded_too() {
        let mut input = vec![b'x'; 10 * MAX_HEADER_LINE_BYTES];
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let mut reader = HeaderReader::new(tokio::io::BufReader::with_capacity(4096, &input[..]));
        let first = reader.next_record().await.unwrap().unwrap();
        assert!(matches!(first, Err(FrameError::Header(ref e)) if e.starts_with("81920 stray bytes")), "{first:?}");
        assert!(reader.line.capacity() <= 2 * MAX_HEADER_LINE_BYTES + 4096);
        assert_eq!(reader.next_record().await.unwrap(), Some(Ok("{}".to_string())));
    }

    #[tokio::test]
    async fn bad_blocks_are_reported_and_skipped() {
        let got = records(b"Content-Length: x\r\n\r\nContent-Type: y\r\n\r\nContent-Length: 2\r\n\r\n{}").await;
        assert_eq!(
            got,
            vec![
                header_error("bad Content-Length header: Content-Length: x"),
                header_error("missing Content-Length header"),
                Ok("{}".to_string()),
            ]
        );
        let got = records(b"Content-Length: 5\r\n\r\nab").await;
        assert_eq!(got, vec![header_error("input ended 2 bytes into a 5-byte body")]);
    }

    #[tokio::test]
    async fn resuming_after_a_first_header_line() {
        let input = b"\r\n{\"a\":1}";
        let mut reader = HeaderReader::resume(tokio::io::BufReader::new(&input[..]), "Content-Length: 7");
        assert_eq!(reader.next_record().await.unwrap(), Some(Ok("{\"a\":1}".to_string())));
        assert_eq!(reader.next_record().await.unwrap(), None);
    }
}
