//! Serving one connection with a dialect: one loop owns the requests in
//! flight, reads records, submits ops in arrival order, and maps the agent's
//! output (events and replies, in the core's order) to outbound messages.
//!
//! A dialect is a [`Dialect`]: how a record becomes ops and immediate
//! answers, and how events and replies become messages. The byte stream is
//! a [`RecordSource`] and a [`MessageSink`], so stdio (both framings) and a
//! WebSocket connection serve alike. The agent side is an [`OpPort`] and an
//! [`OutputPort`]: on stdio the agent itself; under `pi serve` the session
//! the connection is attached to, whose events carry a sequence number.

use std::future::Future;
use std::sync::Arc;

use pi_core::agent::{AgentClosed, AgentHandle, Output, Outputs};
use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Op, Reply, RequestTag};
use tokio::sync::mpsc;

use crate::batch::MessageBatch;
use crate::framing::{Framing, Record, RecordSource};
use crate::inflight::InFlight;
use crate::streamed::{Outgoing, StreamedMessage};
use crate::writer::{LineSender, spawn_writer};

/// What decoding one record asks the connection to do, in order.
#[derive(Debug)]
pub enum Action<P> {
    /// Submit `op`; with a pending entry its reply goes to [`Dialect::reply`].
    Submit { op: Op, pending: Option<P> },
    /// Send this message now.
    Send(Vec<u8>),
}

/// One dialect's mapping of the wire to the core and back.
pub trait Dialect {
    /// What the reply to a request needs (its id, its command, …).
    type Pending;

    /// Decode one record into actions.
    fn decode(&mut self, record: Record, in_flight: &InFlight<Self::Pending>, actions: &mut Vec<Action<Self::Pending>>);

    /// Map one event to the messages it shows as (often none or one).
    fn event(&mut self, event: AgentEvent, in_flight: &InFlight<Self::Pending>, out: &mut Vec<Vec<u8>>);

    /// [`Dialect::event`] into a batch (for a sink that [takes lines](MessageSink::takes_lines)):
    /// the same messages, which a dialect may write straight into the batch's buffer.
    fn event_into(&mut self, event: AgentEvent, in_flight: &InFlight<Self::Pending>, out: &mut MessageBatch) {
        let mut messages = Vec::new();
        self.event(event, in_flight, &mut messages);
        for message in &messages {
            out.push(message);
        }
    }

    /// Map an event that carries its session's sequence number (`pi serve`):
    /// each message it shows as carries `seq`. By default the number is not shown.
    fn sequenced_event(
        &mut self,
        event: AgentEvent,
        _seq: u64,
        in_flight: &InFlight<Self::Pending>,
        out: &mut Vec<Vec<u8>>,
    ) {
        self.event(event, in_flight, out);
    }

    /// Map numbered event `seq` of a session, shared with its other
    /// connections (`pi serve`): the same messages as
    /// [`Dialect::sequenced_event`], which a dialect may write from the
    /// shared event itself. By default a copy is mapped.
    fn shared_event(
        &mut self,
        event: &AgentEvent,
        seq: u64,
        in_flight: &InFlight<Self::Pending>,
        out: &mut Vec<Vec<u8>>,
    ) {
        self.sequenced_event(event.clone(), seq, in_flight, out);
    }

    /// Map the reply (or error) to a request.
    fn reply(&mut self, pending: Self::Pending, result: Result<Reply, CoreError>, out: &mut Vec<Vec<u8>>);

    /// Map the reply to a request where a big result may be written as it
    /// is serialised ([`Outgoing::Streamed`]); the same bytes as [`Dialect::reply`].
    fn reply_outgoing(&mut self, pending: Self::Pending, result: Result<Reply, CoreError>, out: &mut Vec<Outgoing>) {
        let mut messages = Vec::new();
        self.reply(pending, result, &mut messages);
        out.extend(messages.into_iter().map(Outgoing::Bytes));
    }

