//! The frame of a stream's text chunks: the bytes before and after the
//! `delta` of the last plain chunk whose only effect was its text. The chunks
//! of one reply differ only in their delta, so a chunk made of the same
//! frame around a simple `{"content":"…"}` reads exactly as that chunk read,
//! but with its own text: only the text is read.

/// The bytes around the `delta` value of a plain chunk.
#[derive(Debug, Default)]
pub(super) struct ChunkFrame {
    /// Up to and including `"delta":`.
    head: String,
    /// From just after the delta's closing brace to the end.
    tail: String,
    set: bool,
}

impl ChunkFrame {
    /// Remember the frame of `data`, whose delta value is `delta` (a slice of `data`).
    pub(super) fn remember(&mut self, data: &str, delta: &str) {
        let start = (delta.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let Some(end) = start.checked_add(delta.len()).filter(|&end| end <= data.len()) else {
            self.set = false;
            return;
        };
        let (Some(head), Some(tail)) = (data.get(..start), data.get(end..)) else {
            self.set = false;
            return;
        };
        self.head.clear();
        self.head.push_str(head);
        self.tail.clear();
        self.tail.push_str(tail);
        self.set = true;
    }

    /// The text of `data` if it is this frame around `{"content":"…"}` with a
    /// text that has no escapes (and no control characters); `None` otherwise.
    pub(super) fn text_of<'a>(&self, data: &'a str) -> Option<&'a str> {
        if !self.set || data.len() <= self.head.len() + self.tail.len() {
            return None;
        }
        let middle = data.strip_prefix(self.head.as_str())?.strip_suffix(self.tail.as_str())?;
        let text = middle.strip_prefix(r#"{"content":""#)?.strip_suffix(r#""}"#)?;
        text.bytes().all(|b| b != b'"' && b != b'\\' && b >= 0x20).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_frame_around_a_plain_text_is_recognised() {
        let first =
            r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        let start = first.find(r#"{"role""#).unwrap();
        let end = first.find(r#","finish_reason""#).unwrap();
        let mut frame = ChunkFrame::default();
        assert_eq!(frame.text_of(first), None);
        frame.remember(first, &first[start..end]);
        let chunk =
            |delta: &str| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#);
        assert_eq!(frame.text_of(&chunk(r#"{"content":"Hi there"}"#)), Some("Hi there"));
        assert_eq!(frame.text_of(&chunk(r#"{"content":""}"#)), Some(""));
        assert_eq!(frame.text_of(&chunk(r#"{"content":"é ü"}"#)), Some("é ü"));
        // Escapes, quotes, control characters, other keys, other spacing: read the careful way.
        for delta in [
            r#"{"content":"a\"b"}"#,
            r#"{"content":"a\nb"}"#,
            "{\"content\":\"a\tb\"}",
            r#"{"content":"a","role":"assistant"}"#,
            r#"{"content": "a"}"#,
            r#"{"content":5}"#,
            r#"{}"#,
        ] {
            assert_eq!(frame.text_of(&chunk(delta)), None, "{delta}");
        }
        let other = r#"{"id":"d","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}"#;
        assert_eq!(frame.text_of(other), None);
        let finished = r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#;
        assert_eq!(frame.text_of(finished), None);
        // A delta that is not a slice of the chunk leaves no frame.
        frame.remember(first, "{}");
        assert_eq!(frame.text_of(&chunk(r#"{"content":"Hi"}"#)), None);
    }
}
