//! LF framing: records split on LF only, one trailing CR stripped, never
//! split on U+2028/U+2029, a length cap per record, and invalid UTF-8
//! reported per record instead of ending the stream.
//!
//! [`RecordReader::next_record`] is cancel-safe: its only await is
//! `fill_buf`, and everything read is kept in the reader.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::{FrameError, MAX_RECORD_BYTES, Record};

/// Reads LF-delimited records from a buffered reader.
pub struct RecordReader<R> {
    inner: R,
    limit: usize,
    buf: Vec<u8>,
    /// Bytes of the current over-long record skipped so far.
    skipped: usize,
    eof: bool,
}

impl<R: AsyncBufRead + Unpin> RecordReader<R> {
    pub fn new(inner: R) -> Self {
        RecordReader::with_limit(inner, MAX_RECORD_BYTES)
    }

    pub fn with_limit(inner: R, limit: usize) -> Self {
        RecordReader { inner, limit, buf: Vec::new(), skipped: 0, eof: false }
    }

    /// The next record; `None` at end of input (a final record without LF is returned first).
    pub async fn next_record(&mut self) -> std::io::Result<Option<Record>> {
        loop {
            if self.eof {
                return Ok(None);
            }
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.eof = true;
                if self.skipped > 0 {
                    let len = self.skipped;
                    self.skipped = 0;
                    return Ok(Some(Err(FrameError::TooLong { len, limit: self.limit })));
                }
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.buf);
                return Ok(Some(decode(line)));
            }
            match memchr_newline(available) {
                Some(pos) => {
                    let chunk_len = pos + 1;
                    if self.skipped > 0 {
                        let len = self.skipped + pos;
                        self.inner.consume(chunk_len);
                        self.skipped = 0;
                        return Ok(Some(Err(FrameError::TooLong { len, limit: self.limit })));
                    }
                    if self.buf.len() + pos > self.limit {
                        let len = self.buf.len() + pos;
                        self.buf.clear();
                        self.inner.consume(chunk_len);
                        return Ok(Some(Err(FrameError::TooLong { len, limit: self.limit })));
                    }
                    // A record read whole at once is copied out in one allocation of its size.
                    let line = if self.buf.is_empty() {
                        available[..pos].to_vec()
                    } else {
                        self.buf.extend_from_slice(&available[..pos]);
                        std::mem::take(&mut self.buf)
                    };
                    self.inner.consume(chunk_len);
                    return Ok(Some(decode(line)));
                }
                None => {
                    let n = available.len();
                    if self.skipped > 0 {
                        self.skipped += n;
                    } else if self.buf.len() + n > self.limit {
                        self.skipped = self.buf.len() + n;
                        self.buf = Vec::new();
                    } else {
                        self.buf.extend_from_slice(available);
                    }
                    self.inner.consume(n);
                }
            }
        }
    }

    /// Give back the underlying reader (e.g. to switch framing).
    pub fn into_inner(self) -> R {
        self.inner
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

pub(super) fn decode(mut line: Vec<u8>) -> Record {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|e| FrameError::InvalidUtf8 { offset: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn records(input: &[u8], limit: usize) -> Vec<Record> {
        let mut r = RecordReader::with_limit(tokio::io::BufReader::with_capacity(4, input), limit);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().await.unwrap() {
            out.push(rec);
        }
        out
    }

    #[tokio::test]
    async fn splits_on_lf_only_and_strips_one_cr() {
        let input = "a\u{2028}b\r\n\r\nc\u{2029}\nlast".as_bytes();
        let got = records(input, 100).await;
        assert_eq!(
            got,
            vec![Ok("a\u{2028}b".to_string()), Ok(String::new()), Ok("c\u{2029}".to_string()), Ok("last".to_string())]
        );
    }

    #[tokio::test]
    async fn over_long_records_are_skipped_not_fatal() {
        let input = b"0123456789abc\nok\n0123456789";
        let got = records(input, 8).await;
        assert!(matches!(got[0], Err(FrameError::TooLong { len: 13, .. })));
        assert_eq!(got[1], Ok("ok".to_string()));
        assert!(matches!(got[2], Err(FrameError::TooLong { .. })));
        assert_eq!(got.len(), 3);
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_per_record() {
        let input = b"\xff\xfe\n{\"type\":\"get_state\"}\n";
        let got = records(input, 100).await;
        assert_eq!(got[0], Err(FrameError::InvalidUtf8 { offset: 0 }));
        assert_eq!(got[1], Ok("{\"type\":\"get_state\"}".to_string()));
    }
}