    /// [`Dialect::reply_outgoing`] into a batch (for a sink that [takes
    /// lines](MessageSink::takes_lines)): the same messages, whole ones
    /// written into the batch (a dialect may write them straight into its
    /// buffer); from the first streamed one on they go to `rest`, sent after the batch.
    fn reply_into(
        &mut self,
        pending: Self::Pending,
        result: Result<Reply, CoreError>,
        batch: &mut MessageBatch,
        rest: &mut Vec<Outgoing>,
    ) {
        let mut messages = Vec::new();
        self.reply_outgoing(pending, result, &mut messages);
        let mut streamed = false;
        for message in messages {
            match message {
                Outgoing::Bytes(bytes) if !streamed => batch.push(&bytes),
                message => {
                    streamed = true;
                    rest.push(message);
                }
            }
        }
    }

    /// Messages held back until the output ends (none by default).
    fn finish(&mut self, _out: &mut Vec<Vec<u8>>) {}
}

/// Where a connection's ops go.
pub trait OpPort {
    /// Queue an op (with a tag, one reply with that tag comes out of the
    /// [`OutputPort`]). The loop keeps draining the output while this waits.
    fn submit(&mut self, tag: Option<RequestTag>, op: Op) -> impl Future<Output = Result<(), AgentClosed>>;
}

impl OpPort for AgentHandle {
    async fn submit(&mut self, tag: Option<RequestTag>, op: Op) -> Result<(), AgentClosed> {
        self.reserve().await?.send(tag, op);
        Ok(())
    }
}

/// One item of a connection's output: an event (with its session sequence
/// number under `pi serve`) or a reply.
#[derive(Debug)]
pub struct Delivered {
    pub output: Output,
    pub seq: Option<u64>,
}

/// One item of a connection's output as its [`OutputPort`] hands it over.
#[derive(Debug)]
pub enum Received {
    /// An output of the connection's own.
    Own(Delivered),
    /// Numbered event `seq` of a session, shared with its other connections
    /// and its replay buffer (`pi serve`): mapped from the shared event
    /// ([`Dialect::shared_event`]), not copied out of it first.
    Shared(Arc<AgentEvent>, u64),
}

impl From<Delivered> for Received {
    fn from(delivered: Delivered) -> Received {
        Received::Own(delivered)
    }
}

/// Where a connection's output comes from, in order; `None` once it ends.
/// `recv` must be cancel-safe.
pub trait OutputPort {
    fn recv(&mut self) -> impl Future<Output = Option<Received>>;

    /// The next output if it is already at hand, without waiting (`None`
    /// when it is not, or by default): the loop maps the outputs at hand
    /// together before writing them.
    fn try_recv(&mut self) -> Option<Received> {
        None
    }
}

impl OutputPort for mpsc::Receiver<Output> {
    async fn recv(&mut self) -> Option<Received> {
        mpsc::Receiver::recv(self).await.map(|output| Received::Own(Delivered { output, seq: None }))
    }

    fn try_recv(&mut self) -> Option<Received> {
        mpsc::Receiver::try_recv(self).ok().map(|output| Received::Own(Delivered { output, seq: None }))
    }
}

/// The outputs of an agent started with [`pi_core::agent::spawn_batched`],
/// one at a time: the events it handed over together are taken from their
/// list, in order, with no channel operation each.
pub struct BatchedOutputs {
    outputs: mpsc::Receiver<Outputs>,
    /// The rest of the last list of events.
    events: std::vec::IntoIter<AgentEvent>,
}

impl BatchedOutputs {
    pub fn new(outputs: mpsc::Receiver<Outputs>) -> BatchedOutputs {
        BatchedOutputs { outputs, events: Vec::new().into_iter() }
    }

    /// The next event of the list at hand, else the first output of `item`.
    fn next(&mut self, item: Option<Outputs>) -> Option<Delivered> {
        let output = match item {
            None => Output::Event(self.events.next()?),
            Some(Outputs::One(output)) => output,
            Some(Outputs::Events(events)) => {
                self.events = events.into_iter();
                Output::Event(self.events.next()?)
            }
        };
        Some(Delivered { output, seq: None })
    }
}

