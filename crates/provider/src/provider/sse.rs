//! Server-sent events parsing for streaming providers: an incremental,
//! byte-accurate parser (WHATWG event-stream rules) and a stream adapter over
//! an HTTP body.
//!
//! Lines end with CRLF, LF or CR; chunks may split anywhere, including inside
//! a CRLF pair or a UTF-8 sequence (lines are decoded only once complete,
//! invalid UTF-8 becomes U+FFFD). A leading BOM is skipped. `data` lines
//! accumulate (joined by `\n`), `event` names the event, `id` and `retry` are
//! kept, comments (`:`) and unknown fields are ignored, and an empty line
//! dispatches the event when it has data.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;

use futures::{Stream, StreamExt};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when absent (the spec's default is `message`).
    pub event: String,
    pub data: String,
    /// Last event id seen on the stream, if any.
    pub id: Option<String>,
    pub retry: Option<u64>,
    /// True for an event whose data was still pending when the body ended
    /// (no closing blank line). Spec-following consumers ignore it; some
    /// APIs' own parsers dispatch it or report it.
    pub unterminated: bool,
}

/// Incremental parser: feed bytes with [`SseParser::push`], then call [`SseParser::finish`].
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended with CR: a leading LF of the next chunk belongs to it.
    after_cr: bool,
    /// Past the possible BOM at the very start.
    started: bool,
    bom_probe: Vec<u8>,
    data: String,
    has_data: bool,
    event: String,
    last_id: Option<String>,
    retry: Option<u64>,
}

