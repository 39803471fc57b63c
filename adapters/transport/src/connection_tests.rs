//! The loop maps the outputs at hand together: the messages come out
//! exactly as mapping one output at a time gives them (events and replies
//! interleaved, more at hand than one turn takes).

use std::sync::{Arc, Mutex};

use pi_core::event::AssistantStreamEvent;

use super::*;

/// A request per record (named by it); an event shows as its text.
struct Labels;

impl Dialect for Labels {
    type Pending = String;

    fn decode(&mut self, record: Record, _: &InFlight<String>, actions: &mut Vec<Action<String>>) {
        let name = record.unwrap_or_default();
        actions.push(Action::Submit { op: Op::Barrier, pending: Some(name) });
    }

    fn event(&mut self, event: AgentEvent, _: &InFlight<String>, out: &mut Vec<Vec<u8>>) {
        if let AgentEvent::MessageUpdate { event: AssistantStreamEvent::TextDelta { delta, .. }, .. } = event {
            out.push(delta.into_bytes());
        }
    }

    fn reply(&mut self, pending: String, _: Result<Reply, CoreError>, out: &mut Vec<Vec<u8>>) {
        out.push(format!("reply to {pending}").into_bytes());
    }
}

/// Records given up front.
struct Records(std::vec::IntoIter<String>);

impl RecordSource for Records {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        Ok(self.0.next().map(Ok))
    }
}

/// Answers each op at once with a run of events around its reply, all
/// queued before the loop reads any of them; notes the messages they must give.
/// With `batched`, its events go out together, as `spawn_batched`'s do.
struct Agent {
    outputs: Option<mpsc::Sender<Output>>,
    batched: Option<mpsc::Sender<Outputs>>,
    /// Events not yet handed over (batched).
    held: Vec<AgentEvent>,
    expected: Vec<String>,
    /// Requests submitted so far (they come in record order).
    requests: usize,
}

impl Agent {
    fn new(outputs: Option<mpsc::Sender<Output>>, batched: Option<mpsc::Sender<Outputs>>) -> Agent {
        Agent { outputs, batched, held: Vec::new(), expected: Vec::new(), requests: 0 }
    }

    fn event(&mut self, text: String) {
        let event = AgentEvent::MessageUpdate {
            event: AssistantStreamEvent::TextDelta { content_index: 0, delta: text.clone() },
            usage: Default::default(),
        };
        if let Some(tx) = &self.outputs {
            tx.try_send(Output::Event(event)).unwrap();
        } else if self.batched.is_some() {
            self.held.push(event);
        }
        self.expected.push(text);
    }

    /// Hand the held events over (in lists of up to 100, an empty list among them).
    fn hand_over(&mut self) {
        let Some(tx) = &self.batched else { return };
        let held = std::mem::take(&mut self.held);
        for list in held.chunks(100) {
            tx.try_send(Outputs::Events(list.to_vec())).unwrap();
        }
        tx.try_send(Outputs::Events(Vec::new())).unwrap();
    }

    fn reply(&mut self, tag: RequestTag) {
        self.hand_over();
        let reply = Output::Reply { tag, result: Ok(Reply::Ack) };
        if let Some(tx) = &self.outputs {
            tx.try_send(reply).unwrap();
        } else if let Some(tx) = &self.batched {
            tx.try_send(Outputs::One(reply)).unwrap();
        }
    }
}

impl OpPort for &mut Agent {
    async fn submit(&mut self, tag: Option<RequestTag>, op: Op) -> Result<(), AgentClosed> {
        let Some(tag) = tag else {
            // `Shutdown` at the end of input: the output ends.
            assert!(matches!(op, Op::Shutdown { .. }));
            self.outputs = None;
            self.batched = None;
            return Ok(());
        };
        let n = self.expected.len();
        // Several turns' worth, with the reply in the middle and replies back to back.
        for i in 0..(300 + n % 7) {
            self.event(format!("{tag}: before {i}"));
        }
        self.reply(tag);
        self.expected.push(format!("reply to request {}", self.requests));
        self.requests += 1;
        for i in 0..(tag % 3) {
            self.event(format!("{tag}: after {i}"));
        }
        self.hand_over();
        Ok(())
    }
}