impl OutputPort for BatchedOutputs {
    async fn recv(&mut self) -> Option<Received> {
        loop {
            if let Some(delivered) = self.next(None) {
                return Some(Received::Own(delivered));
            }
            // Cancel-safe: nothing is taken until the channel hands an item over.
            let item = self.outputs.recv().await?;
            if let Some(delivered) = self.next(Some(item)) {
                return Some(Received::Own(delivered));
            }
        }
    }

    fn try_recv(&mut self) -> Option<Received> {
        loop {
            if let Some(delivered) = self.next(None) {
                return Some(Received::Own(delivered));
            }
            let item = self.outputs.try_recv().ok()?;
            if let Some(delivered) = self.next(Some(item)) {
                return Some(Received::Own(delivered));
            }
        }
    }
}

/// Where a connection's outbound messages go; the sink frames them.
pub trait MessageSink {
    /// Send one message body; false once the output is broken.
    fn send(&self, body: Vec<u8>) -> impl Future<Output = bool>;

    /// Send these message bodies in order, as that many [`MessageSink::send`]s
    /// (stopping at the first that fails); `bodies` is left empty.
    fn send_all(&self, bodies: &mut Vec<Vec<u8>>) -> impl Future<Output = bool> {
        async move {
            for body in bodies.drain(..) {
                if !self.send(body).await {
                    return false;
                }
            }
            true
        }
    }

    /// Whether this sink takes a [`MessageBatch`] as it is
    /// ([`MessageSink::send_batch`]): a line-framed stream. Others get each
    /// message as its own buffer ([`MessageSink::send_all`]).
    fn takes_lines(&self) -> bool {
        false
    }

    /// Send the messages of `batch` in order, as that many
    /// [`MessageSink::send`]s (stopping at the first that fails); `batch` is
    /// left empty.
    fn send_batch(&self, batch: &mut MessageBatch) -> impl Future<Output = bool> {
        send_one_by_one(self, batch)
    }

    /// Send a message written as it is serialised. By default it is
    /// assembled and sent whole (a WebSocket text frame is one message).
    fn send_streamed(&self, message: StreamedMessage) -> impl Future<Output = bool> {
        async move {
            match Outgoing::Streamed(message).into_bytes() {
                Some(body) => self.send(body).await,
                None => true,
            }
        }
    }
}

/// The messages of `batch` sent in order with [`MessageSink::send`], one
/// each (stopping at the first that fails); `batch` is left empty.
async fn send_one_by_one<S: MessageSink + ?Sized>(sink: &S, batch: &mut MessageBatch) -> bool {
    let mut sent = true;
    for message in batch.messages() {
        if !sink.send(message.to_vec()).await {
            sent = false;
            break;
        }
    }
    batch.clear();
    sent
}

/// The stdio sink: the one writer thread, with the connection's framing.
pub struct FramedSink {
    lines: LineSender,
    framing: Framing,
}

impl FramedSink {
    pub fn new(lines: LineSender, framing: Framing) -> Self {
        FramedSink { lines, framing }
    }
}

impl MessageSink for FramedSink {
    async fn send(&self, body: Vec<u8>) -> bool {
        match self.framing {
            // The writer adds the LF in its buffer: no copy of the line.
            Framing::Lines => self.lines.send(body).await,
            Framing::Headers => self.lines.send_raw(self.framing.frame(body)).await,
        }
    }

    async fn send_all(&self, bodies: &mut Vec<Vec<u8>>) -> bool {
        match self.framing {
            Framing::Lines => self.lines.send_all(bodies).await,
            Framing::Headers => {
                for body in bodies.drain(..) {
                    if !self.send(body).await {
                        return false;
                    }
                }
                true
            }
        }
    }

    fn takes_lines(&self) -> bool {
        self.framing == Framing::Lines
    }

    async fn send_batch(&self, batch: &mut MessageBatch) -> bool {
        match self.framing {
            // The batch's buffer is the output: handed to the writer as it is.
            Framing::Lines => self.lines.send_batch(batch).await,
            Framing::Headers => send_one_by_one(self, batch).await,
        }
    }

    async fn send_streamed(&self, message: StreamedMessage) -> bool {
        match self.framing {
            Framing::Lines => self.lines.send_streamed(message).await,
            // `Content-Length` comes first: the message is assembled to be counted.
            Framing::Headers => match Outgoing::Streamed(message).into_bytes() {
                Some(body) => self.send(body).await,
                None => true,
            },
        }
    }
}

