//! Streamed messages: in-memory trial, the writer thread writing them in
//! order and whole, broken outputs and bodies that fail half way.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use super::*;
use crate::testing::{SmallWrites, awkward_text, written};
use crate::writer::spawn_writer;

fn message(body: impl WriteJson + 'static) -> StreamedMessage {
    StreamedMessage { head: b"{\"data\":".to_vec(), body: Box::new(body), tail: b"}", escape_line_separators: false }
}

/// Writes `good` bytes of a string, then fails as a serialiser would.
struct FailsHalfWay {
    good: usize,
}

impl WriteJson for FailsHalfWay {
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(b"\"")?;
        out.write_all(&vec![b'a'; self.good])?;
        Err(io::Error::new(io::ErrorKind::InvalidData, "a value serde cannot write"))
    }
}

#[test]
fn a_small_value_is_written_in_memory_and_a_big_one_is_left_to_stream() {
    let head = b"{\"data\":".to_vec();
    let small = Serialized(vec!["é\u{2028}\"x\""; 10]);
    let mut out = head.clone();
    assert!(write_within(&small, &mut out, PIECE_BYTES).unwrap());
    assert_eq!(out, [&head[..], &serde_json::to_vec(&small.0).unwrap()].concat());
    let big = Serialized(awkward_text(PIECE_BYTES + 1));
    let mut out = head.clone();
    assert!(!write_within(&big, &mut out, PIECE_BYTES).unwrap());
    assert_eq!(out, head, "left as it was");
    let exact = serde_json::to_vec(&big.0).unwrap();
    let mut out = Vec::new();
    assert!(write_within(&big, &mut out, exact.len()).unwrap());
    assert_eq!(out, exact);
    let mut out = head.clone();
    assert!(write_within(&FailsHalfWay { good: 10 }, &mut out, PIECE_BYTES).is_err(), "a failure is not a big value");
    assert_eq!(out, head);
}

#[tokio::test]
async fn a_streamed_message_is_written_whole_between_the_lines_around_it() {
    let text = awkward_text(5 * PIECE_BYTES + 17);
    let streamed = message(Serialized(text.clone()));
    let assembled = streamed.assemble().unwrap();
    let mut expected = serde_json::to_vec(&serde_json::json!({"data": text})).unwrap();
    assert_eq!(assembled, expected, "head, body and tail as one value");
    expected.push(b'\n');
    let before = Outgoing::Bytes(b"{\"n\":1}".to_vec());
    let after = Outgoing::Bytes(b"{\"n\":2}".to_vec());
    let out = written(vec![before, Outgoing::Streamed(streamed), after]).await;
    assert_eq!(out, [&b"{\"n\":1}\n"[..], &expected, b"{\"n\":2}\n"].concat());
}

#[tokio::test]
async fn lines_sent_while_a_message_streams_come_after_it() {
    let out = SmallWrites::default();
    let (lines, writer) = spawn_writer(out.clone());
    let text = awkward_text(40 * PIECE_BYTES);
    let others = lines.clone();
    let producer = tokio::spawn(async move {
        for i in 0..2_000 {
            assert!(others.send(format!("{{\"n\":{i}}}").into_bytes()).await);
        }
    });
    assert!(lines.send(b"{\"first\":true}".to_vec()).await);
    assert!(lines.send_streamed(message(Serialized(text.clone()))).await);
    producer.await.unwrap();
    drop(lines);
    writer.finish().await.unwrap();
    let all = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let records: Vec<serde_json::Value> = all.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2_002, "every line whole: nothing written inside the streamed one");
    let at = records.iter().position(|r| r.get("data").is_some()).unwrap();
    assert_eq!(records[at]["data"], serde_json::Value::String(text));
    let numbers: Vec<u64> = records.iter().filter_map(|r| r["n"].as_u64()).collect();
    assert_eq!(numbers, (0..2_000).collect::<Vec<_>>(), "the other lines keep their order");
}

/// Takes `left` bytes, then the reader is gone.
struct ClosesAfter {
    left: Arc<Mutex<usize>>,
}

impl Write for ClosesAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut left = self.left.lock().unwrap();
        if *left == 0 {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        }
        let n = buf.len().min(*left);
        *left -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_reader_gone_mid_reply_stops_the_writer_and_refuses_what_follows() {
    let (lines, writer) = spawn_writer(ClosesAfter { left: Arc::new(Mutex::new(3 * PIECE_BYTES + 5)) });
    assert!(lines.send_streamed(message(Serialized(awkward_text(50 * PIECE_BYTES)))).await);
    let mut refused = false;
    for _ in 0..100_000 {
        if !lines.send(vec![b'x'; 1024]).await {
            refused = true;
            break;
        }
    }
    assert!(refused, "the output is known broken");
    assert!(!lines.send_streamed(message(Serialized("late"))).await);
    drop(lines);
    assert_eq!(writer.finish().await.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
}

#[tokio::test]
async fn a_body_that_fails_half_way_ends_its_line_and_the_next_lines_stay_whole() {
    let broken = Outgoing::Streamed(message(FailsHalfWay { good: 3 * PIECE_BYTES }));
    let out = written(vec![broken, Outgoing::Bytes(b"{\"next\":true}".to_vec())]).await;
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].len(), "{\"data\":\"".len() + 3 * PIECE_BYTES);
    assert_eq!(lines[1], "{\"next\":true}");
}

#[test]
fn separators_are_escaped_across_any_split() {
    let text = "a\u{2028}b\u{2029}\u{2028}é\u{20ac}\u{2027}\u{2030}日\u{2028}";
    let expected = text.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029");
    let bytes = text.as_bytes();
    for split in 0..=bytes.len() {
        for second in split..=bytes.len() {
            let mut out = Vec::new();
            let mut escaped = EscapeLineSeparators::new(&mut out);
            for part in [&bytes[..split], &bytes[split..second], &bytes[second..]] {
                escaped.write_all(part).unwrap();
            }
            escaped.finish().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "split at {split} and {second}");
        }
    }
    // Bytes that only begin a separator go out unchanged, also at the end.
    for tail in [&[0xE2][..], &[0xE2, 0x80], &[0xE2, 0xE2, 0x80, 0xA8], &[0xE2, 0x80, 0xE2, 0x80, 0xA9]] {
        let mut out = Vec::new();
        let mut escaped = EscapeLineSeparators::new(&mut out);
        escaped.write_all(tail).unwrap();
        escaped.finish().unwrap();
        let mut expected = tail.to_vec();
        if let Some(at) = expected.windows(3).position(|w| w == [0xE2, 0x80, 0xA8] || w == [0xE2, 0x80, 0xA9]) {
            let escape: &[u8] = if expected[at + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" };
            expected.splice(at..at + 3, escape.iter().copied());
        }
        assert_eq!(out, expected);
    }
}
