//! The call loop shared by the HTTP wire APIs: POST a prepared request,
//! turn a non-2xx answer into a classified error, then feed the SSE events of
//! the body to the API's [`Wire`] decoder and hand out what it emits, ending
//! after the stop or after the first error. Cancellation ends the stream
//! promptly with `Aborted`, before or during the body.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::cancel_watch::CancelWatch;

use super::http::{self, HttpClient};
use super::sse::{BodyError, Framer, SseEvent, SseParser};
use super::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStream};

/// Events (or the final error) decoded so far and not yet handed out.
#[derive(Default)]
pub(crate) struct Out {
    queue: VecDeque<Result<ProviderEvent, ProviderError>>,
}

impl Out {
    pub(crate) fn emit(&mut self, event: ProviderEvent) {
        self.queue.push_back(Ok(event));
    }

    fn fail(&mut self, err: ProviderError) {
        self.queue.push_back(Err(err));
    }

    /// What was emitted so far (tests, and Codex's WebSocket transport).
    pub(crate) fn take(&mut self) -> Vec<Result<ProviderEvent, ProviderError>> {
        self.queue.drain(..).collect()
    }
}

/// What the decoder wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// The API's terminator arrived (`[DONE]`): stop reading, then `finish`.
    Done,
}

/// An API's stream decoder.
pub(crate) trait Wire: Send + 'static {
    /// Decode one SSE event, emitting provider events into `out`.
    fn on_event(&mut self, event: &SseEvent, out: &mut Out) -> Result<Flow, ProviderError>;

    /// The body ended cleanly (end of body or terminator): emit the closing
    /// events and the `Stop`, or fail.
    fn finish(&mut self, out: &mut Out) -> Result<(), ProviderError>;
}

/// One prepared HTTP call.
pub(crate) struct Call {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The bytes sent instead of `body` as JSON (a compressed or signed body).
    pub raw: Option<Vec<u8>>,
    /// How the response body is framed.
    pub framing: Framing,
}