/// How serving a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// Input ended (or the agent shut down); everything accepted was finished.
    Eof,
    /// A termination signal arrived; the run was aborted.
    Signalled,
    /// The client stopped reading our output.
    OutputClosed,
}

/// Most outputs mapped in one turn of the loop before their messages are
/// sent (the input is read between turns).
const OUTPUTS_AT_HAND: usize = 256;

/// Most records taken in one turn of the loop when they are at hand (read
/// already: no wait), before the output and the stop signal are looked at again.
const RECORDS_AT_HAND: usize = 64;

/// `future`'s output if it is ready at once (`None` when it would wait;
/// it is then dropped, so it must be cancel-safe, as [`RecordSource::next`] is).
fn at_hand<F: Future>(future: F) -> Option<F::Output> {
    let future = std::pin::pin!(future);
    match future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// Text of the error answering a request the agent can no longer take.
pub const AGENT_CLOSED: &str = "The agent has shut down";

struct Connection<D: Dialect, K, R> {
    dialect: D,
    in_flight: InFlight<D::Pending>,
    sink: K,
    outputs: R,
    output_ok: bool,
    /// Messages to send, each its own buffer (a sink that does not take lines).
    scratch: Vec<Vec<u8>>,
    /// Messages to send in one buffer (a sink that [takes lines](MessageSink::takes_lines)).
    batch: MessageBatch,
    /// The sink takes lines: events are mapped into `batch`.
    lines: bool,
    /// The messages of one reply.
    replies: Vec<Outgoing>,
    /// The actions of one record (kept for the next: no allocation a record).
    actions: Vec<Action<D::Pending>>,
    /// With [`serve_in_order`]: immediate answers (errors for unreadable
    /// messages) by the tag of the barrier they wait for.
    in_order: Option<std::collections::HashMap<RequestTag, Vec<u8>>>,
    next_barrier: RequestTag,
}

/// Tags of the barriers of [`serve_in_order`] start here (above any request's).
const BARRIER_TAGS: RequestTag = 1 << 31;

impl<D: Dialect, K: MessageSink, R: OutputPort> Connection<D, K, R> {
    async fn flush(&mut self) {
        if self.lines {
            // What was queued as separate messages goes after the batch's (it came later).
            for message in self.scratch.drain(..) {
                self.batch.push(&message);
            }
            if self.output_ok && !self.batch.is_empty() && !self.sink.send_batch(&mut self.batch).await {
                self.output_ok = false;
            }
            self.batch.clear();
        }
        if self.output_ok && !self.scratch.is_empty() && !self.sink.send_all(&mut self.scratch).await {
            self.output_ok = false;
        }
        self.scratch.clear();
        if self.replies.is_empty() {
            return;
        }
        let mut replies = std::mem::take(&mut self.replies);
        for message in replies.drain(..) {
            let sent = match message {
                _ if !self.output_ok => continue,
                Outgoing::Bytes(bytes) => self.sink.send(bytes).await,
                Outgoing::Streamed(message) => self.sink.send_streamed(message).await,
            };
            self.output_ok &= sent;
        }
        self.replies = replies;
    }

    /// Map `received` and the outputs already at hand after it (at most
    /// [`OUTPUTS_AT_HAND`]), in order, and send their messages: the events'
    /// together, a reply's before any later output's.
    async fn output(&mut self, received: Received) {
        let mut next = Some(received);
        let mut taken = 0;
        while let Some(received) = next {
            match received {
                Received::Shared(event, seq) => {
                    self.dialect.shared_event(&event, seq, &self.in_flight, &mut self.scratch);
                    self.numbered_in_order();
                }
                Received::Own(Delivered { output: Output::Event(event), seq }) => match seq {
                    None if self.lines => self.dialect.event_into(event, &self.in_flight, &mut self.batch),
                    Some(seq) => {
                        self.dialect.sequenced_event(event, seq, &self.in_flight, &mut self.scratch);
                        self.numbered_in_order();
                    }
                    None => self.dialect.event(event, &self.in_flight, &mut self.scratch),
                },
                Received::Own(Delivered { output: Output::Reply { tag, result }, .. }) => {
                    if let Some(pending) = self.in_flight.remove(tag) {
                        if self.lines {
                            // In order in the batch with the events: sent with
                            // the outputs at hand (a burst of answers, one hand-off).
                            self.dialect.reply_into(pending, result, &mut self.batch, &mut self.replies);
                        } else {
                            self.dialect.reply_outgoing(pending, result, &mut self.replies);
                        }
                        // `flush` sends the events mapped so far, then the reply.
                        if !self.replies.is_empty() {
                            self.flush().await;
                        }
                    } else if let Some(message) = self.in_order.as_mut().and_then(|held| held.remove(&tag)) {
                        self.scratch.push(message);
                        self.flush().await;
                    }
                }
            }
            taken += 1;
            next = if taken < OUTPUTS_AT_HAND { self.outputs.try_recv() } else { None };
        }
        self.flush().await;
    }

    /// A numbered event's messages, mapped into `scratch`, go into the batch
    /// when the sink takes lines (in order with the batch's messages).
    fn numbered_in_order(&mut self) {
        if self.lines {
            for message in self.scratch.drain(..) {
                self.batch.push(&message);
            }
        }
    }

    /// Send an immediate answer; when answers go in order, once the agent
    /// has answered a barrier submitted now (after every earlier request).
    async fn send_now<O: OpPort>(&mut self, agent: &mut O, message: Vec<u8>) {
        if self.in_order.is_some() {
            let tag = BARRIER_TAGS + self.next_barrier;
            self.next_barrier += 1;
            if let Some(held) = &mut self.in_order {
                held.insert(tag, message);
            }
            if self.submit(agent, Some(tag), Op::Barrier).await.is_ok() {
                return;
            }
            match self.in_order.as_mut().and_then(|held| held.remove(&tag)) {
                Some(message) => self.scratch.push(message),
                None => return,
            }
        } else {
            self.scratch.push(message);
        }
        self.flush().await;
    }

    /// Send the immediate answers still waiting for their barrier (the output ended).
    async fn release_held(&mut self) {
        let Some(held) = &mut self.in_order else { return };
        let mut waiting: Vec<(RequestTag, Vec<u8>)> = held.drain().collect();
        waiting.sort_by_key(|(tag, _)| *tag);
        self.scratch.extend(waiting.into_iter().map(|(_, message)| message));
        self.flush().await;
    }

    /// Submit while still draining the agent's output, so neither side waits on the other.
    async fn submit<O: OpPort>(&mut self, agent: &mut O, tag: Option<u64>, op: Op) -> Result<(), AgentClosed> {
        let submitted = agent.submit(tag, op);
        tokio::pin!(submitted);
        loop {
            let output = tokio::select! {
                biased;
                submitted = &mut submitted => return submitted,
                output = self.outputs.recv() => output,
            };
            match output {
                Some(output) => self.output(output).await,
                None => return Err(AgentClosed),
            }
        }
    }

    async fn record<O: OpPort>(&mut self, agent: &mut O, record: Record) {
        let mut actions = std::mem::take(&mut self.actions);
        self.dialect.decode(record, &self.in_flight, &mut actions);
        for action in actions.drain(..) {
            match action {
                Action::Send(message) => self.send_now(agent, message).await,
                Action::Submit { op, pending } => {
                    let tag = pending.map(|p| self.in_flight.insert(p));
                    if self.submit(agent, tag, op).await.is_err()
                        && let Some(pending) = tag.and_then(|t| self.in_flight.remove(t))
                    {
                        let error = CoreError::internal(AGENT_CLOSED);
                        self.dialect.reply(pending, Err(error), &mut self.scratch);
                        self.flush().await;
                    }
                }
            }
        }
        self.actions = actions;
    }
}

/// Serve `dialect` until input ends (the agent then finishes what it
/// accepted) or `stop` resolves (the agent aborts), and the agent's output
/// has been written. Returns how it ended and whether every message could be sent.
pub async fn serve<D, S, K, O, R, F>(dialect: D, source: S, sink: K, agent: O, outputs: R, stop: F) -> (ServeEnd, bool)
where
    D: Dialect,
    S: RecordSource,
    K: MessageSink,
    O: OpPort,
    R: OutputPort,
    F: Future<Output = ()>,
{
    serve_with(false, dialect, source, sink, agent, outputs, stop).await
}

/// [`serve`], an error for an unreadable message answered in the agent's
/// order like any request (after a barrier op), never before the answer to
/// an earlier request the agent answers at once (`pi serve`, where those
/// answers come from a shared session and take longer).
pub async fn serve_in_order<D, S, K, O, R, F>(
    dialect: D,
    source: S,
    sink: K,
    agent: O,
    outputs: R,
    stop: F,
) -> (ServeEnd, bool)
where
    D: Dialect,
    S: RecordSource,
    K: MessageSink,
    O: OpPort,
    R: OutputPort,
    F: Future<Output = ()>,
{
    serve_with(true, dialect, source, sink, agent, outputs, stop).await
}

async fn serve_with<D, S, K, O, R, F>(
    in_order: bool,
    dialect: D,
    mut source: S,
    sink: K,
    mut agent: O,
    outputs: R,
    stop: F,
) -> (ServeEnd, bool)
where
    D: Dialect,
    S: RecordSource,
    K: MessageSink,
    O: OpPort,
    R: OutputPort,
    F: Future<Output = ()>,
{
    let lines = sink.takes_lines();
    let mut conn = Connection {
        dialect,
        in_flight: InFlight::default(),
        sink,
        outputs,
        output_ok: true,
        scratch: Vec::new(),
        batch: MessageBatch::default(),
        lines,
        replies: Vec::new(),
        actions: Vec::new(),
        in_order: in_order.then(Default::default),
        next_barrier: 0,
    };
    let mut end = ServeEnd::Eof;
    let mut input_open = true;
    tokio::pin!(stop);
    loop {
        // Not biased: a busy output must not starve the input (an `abort`
        // during a long stream is read while the stream goes on).
        tokio::select! {
            _ = &mut stop, if end != ServeEnd::Signalled => {
                end = ServeEnd::Signalled;
                input_open = false;
                let _ = conn.submit(&mut agent, None, Op::Shutdown { abort: true }).await;
            }
            output = conn.outputs.recv() => match output {
                Some(output) => conn.output(output).await,
                None => break,
            },
            record = source.next(), if input_open => {
                // The records read already follow (a burst of piped commands
                // is taken a few dozen records a turn, not one per turn).
                let mut next = Some(record);
                let mut taken = 0;
                while let Some(record) = next.take() {
                    match record {
                        Ok(Some(record)) => conn.record(&mut agent, record).await,
                        Ok(None) | Err(_) => {
                            if let Err(e) = record {
                                tracing::warn!("input error: {e}");
                            }
                            input_open = false;
                            let _ = conn.submit(&mut agent, None, Op::Shutdown { abort: false }).await;
                            break;
                        }
                    }
                    taken += 1;
                    if taken < RECORDS_AT_HAND {
                        next = at_hand(source.next());
                    }
                }
            }
        }
    }
    conn.release_held().await;
    conn.dialect.finish(&mut conn.scratch);
    conn.flush().await;
    (end, conn.output_ok)
}

/// [`serve`] on a byte stream: the one writer thread on `out`, framed as
/// `framing`; ends once everything is written and flushed.
pub async fn serve_stream<D, S, W, R, F>(
    dialect: D,
    source: S,
    framing: Framing,
    out: W,
    agent: AgentHandle,
    outputs: R,
    stop: F,
) -> ServeEnd
where
    D: Dialect,
    S: RecordSource,
    W: std::io::Write + Send + 'static,
    R: OutputPort,
    F: Future<Output = ()>,
{
    let (lines, writer) = spawn_writer(out);
    let (end, output_ok) = serve(dialect, source, FramedSink::new(lines, framing), agent, outputs, stop).await;
    match writer.finish().await {
        Ok(()) if output_ok => end,
        _ => ServeEnd::OutputClosed,
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