/// Keeps what it is sent; with `lines`, it takes batches (as a line-framed stream does).
#[derive(Clone, Default)]
struct Kept {
    sent: Arc<Mutex<Vec<String>>>,
    lines: bool,
    batches: Arc<Mutex<usize>>,
}

impl MessageSink for Kept {
    async fn send(&self, body: Vec<u8>) -> bool {
        self.sent.lock().unwrap().push(String::from_utf8(body).unwrap());
        true
    }

    fn takes_lines(&self) -> bool {
        self.lines
    }

    async fn send_batch(&self, batch: &mut MessageBatch) -> bool {
        *self.batches.lock().unwrap() += 1;
        let lines = String::from_utf8(batch.lines().to_vec()).unwrap();
        assert!(lines.ends_with('\n'));
        self.sent.lock().unwrap().extend(lines[..lines.len() - 1].split('\n').map(str::to_string));
        batch.clear();
        true
    }
}

#[tokio::test]
async fn outputs_mapped_together_come_out_in_their_order() {
    for lines in [false, true] {
        let (tx, rx) = mpsc::channel(100_000);
        let mut agent = Agent::new(Some(tx), None);
        let records = Records((0..20).map(|i| format!("request {i}")).collect::<Vec<_>>().into_iter());
        let kept = Kept { lines, ..Kept::default() };
        let (end, ok) = serve(Labels, records, kept.clone(), &mut agent, rx, std::future::pending()).await;
        assert_eq!((end, ok), (ServeEnd::Eof, true));
        let sent = kept.sent.lock().unwrap().clone();
        assert!(agent.expected.len() > 6_000);
        assert_eq!(sent, agent.expected, "lines: {lines}");
        // With lines, the events of a turn go out as one batch (at most 256 a turn).
        let batches = *kept.batches.lock().unwrap();
        if lines {
            assert!(batches > 6_000 / 256 && batches < agent.expected.len() / 10, "{batches} batches");
        } else {
            assert_eq!(batches, 0);
        }
    }
}

#[tokio::test]
async fn events_handed_over_together_come_out_as_one_by_one() {
    for lines in [false, true] {
        let (tx, rx) = mpsc::channel(100_000);
        let mut agent = Agent::new(None, Some(tx));
        let records = Records((0..20).map(|i| format!("request {i}")).collect::<Vec<_>>().into_iter());
        let kept = Kept { lines, ..Kept::default() };
        let outputs = BatchedOutputs::new(rx);
        let (end, ok) = serve(Labels, records, kept.clone(), &mut agent, outputs, std::future::pending()).await;
        assert_eq!((end, ok), (ServeEnd::Eof, true));
        assert!(agent.expected.len() > 6_000);
        assert_eq!(*kept.sent.lock().unwrap(), agent.expected, "lines: {lines}");
    }
}

/// Records that come in bursts: every fifth read waits (once) before its
/// record, as a pipe's reader waits for the writer.
struct Bursts {
    records: std::vec::IntoIter<String>,
    reads: usize,
    waited: bool,
}

impl RecordSource for Bursts {
    async fn next(&mut self) -> std::io::Result<Option<Record>> {
        self.reads += 1;
        if self.reads.is_multiple_of(5) && !self.waited {
            // The wait is noted first: a read dropped while it waits (the
            // loop's look at what is at hand) does not wait again.
            self.waited = true;
            tokio::task::yield_now().await;
        }
        self.waited = false;
        Ok(self.records.next().map(Ok))
    }
}

#[tokio::test]
async fn records_at_hand_and_records_waited_for_are_answered_in_order() {
    for lines in [false, true] {
        let (tx, rx) = mpsc::channel(1_000_000);
        let mut agent = Agent::new(Some(tx), None);
        // More records than one turn takes, with waits among them.
        let names: Vec<String> = (0..300).map(|i| format!("request {i}")).collect();
        let records = Bursts { records: names.into_iter(), reads: 0, waited: false };
        let kept = Kept { lines, ..Kept::default() };
        let (end, ok) = serve(Labels, records, kept.clone(), &mut agent, rx, std::future::pending()).await;
        assert_eq!((end, ok), (ServeEnd::Eof, true));
        assert_eq!(agent.requests, 300);
        assert_eq!(*kept.sent.lock().unwrap(), agent.expected, "lines: {lines}");
    }
}
