//! JSON-RPC framing: newline-delimited JSON (the seed's), or LSP-style
//! `Content-Length` headers when the client starts with one; output uses the
//! same framing as input.

use pi_jsonl::framing::{FrameError, MAX_RECORD_BYTES, Record, RecordReader};
use pi_jsonl::writer::LineSender;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// How messages are delimited on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per LF-terminated line.
    Lines,
    /// `Content-Length: N\r\n\r\n<N bytes>`.
    Headers,
}

/// Reads messages in either framing.
pub enum Input<R> {
    Lines(RecordReader<R>),
    Headers { reader: R, pending_length: Option<Result<usize, String>> },
}

fn parse_length(line: &str) -> Option<Result<usize, String>> {
    let (name, value) = line.split_once(':')?;
    if !name.trim().eq_ignore_ascii_case("content-length") {
        return None;
    }
    Some(value.trim().parse::<usize>().map_err(|_| format!("bad Content-Length header: {}", line.trim())))
}

impl<R: AsyncBufRead + Unpin> Input<R> {
    /// Start reading. For header framing, `first` is the already-read first header line.
    pub fn new(records: RecordReader<R>, framing: Framing, first: Option<&Record>) -> Self {
        match framing {
            Framing::Lines => Input::Lines(records),
            Framing::Headers => {
                let pending_length = match first {
                    Some(Ok(line)) => parse_length(line),
                    _ => None,
                };
                Input::Headers { reader: records.into_inner(), pending_length }
            }
        }
    }

    /// The next message text; `None` at end of input.
    pub async fn next(&mut self) -> std::io::Result<Option<Record>> {
        match self {
            Input::Lines(records) => records.next_record().await,
            Input::Headers { reader, pending_length } => read_headed(reader, pending_length).await,
        }
    }
}

async fn read_headed<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    pending_length: &mut Option<Result<usize, String>>,
) -> std::io::Result<Option<Record>> {
    let mut length = pending_length.take();
    let mut saw_header = length.is_some();
    loop {
        let mut line = Vec::new();
        let n = reader.read_until(b'\n', &mut line).await?;
        if n == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_header {
                continue;
            }
            break;
        }
        saw_header = true;
        if let Some(parsed) = parse_length(text) {
            length = Some(parsed);
        }
    }
    let len = match length {
        Some(Ok(len)) => len,
        Some(Err(e)) => return Ok(Some(Err(FrameError::Header(e)))),
        None => return Ok(Some(Err(FrameError::Header("missing Content-Length header".into())))),
    };
    if len > MAX_RECORD_BYTES {
        let mut sink = reader.take(len as u64);
        tokio::io::copy(&mut sink, &mut tokio::io::sink()).await?;
        return Ok(Some(Err(FrameError::TooLong { len, limit: MAX_RECORD_BYTES })));
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).await?;
    Ok(Some(String::from_utf8(body).map_err(|e| FrameError::InvalidUtf8 { offset: e.utf8_error().valid_up_to() })))
}

/// Escape raw U+2028/U+2029 (legal in JSON strings, but line readers of some
/// clients split on them). They can only occur inside strings, so a byte
/// substitution is exact.
pub fn escape_line_separators(bytes: Vec<u8>) -> Vec<u8> {
    if !bytes.windows(2).any(|w| w == [0xE2, 0x80]) {
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if i + 2 < bytes.len()
            && bytes[i] == 0xE2
            && bytes[i + 1] == 0x80
            && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9)
        {
            out.extend_from_slice(if bytes[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Send one serialized message in the connection's framing.
pub async fn send(lines: &LineSender, framing: Framing, body: Vec<u8>) -> bool {
    let body = escape_line_separators(body);
    match framing {
        Framing::Lines => lines.send(body).await,
        Framing::Headers => {
            let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
            framed.extend_from_slice(&body);
            lines.send_raw(framed).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn header_framing_reads_bodies() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Length: 7\r\nContent-Type: x\r\n\r\n[1,2,3]";
        let mut records = RecordReader::new(tokio::io::BufReader::new(&input[..]));
        let first = records.next_record().await.unwrap();
        let mut input = Input::new(records, Framing::Headers, first.as_ref());
        assert_eq!(input.next().await.unwrap(), Some(Ok("{}".to_string())));
        assert_eq!(input.next().await.unwrap(), Some(Ok("[1,2,3]".to_string())));
        assert_eq!(input.next().await.unwrap(), None);
    }

    #[test]
    fn separators_are_escaped() {
        let raw = "{\"a\":\"x\u{2028}y\u{2029}\"}".as_bytes().to_vec();
        assert_eq!(escape_line_separators(raw), b"{\"a\":\"x\\u2028y\\u2029\"}".to_vec());
    }
}
