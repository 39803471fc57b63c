//! Messages written as they are serialised: a big reply (`get_messages` of a
//! 100 MB session, `get_entries`, `get_tree`, …) goes to the output in
//! bounded pieces instead of being held whole as one buffer.
//!
//! A [`StreamedMessage`] is a short head (the response's members before its
//! result, e.g. `{"id":…,"type":"response",…,"data":`), a body that writes
//! its JSON into any [`Write`] ([`WriteJson`]) and a short tail (`}`). The
//! stdio writer writes it on its thread through a [`PIECE_BYTES`] buffer;
//! sinks that need a message whole (a WebSocket text frame, a
//! `Content-Length` frame) [`assemble`](StreamedMessage::assemble) it. Both
//! give exactly the bytes the assembled message always had.

use std::io::{self, Write};

use serde::Serialize;

/// The size of the pieces a streamed message is written in, and the most a
/// result is serialised in memory before it is streamed instead.
pub const PIECE_BYTES: usize = 64 * 1024;

/// A JSON value that writes itself into a byte stream.
pub trait WriteJson: Send {
    /// Write the value's JSON (compact, as `serde_json::to_writer` would).
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// A serde value written by `serde_json`.
pub struct Serialized<T>(pub T);

impl<T: Serialize + Send> WriteJson for Serialized<T> {
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(out, &self.0).map_err(io::Error::from)
    }
}

/// A body written as it is serialised.
pub type StreamedJson = Box<dyn WriteJson>;

/// One outbound message whose body is written as it is serialised.
pub struct StreamedMessage {
    /// The bytes before the body.
    pub head: Vec<u8>,
    pub body: StreamedJson,
    /// The bytes after the body.
    pub tail: &'static [u8],
    /// Escape raw U+2028/U+2029 as `\u2028`/`\u2029` (the JSON-RPC dialect).
    pub escape_line_separators: bool,
}

impl std::fmt::Debug for StreamedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedMessage").field("head", &String::from_utf8_lossy(&self.head)).finish_non_exhaustive()
    }
}

impl StreamedMessage {
    /// Write the whole message into `out` (the head, the body, the tail).
    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.escape_line_separators {
            let mut escaped = EscapeLineSeparators::new(out);
            self.write_parts(&mut escaped)?;
            escaped.finish()
        } else {
            self.write_parts(out)
        }
    }

    fn write_parts(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.head)?;
        self.body.write_json(out)?;
        out.write_all(self.tail)
    }

    /// The whole message as one buffer (for sinks that frame whole messages).
    pub fn assemble(&self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(PIECE_BYTES);
        self.write_to(&mut bytes)?;
        Ok(bytes)
    }
}

/// One outbound message of a reply: bytes, or a message written as it is serialised.
#[derive(Debug)]
pub enum Outgoing {
    Bytes(Vec<u8>),
    Streamed(StreamedMessage),
}

impl Outgoing {
    /// The message as one buffer; `None` (logged) if its body failed to serialise.
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Outgoing::Bytes(bytes) => Some(bytes),
            Outgoing::Streamed(message) => match message.assemble() {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    tracing::error!("cannot serialize an output message: {e}");
                    None
                }
            },
        }
    }
}

/// The marker error of [`write_within`]: the value is bigger than the limit.
#[derive(Debug)]
struct TooBig;

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("over the in-memory limit")
    }
}

impl std::error::Error for TooBig {}

/// Appends to a `Vec`, refusing to add more than `limit` bytes.
struct Limited<'a> {
    bytes: &'a mut Vec<u8>,
    left: usize,
}

impl Write for Limited<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.left {
            return Err(io::Error::other(TooBig));
        }
        self.left -= buf.len();
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Append `body` to `out` when it takes at most `limit` bytes: `Ok(true)`;
/// `Ok(false)` when it is bigger (stream it instead); `Err` when it cannot
/// be serialised at all. Unless written, `out` is left as it was.
pub fn write_within(body: &dyn WriteJson, out: &mut Vec<u8>, limit: usize) -> io::Result<bool> {
    let start = out.len();
    let written = body.write_json(&mut Limited { bytes: out, left: limit });
    if written.is_err() {
        out.truncate(start);
    }
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.get_ref().is_some_and(|inner| inner.is::<TooBig>()) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A writer that escapes raw U+2028/U+2029 (bytes `E2 80 A8`/`E2 80 A9`) as
/// `\u2028`/`\u2029` on their way through, also when a sequence is split
/// across writes. They can only occur inside JSON strings, so the byte
/// substitution is exact.
pub struct EscapeLineSeparators<W> {
    inner: W,
    /// How many bytes of `E2 80` were seen at the end of the last write.
    held: usize,
}

impl<W: Write> EscapeLineSeparators<W> {
    pub fn new(inner: W) -> Self {
        EscapeLineSeparators { inner, held: 0 }
    }

    /// Write out a partial sequence held at the end (never part of a
    /// separator), and flush.
    pub fn finish(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        self.inner.write_all(&[0xE2, 0x80][..held])?;
        self.inner.flush()
    }
}

impl<W: Write> Write for EscapeLineSeparators<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(&first) = rest.first() {
            match self.held {
                0 => match rest.iter().position(|&b| b == 0xE2) {
                    None => {
                        self.inner.write_all(rest)?;
                        rest = &[];
                    }
                    Some(at) => {
                        self.inner.write_all(&rest[..at])?;
                        self.held = 1;
                        rest = &rest[at + 1..];
                    }
                },
                1 if first == 0x80 => {
                    self.held = 2;
                    rest = &rest[1..];
                }
                2 if first == 0xA8 || first == 0xA9 => {
                    self.inner.write_all(if first == 0xA8 { b"\\u2028" } else { b"\\u2029" })?;
                    self.held = 0;
                    rest = &rest[1..];
                }
                held => {
                    // Not a separator: the held bytes go out as they were and
                    // this byte is looked at again (it may start a sequence).
                    self.inner.write_all(&[0xE2, 0x80][..held])?;
                    self.held = 0;
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
#[path = "streamed_tests.rs"]
mod tests;
