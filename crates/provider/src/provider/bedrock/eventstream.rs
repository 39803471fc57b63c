//! AWS's binary event stream (`application/vnd.amazon.eventstream`), the
//! framing of Bedrock's `ConverseStream` answers, read with
//! `aws-smithy-eventstream` (prelude and message CRCs checked there).
//!
//! Each message becomes one [`SseEvent`] for the API's decoder: `event` is
//! the message's `:event-type` (`messageStart`, `contentBlockDelta`, …) and
//! `data` its JSON payload. An `exception` message has its
//! `:exception-type` as `event` and `id` set to [`EXCEPTION`]; an `error`
//! message has its `:error-code` as `event`, `{"message": :error-message}`
//! as `data`, and `id` [`EXCEPTION`] too.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;

use super::super::sse::{Framer, SseEvent};

/// The `id` of events that carry an exception or error message.
pub const EXCEPTION: &str = "exception";

/// Incremental event-stream reader.
#[derive(Default)]
pub struct EventStreamFramer {
    buffer: BytesMut,
    decoder: MessageFrameDecoder,
    /// A framing error met after some events of a chunk: reported next.
    failed: Option<String>,
    /// Bytes of a message whose prelude was already consumed by the decoder.
    partial: bool,
}

fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message.headers().iter().find(|h| h.name().as_str() == name).and_then(|h| match h.value() {
        HeaderValue::String(s) => Some(s.as_str()),
        _ => None,
    })
}

/// The event a decoded message stands for.
pub fn to_event(message: &Message) -> SseEvent {
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    match header(message, ":message-type").unwrap_or("event") {
        "exception" => SseEvent {
            event: header(message, ":exception-type").unwrap_or("UnknownException").to_string(),
            data: payload,
            id: Some(EXCEPTION.to_string()),
            ..SseEvent::default()
        },
        "error" => SseEvent {
            event: header(message, ":error-code").unwrap_or("UnknownError").to_string(),
            data: serde_json::json!({"message": header(message, ":error-message").unwrap_or("")}).to_string(),
            id: Some(EXCEPTION.to_string()),
            ..SseEvent::default()
        },
        _ => SseEvent {
            event: header(message, ":event-type").unwrap_or_default().to_string(),
            data: payload,
            ..SseEvent::default()
        },
    }
}

impl Framer for EventStreamFramer {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.buffer.extend_from_slice(chunk);
        let mut out = Vec::new();
        loop {
            let before = self.buffer.len();
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => {
                    self.partial = false;
                    out.push(to_event(&message));
                }
                Ok(DecodedFrame::Incomplete) => {
                    self.partial |= self.buffer.len() != before;
                    break;
                }
                Err(e) => {
                    let e = format!("invalid event stream: {e}");
                    if out.is_empty() {
                        return Err(e);
                    }
                    self.failed = Some(e);
                    break;
                }
            }
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<SseEvent>, String> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.partial || !self.buffer.is_empty() {
            return Err("the event stream ended inside a message".to_string());
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::Header;

    fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
        let headers =
            headers.iter().map(|(k, v)| Header::new(k.to_string(), HeaderValue::String(v.to_string().into())));
        let message = Message::new_from_parts(headers.collect(), payload.as_bytes().to_vec());
        let mut out = Vec::new();
        write_message_to(&message, &mut out).unwrap();
        out
    }

    #[test]
    fn messages_decode_across_any_split() {
        let mut bytes =
            frame(&[(":message-type", "event"), (":event-type", "messageStart")], r#"{"role":"assistant"}"#);
        bytes.extend(frame(
            &[(":message-type", "exception"), (":exception-type", "ThrottlingException")],
            r#"{"message":"slow down"}"#,
        ));
        bytes.extend(frame(
            &[(":message-type", "error"), (":error-code", "InternalFailure"), (":error-message", "x")],
            "",
        ));
        for piece in [1, 3, 7, 16, bytes.len()] {
            let mut framer = EventStreamFramer::default();
            let mut events = Vec::new();
            for chunk in bytes.chunks(piece) {
                events.extend(framer.push(chunk).unwrap());
            }
            assert!(framer.finish().unwrap().is_empty());
            assert_eq!(events.len(), 3, "piece {piece}");
            assert_eq!((events[0].event.as_str(), events[0].id.as_deref()), ("messageStart", None));
            assert_eq!(events[0].data, r#"{"role":"assistant"}"#);
            assert_eq!((events[1].event.as_str(), events[1].id.as_deref()), ("ThrottlingException", Some(EXCEPTION)));
            assert_eq!(events[2].data, r#"{"message":"x"}"#);
        }
    }

    #[test]
    fn damaged_and_truncated_streams_fail() {
        let mut bytes = frame(&[(":event-type", "messageStop")], r#"{"stopReason":"end_turn"}"#);
        let mut framer = EventStreamFramer::default();
        assert!(framer.push(&bytes[..bytes.len() - 2]).unwrap().is_empty());
        assert!(framer.finish().unwrap_err().contains("ended inside a message"));
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let mut framer = EventStreamFramer::default();
        assert!(framer.push(&bytes).unwrap_err().contains("invalid event stream"));
    }
}
