//! Framing of a byte stream into records, for every dialect: LF-terminated
//! lines (the seeds' framing) or LSP-style `Content-Length` headers, and the
//! same framing for what is written back.
//!
//! Both readers are cancel-safe (their only awaits are `fill_buf`), bound
//! what they buffer (64 MiB per record, 8 KiB per header line), and report a
//! bad record as an error record instead of ending the stream.

mod headers;
mod lines;

use tokio::io::AsyncBufRead;

pub use headers::{HeaderReader, MAX_HEADER_LINE_BYTES};
pub use lines::RecordReader;

/// Longest accepted record (64 MiB). Longer records are skipped with an error.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("record exceeds the {limit}-byte limit ({len} bytes)")]
    TooLong { len: usize, limit: usize },
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 { offset: usize },
    /// A malformed `Content-Length` header block, or stray bytes between frames.
    #[error("{0}")]
    Header(String),
}

/// One input record: its text, or why it could not be read.
pub type Record = Result<String, FrameError>;

/// How messages are delimited on a connection (both ways).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per LF-terminated line.
    Lines,
    /// `Content-Length: N\r\n\r\n<N bytes>`.
    Headers,
}

impl Framing {
    /// Frame one outbound message body.
    pub fn frame(self, mut body: Vec<u8>) -> Vec<u8> {
        match self {
            Framing::Lines => {
                body.push(b'\n');
                body
            }
            Framing::Headers => {
                let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                framed.extend_from_slice(&body);
                framed
            }
        }
    }
}

/// A source of records that the connection loop polls. `next` must be
/// cancel-safe: the loop races it against the agent's output.
pub trait RecordSource {
    /// The next record; `None` at end of input.
    fn next(&mut self) -> impl Future<Output = std::io::Result<Option<Record>>>;
}

/// A record already read (for dialect detection), then the rest of a source.
pub struct Preread<S> {
    first: Option<Record>,
    rest: S,
}

impl<S> Preread<S> {
    pub fn new(first: Option<Record>, rest: S) -> Self {
        Preread { first, rest }
    }
}

impl<S: RecordSource> RecordSource for Preread<S> {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        match self.first.take() {
            Some(record) => Ok(Some(record)),
            None => self.rest.next().await,
        }
    }
}

/// Reads records of a byte stream in either framing.
pub enum FrameReader<R> {
    Lines(RecordReader<R>),
    Headers(HeaderReader<R>),
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// Switch to header framing after `first_line` (already read by `records`)
    /// turned out to be a header line.
    pub fn headers_after(records: RecordReader<R>, first_line: &str) -> Self {
        FrameReader::Headers(HeaderReader::resume(records.into_inner(), first_line))
    }
}

impl<R: AsyncBufRead + Unpin> RecordSource for FrameReader<R> {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        match self {
            FrameReader::Lines(r) => r.next_record().await,
            FrameReader::Headers(r) => r.next_record().await,
        }
    }
}

/// True when `line` starts (after whitespace) with a `Content-Length:` header name.
pub fn is_content_length_header(line: &str) -> bool {
    let trimmed = line.trim_start().as_bytes();
    trimmed.len() >= headers::CONTENT_LENGTH.len()
        && trimmed[..headers::CONTENT_LENGTH.len()].eq_ignore_ascii_case(headers::CONTENT_LENGTH)
}
