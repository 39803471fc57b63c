//! The outbound messages of one turn of a connection's loop in one buffer:
//! each message followed by `\n`, so that on a line-framed stream the buffer
//! is the output as it is written, handed to the writer whole. A dialect
//! writes an event's message straight into it (no buffer per message).

/// Messages in one buffer, each followed by `\n`.
#[derive(Debug, Default)]
pub struct MessageBatch {
    bytes: Vec<u8>,
    /// Where each message's `\n` is.
    ends: Vec<usize>,
}

impl MessageBatch {
    /// Append a copy of `message`.
    pub fn push(&mut self, message: &[u8]) {
        self.bytes.extend_from_slice(message);
        self.end_message();
    }

    /// Write one message in place: `write` appends its bytes to the buffer
    /// and says whether it wrote a message (else what it wrote is dropped).
    pub fn write_with(&mut self, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        let start = self.bytes.len();
        if write(&mut self.bytes) {
            self.end_message();
        } else {
            self.bytes.truncate(start);
        }
    }

    fn end_message(&mut self) {
        self.ends.push(self.bytes.len());
        self.bytes.push(b'\n');
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The messages, in order, without their `\n`.
    pub fn messages(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let message = &self.bytes[start..end];
            start = end + 1;
            message
        })
    }

    /// Every message followed by `\n`: the bytes of the batch on a line-framed stream.
    pub fn lines(&self) -> &[u8] {
        &self.bytes
    }

    /// The buffer of [`MessageBatch::lines`], to hand over: `swap` gets it
    /// and gives another one back (emptied here), so neither side grows a
    /// new buffer for the next batch.
    pub fn hand_over(&mut self, swap: impl FnOnce(&mut Vec<u8>)) {
        swap(&mut self.bytes);
        self.clear();
    }

    /// Drop every message, keeping the buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_back_as_pushed_and_as_lines() {
        let mut batch = MessageBatch::default();
        assert!(batch.is_empty());
        batch.push(b"{\"a\":1}");
        batch.write_with(|out| {
            out.extend_from_slice(b"dropped");
            false
        });
        batch.push(b"");
        batch.write_with(|out| {
            out.extend_from_slice(b"{\"b\":\"x\ny\"}");
            true
        });
        assert_eq!(batch.len(), 3);
        let messages: Vec<&[u8]> = batch.messages().collect();
        assert_eq!(messages, vec![&b"{\"a\":1}"[..], b"", b"{\"b\":\"x\ny\"}"]);
        assert_eq!(batch.lines(), b"{\"a\":1}\n\n{\"b\":\"x\ny\"}\n");
        let mut taken = Vec::with_capacity(7);
        batch.hand_over(|bytes| std::mem::swap(bytes, &mut taken));
        assert_eq!(taken, b"{\"a\":1}\n\n{\"b\":\"x\ny\"}\n");
        assert!(batch.is_empty() && batch.lines().is_empty() && batch.messages().next().is_none());
    }
}