/// The framing of a streamed response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Framing {
    /// Server-sent events.
    #[default]
    Sse,
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`),
    /// each message handed to the decoder as one event (see
    /// [`super::bedrock::eventstream`]).
    AwsEventStream,
}

impl Call {
    pub(crate) fn new(url: String, headers: Vec<(String, String)>, body: Value) -> Call {
        Call { url, headers, body, raw: None, framing: Framing::Sse }
    }

    /// Send the JSON body zstd-compressed, with `content-encoding: zstd`.
    pub(crate) fn zstd(mut self) -> Call {
        let json = serde_json::to_vec(&self.body).unwrap_or_default();
        let compressed =
            ruzstd::encoding::compress_to_vec(json.as_slice(), ruzstd::encoding::CompressionLevel::Fastest);
        super::shared::set_header(&mut self.headers, "content-encoding", "zstd");
        self.raw = Some(compressed);
        self
    }
}

/// Builds the error for a non-2xx answer from its status, headers and body text.
pub(crate) type HttpErrorFn = Box<dyn Fn(u16, &HeaderMap, &str) -> ProviderError + Send>;

/// Rewrites a transport failure (before any response) into the API's wording.
pub(crate) type TransportErrorFn = fn(ProviderError) -> ProviderError;

/// Per-API behaviour of the driver.
pub(crate) struct Api {
    pub http_error: HttpErrorFn,
    pub transport_error: TransportErrorFn,
    /// Which answers the request's observer hears of (`after_provider_response`).
    pub reported: Reported,
}

/// The answers pi-ai's implementation of an API hands to `onResponse`
/// (pi's `after_provider_response`): those of the APIs it calls through a
/// vendor SDK only when they succeed (the SDK throws on an error status
/// first), every one for the APIs it calls with `fetch`, none for Google's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reported {
    Every,
    Successes,
    Nothing,
}

impl Reported {
    fn covers(self, status: u16) -> bool {
        match self {
            Reported::Every => true,
            Reported::Successes => (200..300).contains(&status),
            Reported::Nothing => false,
        }
    }
}

/// Keeps a transport error as [`HttpClient::post_json`] words it.
pub(crate) fn same_transport_error(err: ProviderError) -> ProviderError {
    err
}

enum Phase {
    /// The call is still being prepared (credentials to resolve, a body to sign).
    Prepare(Option<BoxFuture<'static, Result<Call, ProviderError>>>),
    Start(Option<Call>),
    Streaming(Box<Body>),
    /// The body read while an extension listens to each stream event (pi's
    /// `provider_stream_event`): each event waits for its handlers before it
    /// is decoded, so this phase runs as steps; [`Phase::Streaming`] stays
    /// the path without a listener.
    Observed(Box<Observed>),
    Done,
}

/// A body whose events an observer sees one at a time, each before it is decoded.
struct Observed {
    body: Body,
    observer: std::sync::Arc<dyn super::observe::RequestObserver>,
    /// The consumer's gate: the next chunk is read once it handed over the
    /// events decoded so far (see [`super::read_gate`]).
    gate: Option<std::sync::Arc<super::read_gate::ReadGate>>,
    /// Events framed from the chunks read so far and not yet decoded.
    events: VecDeque<SseEvent>,
    /// The body has ended: once `events` is drained, finish.
    ended: bool,
}

/// A response body being read: its chunks and the framing that makes them events.
struct Body {
    chunks: BoxStream<'static, Result<Bytes, BodyError>>,
    framer: Box<dyn Framer>,
}

/// Why the events of a body stop being read before its end.
enum Stop {
    /// The API's terminator: finish.
    Done,
    Failed(ProviderError),
}

struct Run<W: Wire> {
    http: HttpClient,
    cancel: CancellationToken,
    /// Made once per call: a flag checked per body read, not the token's lock.
    watch: CancelWatch,
    api: Api,
    phase: Phase,
    wire: W,
    out: Out,
}

impl<W: Wire> Run<W> {
    fn fail(&mut self, err: ProviderError) {
        self.out.fail(err);
        self.phase = Phase::Done;
    }

    async fn open(&mut self, mut call: Call) {
        // Extensions watching the request (pi's provider events) see it first.
        let observer = super::observe::current();
        if let Some(observer) = &observer {
            // Credentials are not shown to extensions (pi's SDK adds them after the hook too);
            // a header the hook sets under the same name replaces one.
            let (secret, shown): (Vec<_>, Vec<_>) =
                std::mem::take(&mut call.headers).into_iter().partition(|(name, _)| is_credential(name));
            let changed = observer.headers(shown).await;
            call.headers = secret
                .into_iter()
                .filter(|(name, _)| !changed.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)))
                .collect();
            call.headers.extend(changed);
            call.body = observer.payload(std::mem::take(&mut call.body)).await;
        }
        let observer = observer.filter(|o| o.wants_stream_events());
        let secrets = credentials(&call.headers);
        let framing = call.framing;
        let bytes = match call.raw.take() {
            Some(raw) => raw,
            None => match serde_json::to_vec(&call.body) {
                Ok(bytes) => bytes,
                Err(e) => {
                    let message = format!("Cannot encode request: {e}");
                    let err = ProviderError::new(ProviderErrorKind::InvalidRequest, message);
                    return self.fail((self.api.transport_error)(err));
                }
            },
        };
        let sent = self.http.post_stream(&call.url, &call.headers, bytes, &self.cancel).await;
        let response = match sent {
            Ok(r) => r,
            Err(e) if e.kind == ProviderErrorKind::Aborted => return self.fail(e),
            Err(e) => return self.fail((self.api.transport_error)(e)),
        };
        let status = response.status;
        if let Some(observer) = super::observe::current().filter(|_| self.api.reported.covers(status)) {
            let headers = response
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect();
            observer.response(status, headers).await;
        }
        if !response.is_success() {
            let headers = response.headers.clone();
            let err = match http::read_body(response, self.http.options.idle_timeout, &self.cancel).await {
                Ok(body) => {
                    let mut err = (self.api.http_error)(status, &headers, &body.text);
                    // Hide echoed keys before cutting, so no cut can split one.
                    for secret in &secrets {
                        err.message = err.message.replace(secret.as_str(), "***");
                    }
                    err.message = super::classify::cap_error_message(err.message, body.cut_note.as_deref());
                    err
                }
                Err(e) if e.kind == ProviderErrorKind::Aborted => e,
                Err(_) => (self.api.http_error)(status, &headers, ""),
            };
            return self.fail(err);
        }
        self.out.emit(ProviderEvent::Opened);
        let framer: Box<dyn Framer> = match framing {
            Framing::Sse => Box::new(SseParser::new()),
            Framing::AwsEventStream => Box::new(super::bedrock::eventstream::EventStreamFramer::default()),
        };
        let body = Body { chunks: self.http.body(response).boxed(), framer };
        self.phase = match observer {
            None => Phase::Streaming(Box::new(body)),
            Some(observer) => {
                let gate = super::read_gate::current();
                Phase::Observed(Box::new(Observed { body, observer, gate, events: VecDeque::new(), ended: false }))
            }
        };
    }

    /// Send the request and open the body, unless cancelled first.
    async fn start(&mut self, call: Call) {
        let cancel = self.cancel.clone();
        let opened = tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            _ = self.open(call) => true,
        };
        if !opened {
            self.fail(ProviderError::aborted());
        }
    }

    /// Decode the events a body chunk completes, as they complete (none is
    /// copied), until the terminator or an error.
    fn on_chunk(&mut self, framer: &mut dyn Framer, bytes: &[u8]) -> Result<Option<Stop>, String> {
        let mut stop = None;
        let (wire, out) = (&mut self.wire, &mut self.out);
        // A `Break` is told by `stop`.
        let _ = framer.push_each(bytes, &mut |event| on_event(wire, out, event, &mut stop))?;
        Ok(stop)
    }

    /// The body ended cleanly: its last events, then the end.
    fn on_end(&mut self, framer: &mut dyn Framer) {
        let events = match framer.finish() {
            Ok(events) => events,
            Err(e) => return self.fail(http::body_error(BodyError::Transport(e))),
        };
        let mut stop = None;
        for event in &events {
            if on_event(&mut self.wire, &mut self.out, event, &mut stop).is_break() {
                break;
            }
        }
        match stop {
            Some(Stop::Failed(e)) => self.fail(e),
            Some(Stop::Done) | None => self.finish(),
        }
    }

    fn finish(&mut self) {
        self.phase = Phase::Done;
        if let Err(e) = self.wire.finish(&mut self.out) {
            self.out.fail(e);
        }
    }

    async fn step(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => {}
            Phase::Prepare(prepare) => {
                let Some(prepare) = prepare else { return };
                let cancel = self.cancel.clone();
                let prepared = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => Err(ProviderError::aborted()),
                    prepared = prepare => prepared,
                };
                match prepared {
                    Ok(call) => self.phase = Phase::Start(Some(call)),
                    Err(e) => self.fail(e),
                }
            }
            Phase::Start(call) => {
                let Some(call) = call else { return };
                // Boxed: a large future, once per call, not moved with every body read.
                Box::pin(self.start(call)).await;
            }
            phase @ Phase::Streaming(_) => {
                self.phase = phase;
                std::future::poll_fn(|cx| self.poll_body(cx)).await;
            }
            Phase::Observed(observed) => self.observe_next(observed).await,
        }
    }

    /// One step of an observed body: show the next framed event to the
    /// observer, wait for it (pi awaits the `provider_stream_event` handlers
    /// before it decodes the chunk), then decode it; with no event framed,
    /// read the next chunk. Cancellation ends either wait.
    async fn observe_next(&mut self, mut observed: Box<Observed>) {
        let cancel = self.cancel.clone();
        if let Some(event) = observed.events.pop_front() {
            // OpenAI's end marker is the stream's framing, not an event (pi's SDK never shows it).
            if event.data != "[DONE]" {
                let data = serde_json::from_str(&event.data).unwrap_or_else(|_| Value::String(event.data.clone()));
                let seen = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => false,
                    _ = observed.observer.stream_event(data) => true,
                };
                if !seen {
                    return self.fail(ProviderError::aborted());
                }
            }
            let mut stop = None;
            if on_event(&mut self.wire, &mut self.out, &event, &mut stop).is_continue() {
                self.phase = Phase::Observed(observed);
                return;
            }
            return match stop {
                Some(Stop::Failed(e)) => self.fail(e),
                Some(Stop::Done) | None => self.finish(),
            };
        }
        if observed.ended {
            return self.finish();
        }
        // A new read: the agent's handlers had the events before (pi reads in an I/O callback).
        if let Some(gate) = &observed.gate {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return self.fail(ProviderError::aborted()),
                _ = std::future::poll_fn(|cx| gate.poll_open(cx)) => {}
            }
        }
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return self.fail(ProviderError::aborted()),
            next = observed.body.chunks.next() => next,
        };
        let Observed { body, events, ended, .. } = &mut *observed;
        match next {
            Some(Ok(bytes)) => match body.framer.push(&bytes) {
                Ok(framed) => events.extend(framed),
                Err(e) => return self.fail(http::body_error(BodyError::Transport(e))),
            },
            Some(Err(e)) => return self.fail(http::body_error(e)),
            None => match body.framer.finish() {
                Ok(framed) => {
                    events.extend(framed);
                    *ended = true;
                }
                Err(e) => return self.fail(http::body_error(BodyError::Transport(e))),
            },
        }
        self.phase = Phase::Observed(observed);
    }

    /// Read the body's next chunk and decode its events (none when it is
    /// not at hand: `Pending`, the task woken by the body or by
    /// cancellation). An event already at hand is taken without arming the
    /// cancellation wait; once waiting, cancellation comes first (as a
    /// biased `select!`).
    fn poll_body(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Phase::Streaming(mut body) = std::mem::replace(&mut self.phase, Phase::Done) else {
            return Poll::Ready(());
        };
        if self.watch.is_cancelled() {
            self.fail(ProviderError::aborted());
            return Poll::Ready(());
        }
        let next = match body.chunks.poll_next_unpin(cx) {
            Poll::Ready(next) => next,
            Poll::Pending => {
                // The task is woken by the body or by cancellation (its
                // waker registered once while it stays the same).
                if self.watch.poll_cancelled(cx).is_ready() {
                    self.fail(ProviderError::aborted());
                    return Poll::Ready(());
                }
                self.phase = Phase::Streaming(body);
                return Poll::Pending;
            }
        };
        match next {
            Some(Ok(bytes)) => match self.on_chunk(&mut *body.framer, &bytes) {
                Ok(None) => self.phase = Phase::Streaming(body),
                Ok(Some(Stop::Done)) => self.finish(),
                Ok(Some(Stop::Failed(e))) => self.fail(e),
                Err(e) => self.fail(http::body_error(BodyError::Transport(e))),
            },
            Some(Err(e)) => self.fail(http::body_error(e)),
            None => self.on_end(&mut *body.framer),
        }
        Poll::Ready(())
    }
}

/// Hand one event to the decoder; `Break` (with `stop` set) at the
/// terminator or an error.
fn on_event<W: Wire>(wire: &mut W, out: &mut Out, event: &SseEvent, stop: &mut Option<Stop>) -> ControlFlow<()> {
    match wire.on_event(event, out) {
        Ok(Flow::Continue) => return ControlFlow::Continue(()),
        Ok(Flow::Done) => *stop = Some(Stop::Done),
        Err(e) => *stop = Some(Stop::Failed(e)),
    }
    ControlFlow::Break(())
}

/// The credentials a request carries in its headers (`authorization`,
/// `x-api-key`, `x-goog-api-key`, …), without their `Bearer ` scheme.
/// Whether a request header carries a credential.
fn is_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("authorization") || name.contains("api-key")
}

fn credentials(headers: &[(String, String)]) -> Vec<String> {
    headers
        .iter()
        .filter(|(name, _)| is_credential(name))
        .map(|(_, value)| value.split_once(' ').map_or(value.as_str(), |(_, token)| token).trim().to_string())
        .filter(|token| token.len() >= 8)
        .collect()
}

/// Run one call: `call` is the prepared request, or the error that kept it
/// from being built (reported without any network traffic).
pub(crate) fn drive<W: Wire>(
    http: HttpClient,
    cancel: CancellationToken,
    call: Result<Call, ProviderError>,
    wire: W,
    api: Api,
) -> ProviderStream {
    let mut out = Out::default();
    let phase = match call {
        Ok(call) => Phase::Start(Some(call)),
        Err(e) => {
            out.fail(e);
            Phase::Done
        }
    };
    run_phase(http, cancel, phase, out, wire, api)
}

fn run_phase<W: Wire>(
    http: HttpClient,
    cancel: CancellationToken,
    phase: Phase,
    out: Out,
    wire: W,
    api: Api,
) -> ProviderStream {
    let watch = CancelWatch::new(&cancel);
    let run = Box::new(Run { http, cancel, watch, api, phase, wire, out });
    Box::pin(RunStream { run: Some(run), stepping: None })
}

/// A call's events as a stream, written by hand: while the body is read,
/// each poll decodes in place and hands out what is queued (no future is
/// made, and no event moved through one, per event); the steps that wait
/// (preparing, sending the request) run as a future owning the call.
struct RunStream<W: Wire> {
    /// The call, when no step holds it.
    run: Option<Box<Run<W>>>,
    /// A step under way, handing the call back when done.
    stepping: Option<BoxFuture<'static, Box<Run<W>>>>,
}

impl<W: Wire> Stream for RunStream<W> {
    type Item = Result<ProviderEvent, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(stepping) = &mut this.stepping {
                let run = std::task::ready!(stepping.as_mut().poll(cx));
                this.stepping = None;
                this.run = Some(run);
            }
            let Some(run) = this.run.as_mut() else { return Poll::Ready(None) };
            if let Some(item) = run.out.queue.pop_front() {
                if item.is_err() {
                    run.out.queue.clear();
                    run.phase = Phase::Done;
                }
                return Poll::Ready(Some(item));
            }
            match run.phase {
                Phase::Done => return Poll::Ready(None),
                Phase::Streaming(_) => std::task::ready!(run.poll_body(cx)),
                Phase::Prepare(_) | Phase::Start(_) | Phase::Observed(_) => {
                    let Some(mut run) = this.run.take() else { return Poll::Ready(None) };
                    this.stepping = Some(Box::pin(async move {
                        run.step().await;
                        run
                    }));
                }
            }
        }
    }
}

/// [`drive`] for a call prepared asynchronously (credentials resolved from
/// files or the network, a body signed with them); cancellation also ends
/// the preparation.
pub(crate) fn drive_prepared<W: Wire>(
    http: HttpClient,
    cancel: CancellationToken,
    prepare: BoxFuture<'static, Result<Call, ProviderError>>,
    wire: W,
    api: Api,
) -> ProviderStream {
    run_phase(http, cancel, Phase::Prepare(Some(prepare)), Out::default(), wire, api)
}

/// Decode a whole response body the way [`drive`] does, feeding the bytes in
/// pieces of `piece` bytes (tests: every split point must decode the same).
#[cfg(test)]
pub(crate) fn decode_bytes<W: Wire>(
    mut wire: W,
    bytes: &[u8],
    piece: usize,
) -> (Vec<ProviderEvent>, Option<ProviderError>) {
    let mut parser = super::sse::SseParser::new();
    let mut sse = Vec::new();
    for chunk in bytes.chunks(piece.max(1)) {
        sse.extend(parser.push(chunk));
    }
    sse.extend(parser.finish_with_trailing());
    let mut out = Out::default();
    let mut failed = false;
    for ev in &sse {
        match wire.on_event(ev, &mut out) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Done) => break,
            Err(e) => {
                out.fail(e);
                failed = true;
                break;
            }
        }
    }
    if !failed && let Err(e) = wire.finish(&mut out) {
        out.fail(e);
    }
    let mut events = Vec::new();
    for item in out.queue {
        match item {
            Ok(ev) => events.push(ev),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}