const BOM: &[u8] = &[0xEF, 0xBB, 0xBF];

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feed a chunk; returns the events completed by it, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let _ = self.push_with(chunk, &mut |event: &mut SseEvent| {
            out.push(std::mem::take(event));
            ControlFlow::Continue(())
        });
        out
    }

    /// Feed a chunk, handing each event to `each` as it completes (lent:
    /// its buffers are reused for the next event). Stops at the first
    /// `Break`, leaving the rest of the chunk unread: feed nothing more then.
    pub fn push_each(&mut self, chunk: &[u8], each: &mut dyn FnMut(&SseEvent) -> ControlFlow<()>) -> ControlFlow<()> {
        self.push_with(chunk, &mut |event: &mut SseEvent| each(event))
    }

    fn push_with<F>(&mut self, mut chunk: &[u8], sink: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&mut SseEvent) -> ControlFlow<()>,
    {
        if !self.started {
            // Hold back the first bytes until it is clear whether they are a BOM.
            let mut head = std::mem::take(&mut self.bom_probe);
            let take = (BOM.len() - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if head.len() < BOM.len() && BOM.starts_with(&head) {
                self.bom_probe = head;
                return ControlFlow::Continue(());
            }
            self.started = true;
            if head != BOM {
                self.feed(&head, sink)?;
            }
        }
        self.feed(chunk, sink)
    }

    fn feed<F>(&mut self, mut bytes: &[u8], sink: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&mut SseEvent) -> ControlFlow<()>,
    {
        while let Some(&first) = bytes.first() {
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            // Whole runs of line bytes at once, not byte by byte.
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
                self.line.extend_from_slice(bytes);
                return ControlFlow::Continue(());
            };
            self.after_cr = bytes[end] == b'\r';
            let line = &bytes[..end];
            bytes = &bytes[end + 1..];
            if self.line.is_empty() {
                // The whole line is in this chunk: read in place, not copied.
                self.process_line(line, sink)?;
            } else {
                self.line.extend_from_slice(line);
                self.end_line(sink)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// End of stream. Per the spec an event not closed by a blank line is
    /// dropped; a final line without its line break is still processed first.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = self.finish_with_trailing();
        out.retain(|e| !e.unterminated);
        out
    }

    /// End of stream, keeping an event not closed by a blank line as a last
    /// event marked [`SseEvent::unterminated`].
    pub fn finish_with_trailing(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut sink = |event: &mut SseEvent| {
            out.push(std::mem::take(event));
            ControlFlow::Continue(())
        };
        if !self.started {
            self.started = true;
            let head = std::mem::take(&mut self.bom_probe);
            let _ = self.feed(&head, &mut sink);
        }
        if !self.line.is_empty() {
            let _ = self.end_line(&mut sink);
        }
        if self.has_data {
            let _ = self.dispatch(true, &mut sink);
        }
        self.data.clear();
        self.has_data = false;
        self.event.clear();
        out
    }

    fn end_line<F>(&mut self, sink: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&mut SseEvent) -> ControlFlow<()>,
    {
        // The line buffer is kept (cleared) for the next line.
        let mut line = std::mem::take(&mut self.line);
        let flow = self.process_line(&line, sink);
        line.clear();
        self.line = line;
        flow
    }

    /// Hand the event gathered so far to `sink`, then keep its buffers for the next one.
    fn dispatch<F>(&mut self, unterminated: bool, sink: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&mut SseEvent) -> ControlFlow<()>,
    {
        let mut event = SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry: self.retry,
            unterminated,
        };
        if event.data.ends_with('\n') {
            event.data.pop();
        }
        let flow = sink(&mut event);
        // Emptied, not freed (unless the sink took them).
        self.data = event.data;
        self.data.clear();
        self.event = event.event;
        self.event.clear();
        self.has_data = false;
        flow
    }

    fn process_line<F>(&mut self, line: &[u8], sink: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&mut SseEvent) -> ControlFlow<()>,
    {
        if line.is_empty() {
            if self.has_data {
                return self.dispatch(false, sink);
            }
            self.event.clear();
            self.has_data = false;
            return ControlFlow::Continue(());
        }
        if line[0] == b':' {
            return ControlFlow::Continue(());
        }
        // The field is looked at as bytes; only a value kept is decoded (a
        // ':' never ends a UTF-8 sequence, so decoding the parts is decoding
        // the line: invalid UTF-8 becomes U+FFFD either way).
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                push_text(&mut self.data, value);
                self.data.push('\n');
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                push_text(&mut self.event, value);
            }
            b"id" if !value.contains(&0) => {
                let mut id = String::new();
                push_text(&mut id, value);
                self.last_id = Some(id);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Append `bytes` as text: valid UTF-8 (the usual case) as it is, else with
/// U+FFFD for what is not.
fn push_text(text: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(valid) => text.push_str(valid),
        Err(_) => text.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Why reading the body failed.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyError {
    /// No bytes arrived within the idle timeout.
    Idle(Duration),
    /// The transport failed (reset, truncated body, …); the text describes it.
    Transport(String),
}

/// SSE events from a stream of body chunks. Each read waits at most `idle`
/// (when set) for the next chunk. A transport error ends the stream after
/// the events completed before it. At a clean end of body, data still
/// pending comes as a last event marked `unterminated`.
pub fn sse_events<S, E>(body: S, idle: Option<Duration>) -> impl Stream<Item = Result<SseEvent, BodyError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    framed_events(body, idle, SseParser::new())
}

/// A body format read incrementally into events: SSE ([`SseParser`]) or a
/// binary framing such as AWS's event stream (`super::bedrock::eventstream`).
pub trait Framer: Send + 'static {
    /// Feed a chunk; the events it completes, or why the bytes are not valid.
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String>;
    /// The body ended cleanly: the last events, or why the end is premature.
    fn finish(&mut self) -> Result<Vec<SseEvent>, String>;
    /// Feed a chunk, handing each event it completes to `each`, in order,
    /// until `each` answers `Break` (then the rest is not read, and nothing
    /// more may be fed). A framing error comes before any event of the chunk.
    fn push_each(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(&SseEvent) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, String> {
        for event in self.push(chunk)? {
            if each(&event).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

impl Framer for SseParser {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        Ok(SseParser::push(self, chunk))
    }

    fn finish(&mut self) -> Result<Vec<SseEvent>, String> {
        Ok(self.finish_with_trailing())
    }

    /// Without a copy of any event: each is lent, its buffers reused.
    fn push_each(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(&SseEvent) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, String> {
        Ok(SseParser::push_each(self, chunk, each))
    }
}

/// The chunks of a body, each read waiting at most `idle` (when set): a
/// wait that runs out ends the stream with [`BodyError::Idle`], a transport
/// error with [`BodyError::Transport`].
pub struct IdleBody<S> {
    body: S,
    idle: Option<Duration>,
    /// When the current wait runs out (set at its first pending read).
    deadline: Option<tokio::time::Instant>,
    /// The idle timer, made at the first wait and kept: a wait only moves
    /// its deadline later, and a timer that fires before the current wait's
    /// deadline is set to it (no timer is made per read).
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The waker the timer holds until it fires: a wait by the same task
    /// leaves the timer as it is (the usual case, a pending read per chunk).
    armed: Option<std::task::Waker>,
    done: bool,
}

impl<S> IdleBody<S> {
    pub fn new(body: S, idle: Option<Duration>) -> IdleBody<S> {
        IdleBody { body, idle, deadline: None, timer: None, armed: None, done: false }
    }
}

impl<S, E> Stream for IdleBody<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    type Item = Result<Bytes, BodyError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // The body first, as `tokio::time::timeout` polls it: a chunk
        // already at hand is taken without the timer.
        match this.body.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                this.deadline = None;
                return Poll::Ready(Some(Ok(bytes)));
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                return Poll::Ready(Some(Err(BodyError::Transport(e.to_string()))));
            }
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        let Some(limit) = this.idle else { return Poll::Pending };
        let deadline = *this.deadline.get_or_insert_with(|| tokio::time::Instant::now() + limit);
        let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        // Not fired, so due at or before this wait's deadline, and holding
        // this task's waker: it wakes the task in time as it is.
        if !timer.is_elapsed() && this.armed.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        while timer.as_mut().poll(cx).is_ready() {
            if tokio::time::Instant::now() >= deadline {
                this.done = true;
                return Poll::Ready(Some(Err(BodyError::Idle(limit))));
            }
            timer.as_mut().reset(deadline);
        }
        this.armed = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Events of a body read with `framer`, like [`sse_events`]; a framing
/// error ends the stream as a transport error.
pub fn framed_events<S, E, F>(
    body: S,
    idle: Option<Duration>,
    framer: F,
) -> impl Stream<Item = Result<SseEvent, BodyError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
    F: Framer,
{
    struct St<S, F> {
        body: IdleBody<S>,
        parser: F,
        pending: std::collections::VecDeque<SseEvent>,
        done: bool,
    }
    // Boxed: the state moves in and out of each step's future.
    let state =
        Box::new(St { body: IdleBody::new(body, idle), parser: framer, pending: Default::default(), done: false });
    futures::stream::unfold(state, move |mut st| async move {
        loop {
            if let Some(ev) = st.pending.pop_front() {
                return Some((Ok(ev), st));
            }
            if st.done {
                return None;
            }
            let framed = match st.body.next().await {
                Some(Ok(bytes)) => st.parser.push(&bytes),
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
                None => {
                    st.done = true;
                    st.parser.finish()
                }
            };
            match framed {
                Ok(events) => st.pending.extend(events),
                Err(e) => {
                    st.done = true;
                    return Some((Err(BodyError::Transport(e)), st));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], sizes: &[usize]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut rest = input;
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            out.extend(p.push(&rest[..n]));
            rest = &rest[n..];
            i += 1;
        }
        out.extend(p.finish());
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn basic_events_and_done() {
        let input = b"data: {\"a\":1}\n\ndata: [DONE]\n\n";
        assert_eq!(data(&parse_in_pieces(input, &[1000])), vec![r#"{"a":1}"#, "[DONE]"]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let input =
            "event: delta\r\ndata: héllo 👋\r\ndata: second line\r\n\r\n: comment\rdata:x\r\rdata:  two spaces\n\n";
        let whole = parse_in_pieces(input.as_bytes(), &[10_000]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].event, "delta");
        assert_eq!(whole[0].data, "héllo 👋\nsecond line");
        assert_eq!(whole[1].data, "x");
        assert_eq!(whole[1].event, "");
        assert_eq!(whole[2].data, " two spaces");
        for size in 1..8 {
            assert_eq!(parse_in_pieces(input.as_bytes(), &[size]), whole, "piece size {size}");
        }
        assert_eq!(parse_in_pieces(input.as_bytes(), &[1, 3, 2, 7]), whole);
    }

    #[test]
    fn utf8_split_inside_a_sequence() {
        let input = "data: 日本語\n\n".as_bytes();
        // Split after the first byte of the first multi-byte char.
        let mut p = SseParser::new();
        let mut out = p.push(&input[..7]);
        out.extend(p.push(&input[7..]));
        assert_eq!(data(&out), vec!["日本語"]);
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters_in_values_and_spoils_a_field_name() {
        // Values: each bad byte or cut sequence is one U+FFFD, a good one kept
        // (a cut sequence right before the next field's separator too).
        let input =
            b"event: p\xffng\nid: \xe6\x97\ndata: a\xe6\x97\xa5\xc0b\ndata:\xe6:x\n\xffdata: lost\nda\xe6ta: lost\n\n";
        for sizes in [&[1][..], &[2, 5], &[1000]] {
            let ev = parse_in_pieces(input, sizes);
            assert_eq!(ev.len(), 1);
            assert_eq!(ev[0].event, "p\u{fffd}ng");
            assert_eq!(ev[0].id.as_deref(), Some("\u{fffd}"));
            assert_eq!(ev[0].data, "a日\u{fffd}b\n\u{fffd}:x");
        }
    }

    #[test]
    fn crlf_split_between_cr_and_lf_is_one_line_break() {
        let mut p = SseParser::new();
        let mut out = p.push(b"data: a\r");
        out.extend(p.push(b"\ndata: b\r"));
        out.extend(p.push(b"\n\r"));
        out.extend(p.push(b"\n"));
        assert_eq!(data(&out), vec!["a\nb"]);
    }

    #[test]
    fn bom_is_skipped_even_when_split() {
        let mut input = BOM.to_vec();
        input.extend_from_slice(b"data: x\n\n");
        assert_eq!(data(&parse_in_pieces(&input, &[1])), vec!["x"]);
        assert_eq!(data(&parse_in_pieces(&input, &[2, 100])), vec!["x"]);
    }

    #[test]
    fn fields_without_colon_ids_and_retry() {
        let input = b"id: 7\nretry: 1500\ndata\n\nretry: x\nid: 8\0\ndata: y\n\n";
        let ev = parse_in_pieces(input, &[3]);
        assert_eq!(ev[0].data, "");
        assert_eq!(ev[0].id.as_deref(), Some("7"));
        assert_eq!(ev[0].retry, Some(1500));
        assert_eq!(ev[1].id.as_deref(), Some("7"));
        assert_eq!(ev[1].retry, Some(1500));
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing_and_reset_the_event_name() {
        let ev = parse_in_pieces(b"event: ping\n\n\n\ndata: z\n\n", &[4]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "");
    }

    #[test]
    fn unterminated_final_event_is_dropped() {
        assert!(parse_in_pieces(b"data: partial", &[5]).is_empty());
        assert!(parse_in_pieces(b"data: partial\n", &[5]).is_empty());
    }

    #[test]
    fn unterminated_final_event_can_be_kept() {
        let mut p = SseParser::new();
        assert_eq!(data(&p.push(b"data: a\n\nevent: e\ndata: partial")), vec!["a"]);
        let tail = p.finish_with_trailing();
        assert_eq!(tail.len(), 1);
        assert!(tail[0].unterminated);
        assert_eq!((tail[0].event.as_str(), tail[0].data.as_str()), ("e", "partial"));
        assert!(SseParser::new().finish_with_trailing().is_empty());
    }

    #[test]
    fn lent_events_are_the_pushed_events_at_every_split_point() {
        let input = "event: delta\r\ndata: héllo 👋\r\ndata: second\r\n\r\nid: 4\ndata:x\r\rdata:  two\n\n".as_bytes();
        let whole = parse_in_pieces(input, &[10_000]);
        for size in 1..9 {
            let mut p = SseParser::new();
            let mut lent = Vec::new();
            for chunk in input.chunks(size) {
                let flow = p.push_each(chunk, &mut |e: &SseEvent| {
                    lent.push(e.clone());
                    ControlFlow::Continue(())
                });
                assert!(flow.is_continue());
            }
            lent.extend(p.finish());
            assert_eq!(lent, whole, "piece size {size}");
        }
    }

    #[test]
    fn a_break_stops_at_that_event() {
        let mut p = SseParser::new();
        let mut seen = Vec::new();
        let flow = p.push_each(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", &mut |e: &SseEvent| {
            seen.push(e.data.clone());
            if e.data == "2" { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert!(flow.is_break());
        assert_eq!(seen, ["1", "2"]);
    }

    #[tokio::test]
    async fn adapter_yields_events_then_the_transport_error() {
        let chunks: Vec<Result<Bytes, String>> = vec![
            Ok(Bytes::from_static(b"data: 1\n\nda")),
            Ok(Bytes::from_static(b"ta: 2\n\n")),
            Err("connection reset".to_string()),
        ];
        let events: Vec<_> = sse_events(futures::stream::iter(chunks), None).collect().await;
        assert_eq!(events.len(), 3);
        assert_eq!(events[1].as_ref().map(|e| e.data.as_str()), Ok("2"));
        assert_eq!(events[2], Err(BodyError::Transport("connection reset".into())));
    }

    /// Chunks that keep coming sooner than the limit never time the body
    /// out, however long it lasts; the first silence of the limit does, the
    /// limit after the last chunk (on tokio's paused clock).
    #[tokio::test(start_paused = true)]
    async fn the_idle_limit_counts_from_the_last_chunk() {
        let start = tokio::time::Instant::now();
        let chunks = futures::stream::unfold(0, |i| async move {
            if i == 10 {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
            Some((Ok::<_, String>(Bytes::from(format!("data: {i}\n\n"))), i + 1))
        });
        let body = IdleBody::new(Box::pin(chunks.chain(futures::stream::pending())), Some(Duration::from_secs(5)));
        let read: Vec<_> = body.collect().await;
        assert_eq!(read.len(), 11);
        assert!(read[..10].iter().all(Result::is_ok));
        assert_eq!(read[10], Err(BodyError::Idle(Duration::from_secs(5))));
        assert_eq!(start.elapsed(), Duration::from_secs(35));
    }

    #[tokio::test(start_paused = true)]
    async fn adapter_times_out_when_idle() {
        let body = futures::stream::once(async { Ok::<_, String>(Bytes::from_static(b"data: 1\n\n")) })
            .chain(futures::stream::pending());
        let events: Vec<_> = sse_events(Box::pin(body), Some(Duration::from_secs(5))).collect().await;
        assert_eq!(events.len(), 2);
        assert_eq!(events[1], Err(BodyError::Idle(Duration::from_secs(5))));
    }
}
