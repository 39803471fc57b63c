//! Every session's events on JetStream: one subject per session
//! ([`super::wire::event_subject`]) in the stream [`EVENT_STREAM`], each
//! message one event in JSON with its `seq` in headers. Any worker replays a
//! session from `afterSeq` out of it, also after the owner died.
//!
//! * Headers: `Pi-Seq` (the number clients see), `Pi-Prev` (the number of the
//!   session's event before it: the first event of a load names the last one
//!   of the previous owner, so a reader sees whether anything is missing),
//!   `Pi-Run` (1 while a prompt's run is going on after this event: a worker
//!   taking over a dead owner's session tells its clients the run was
//!   interrupted), `Nats-Msg-Id` (a re-sent event is stored once; the id
//!   names the owner's fencing epoch, so two owners' events are never
//!   taken for one another).
//! * The server keeps a session's messages in owner order: a new owner first
//!   puts a mark on the session's subject ([`EventLog::mark`]) that expects
//!   the last message it saw, and every event names the session's message
//!   before it (`Nats-Expected-Last-Subject-Sequence`). So an event a stale
//!   owner handed to its connection before a pause, reaching the server
//!   after the new owner's mark, is refused by the server (and the stale
//!   owner learns its lease is gone); one that arrived before the mark is
//!   read by the new owner as the session's last event. Each session has
//!   one message on its way at a time (the sessions' go together).
//! * One task per worker publishes, in order, acknowledged in batches; while
//!   the bus is away it keeps the events (up to [`MAX_BACKLOG`]) and sends
//!   them again once it is back.
//! * Only the owner's events are stored: an event whose session's lease went
//!   to another worker is dropped, and while the lease is in doubt (no
//!   renewal concluded within the TTL: the worker was paused, say) the
//!   publisher waits for the next renewal to tell. So an owner resumed after
//!   a pause past its lease never stores its queued events after the new
//!   owner's.
//! * Retention (documented in the README): at most `--event-retention` events
//!   per session and `--event-max-age`; the oldest go first.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, message::PublishMessage as Publish};
use bytes::Bytes;
use futures::StreamExt;
use pi_core::event::AgentEvent;
use tokio::sync::{Notify, mpsc};

use super::lease::LeaseWatch;
use super::losses::Losses;
use super::wire::{Joiner, PART_HEADER, event_subject, parts};

/// The stream holding every session's events.
pub const EVENT_STREAM: &str = "PI_EVENTS";

/// Events kept while the bus is away, across all sessions of a worker.
pub const MAX_BACKLOG: usize = 200_000;

/// Events published at once before their acknowledgements are awaited.
const BATCH: usize = 256;

/// How often the publisher looks again at a lease in doubt.
const DOUBT_POLL: Duration = Duration::from_millis(50);

/// Room left in a message for its headers.
const HEADER_ROOM: usize = 4096;

const SEQ: &str = "Pi-Seq";
const PREV: &str = "Pi-Prev";
const RUN: &str = "Pi-Run";
/// A new owner's mark (no event): carries the `Pi-Seq`/`Pi-Run` of the event before it.
const MARK: &str = "Pi-Mark";
const MSG_ID: &str = "Nats-Msg-Id";

/// How often a new owner tries to put its mark after the session's last message moved.
const MARK_TRIES: usize = 8;

/// How long the stream keeps events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Most events kept per session.
    pub per_session: i64,
    pub max_age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { per_session: 10_000, max_age: Duration::from_secs(24 * 3600) }
    }
}

/// One event to keep.
#[derive(Debug, Clone)]
pub struct Numbered {
    pub session: String,
    pub seq: u64,
    pub prev: u64,
    pub running: bool,
    pub event: Arc<AgentEvent>,
    /// The lease the session's owner held when it kept the event.
    pub lease: Option<LeaseWatch>,
}

impl Numbered {
    /// The session's lease went to another worker (or was let go while in
    /// doubt): the event may not be the session's any more.
    fn is_stale(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.is_lost() || (l.is_let_go() && l.in_doubt()))
    }

    /// The lease may have expired unnoticed: whether the event is still the
    /// session's is told by the next renewal.
    fn in_doubt(&self) -> bool {
        self.lease.as_ref().is_some_and(|l| l.in_doubt() && !l.is_lost() && !l.is_let_go())
    }
}

/// An event read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub seq: u64,
    pub prev: u64,
    pub running: bool,
    pub event: AgentEvent,
}

/// The last event of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    pub seq: u64,
    /// A run was going on after it.
    pub running: bool,
}

/// A worker's side of the event stream.
pub struct EventLog {
    jetstream: jetstream::Context,
    queue: mpsc::UnboundedSender<Numbered>,
    backlog: AtomicUsize,
    /// How many events of each session are kept but not stored yet (a
    /// session with none has no entry: an idle session costs nothing here).
    pending: Mutex<HashMap<String, usize>>,
    pending_changed: Notify,
    max_payload: usize,
    /// Where a lease found lost by a refused event is told.
    losses: Arc<Losses>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").field("backlog", &self.backlog.load(Ordering::Relaxed)).finish()
    }
}

/// Create the stream (or check it exists) and start the publisher.
pub async fn open(
    jetstream: jetstream::Context,
    retention: Retention,
    max_payload: usize,
    losses: Arc<Losses>,
) -> Result<Arc<EventLog>, String> {
    use async_nats::jetstream::stream;
    if jetstream.get_stream(EVENT_STREAM).await.is_err() {
        let config = stream::Config {
            name: EVENT_STREAM.to_string(),
            description: Some("pi serve: every session's events, by session".to_string()),
            subjects: vec!["pi.ev.>".to_string()],
            max_messages_per_subject: retention.per_session,
            max_age: retention.max_age,
            discard: stream::DiscardPolicy::Old,
            storage: stream::StorageType::File,
            num_replicas: 1,
            duplicate_window: Duration::from_secs(120).min(retention.max_age),
            ..Default::default()
        };
        if let Err(e) = jetstream.create_stream(config).await
            && jetstream.get_stream(EVENT_STREAM).await.is_err()
        {
            return Err(format!("--cluster: cannot create the event stream {EVENT_STREAM}: {e}"));
        }
    }
    let (queue, rx) = mpsc::unbounded_channel();
    let log = Arc::new(EventLog {
        jetstream,
        queue,
        backlog: AtomicUsize::new(0),
        pending: Mutex::new(HashMap::new()),
        pending_changed: Notify::new(),
        max_payload: max_payload.saturating_sub(HEADER_ROOM).max(4096),
        losses,
    });
    tokio::spawn(publish_loop(log.clone(), rx));
    Ok(log)
}

fn header<'a>(headers: Option<&'a HeaderMap>, name: &str) -> Option<&'a str> {
    headers?.get(name).map(|v| v.as_str())
}

fn number(headers: Option<&HeaderMap>, name: &str) -> Option<u64> {
    header(headers, name)?.parse().ok()
}

/// The event a session's last message names: its own, or for a mark the
/// event before it (none: the session had no event).
fn tail_of(headers: &HeaderMap) -> Result<Option<Tail>, String> {
    let headers = Some(headers);
    match number(headers, SEQ) {
        Some(seq) => Ok(Some(Tail { seq, running: header(headers, RUN) == Some("1") })),
        None if header(headers, MARK).is_some() => Ok(None),
        None => Err("an event without Pi-Seq".into()),
    }
}

impl EventLog {
    /// Keep `event` (never waits; dropped with a warning past [`MAX_BACKLOG`]).
    pub fn keep(&self, event: Numbered) {
        if event.is_stale() {
            tracing::debug!(
                "session {}: event {} not kept: the lease went to another worker",
                event.session,
                event.seq
            );
            return;
        }
        if self.backlog.fetch_add(1, Ordering::SeqCst) >= MAX_BACKLOG {
            self.backlog.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(
                "session {}: event {} not kept for replay: {MAX_BACKLOG} events wait for the bus",
                event.session,
                event.seq
            );
            return;
        }
        self.pending_add(&event.session);
        if let Err(unsent) = self.queue.send(event) {
            self.backlog.fetch_sub(1, Ordering::SeqCst);
            self.done_with(&unsent.0.session);
        }
    }

    fn pending_add(&self, session: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match pending.get_mut(session) {
            Some(n) => *n += 1,
            None => drop(pending.insert(session.to_string(), 1)),
        }
    }

    /// One event of `session` is stored or dropped.
    fn done_with(&self, session: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = pending.get_mut(session) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                pending.remove(session);
                if pending.capacity() > 64 && pending.len() < pending.capacity() / 4 {
                    pending.shrink_to_fit();
                }
            }
        }
    }

    /// True while events of `session` wait to be stored.
    fn is_pending(&self, session: &str) -> bool {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains_key(session)
    }

    /// Wait (at most `wait`) until every event of `session` kept so far is
    /// stored (or dropped: its lease went to another worker); true when
    /// none waits any more.
    pub async fn settle(&self, session: &str, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.pending_changed.notified();
            if !self.is_pending(session) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return !self.is_pending(session);
            }
        }
    }

    /// The last stored event of `session`, if any.
    pub async fn tail(&self, session: &str) -> Result<Option<Tail>, String> {
        match self.last_message(&event_subject(session)).await? {
            Some((_, headers)) => tail_of(&headers),
            None => Ok(None),
        }
    }

    /// The stream sequence and headers of the last message on `subject`.
    async fn last_message(&self, subject: &str) -> Result<Option<(u64, HeaderMap)>, String> {
        let stream = self.jetstream.get_stream_no_info(EVENT_STREAM).await.map_err(|e| e.to_string())?;
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(message) => Ok(Some((message.sequence, message.headers))),
            Err(e) if e.kind() == jetstream::stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Take `session`'s events over for a new owner: put a mark on its
    /// subject that expects the last message seen, so whatever a previous
    /// owner still sends after it is refused by the server. Returns the last
    /// event (read again when a late message came first) and the mark's
    /// stream sequence, from which the owner's events follow
    /// ([`super::lease::Lease::chain_from`]).
    pub async fn mark(&self, session: &str) -> Result<(Option<Tail>, u64), String> {
        let subject = event_subject(session);
        for _ in 0..MARK_TRIES {
            let last = self.last_message(&subject).await?;
            let (expected, tail) = match &last {
                Some((sequence, headers)) => (*sequence, tail_of(headers)?),
                None => (0, None),
            };
            let mut headers = HeaderMap::new();
            headers.insert(MARK, "1");
            if let Some(tail) = tail {
                headers.insert(SEQ, tail.seq.to_string());
                headers.insert(RUN, if tail.running { "1" } else { "0" });
            }
            let publish = Publish::build().headers(headers).expected_last_subject_sequence(expected);
            let ack = self.jetstream.send_publish(subject.clone(), publish).await.map_err(|e| e.to_string())?;
            match ack.await {
                Ok(ack) => return Ok((tail, ack.sequence)),
                // A late message of the previous owner came first: read again.
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => continue,
                Err(e) => return Err(e.to_string()),
            }
        }
        Err(format!("session {session}: its events kept moving while this worker took it over"))
    }

    /// The stream sequence of the last message on `subject` when it is the
    /// message with id `id` (one of ours, stored already).
    async fn last_is(&self, subject: &str, id: &str) -> Option<u64> {
        match self.last_message(subject).await {
            Ok(Some((sequence, headers))) if header(Some(&headers), MSG_ID) == Some(id) => Some(sequence),
            _ => None,
        }
    }

    /// The stored events of `session` after `after_seq` (up to `upto` when
    /// given: events not stored yet are waited for, a little), in order.
    ///
    /// The stream's last message is not always the session's latest event:
    /// a stale owner (paused past its lease) may store its last events after
    /// the new owner's. With `upto`, the events read are what is waited on.
    pub async fn after(&self, session: &str, after_seq: u64, upto: Option<u64>) -> Result<Vec<Stored>, String> {
        let Some(upto) = upto else {
            match self.tail(session).await? {
                Some(t) if t.seq > after_seq => {}
                _ => return Ok(Vec::new()),
            }
            let mut events = self.read_within(session).await?;
            events.retain(|e| e.seq > after_seq);
            return Ok(events);
        };
        let mut events = self.read_within(session).await?;
        // The owner may not have had its last events acknowledged yet.
        for _ in 0..10 {
            if events.last().is_some_and(|e| e.seq >= upto) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            events = self.read_within(session).await?;
        }
        events.retain(|e| e.seq > after_seq && e.seq <= upto);
        Ok(events)
    }

    /// [`EventLog::read_subject`], within 30 s.
    async fn read_within(&self, session: &str) -> Result<Vec<Stored>, String> {
        let read = tokio::time::timeout(Duration::from_secs(30), self.read_subject(session)).await;
        read.map_err(|_| format!("session {session}: reading its events took over 30 s"))?
    }

    /// Every stored event of `session`, in `seq` order.
    async fn read_subject(&self, session: &str) -> Result<Vec<Stored>, String> {
        use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
        let subject = event_subject(session);
        let stream = self.jetstream.get_stream_no_info(EVENT_STREAM).await.map_err(|e| e.to_string())?;
        let last = match stream.get_last_raw_message_by_subject(&subject).await {
            Ok(message) => message.sequence,
            Err(e) if e.kind() == jetstream::stream::LastRawMessageErrorKind::NoMessageFound => return Ok(Vec::new()),
            Err(e) => return Err(e.to_string()),
        };
        let config =
            OrderedConfig { filter_subject: subject, deliver_policy: DeliverPolicy::All, ..Default::default() };
        let consumer = stream.create_consumer(config).await.map_err(|e| e.to_string())?;
        let mut messages = consumer.messages().await.map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        let mut joiner = Joiner::default();
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| e.to_string())?;
            let sequence = message.info().map(|i| i.stream_sequence).unwrap_or(last);
            let headers = message.headers.as_ref();
            if header(headers, MARK).is_some() {
                if sequence >= last {
                    break;
                }
                continue;
            }
            if let Some(whole) = joiner.take(header(headers, PART_HEADER), &message.payload)? {
                let (Some(seq), Some(prev)) = (number(headers, SEQ), number(headers, PREV)) else {
                    return Err("an event without Pi-Seq".into());
                };
                let event = serde_json::from_slice(&whole).map_err(|e| format!("event {seq}: {e}"))?;
                events.push(Stored { seq, prev, running: header(headers, RUN) == Some("1"), event });
            }
            if sequence >= last {
                break;
            }
        }
        // A re-sent event is stored once (Nats-Msg-Id), but may be stored after a later one.
        events.sort_by_key(|e| e.seq);
        events.dedup_by_key(|e| e.seq);
        Ok(events)
    }

    /// The messages of `event` (more than one when it is split), each with its id.
    fn encode(&self, event: &Numbered) -> Result<Vec<(String, Publish)>, String> {
        let payload = Bytes::from(serde_json::to_vec(&*event.event).map_err(|e| e.to_string())?);
        let split = parts(payload, self.max_payload);
        let n = split.len();
        // One owner's re-sent message is stored once; another owner's event
        // with the same number is not taken for it (it is checked, and refused).
        let id = match &event.lease {
            Some(lease) => format!("{}:{}:e{}", super::wire::token(&event.session), event.seq, lease.epoch()),
            None => format!("{}:{}", super::wire::token(&event.session), event.seq),
        };
        Ok(split
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let mut headers = HeaderMap::new();
                headers.insert(SEQ, event.seq.to_string());
                headers.insert(PREV, event.prev.to_string());
                headers.insert(RUN, if event.running { "1" } else { "0" });
                let id = if n > 1 {
                    headers.insert(PART_HEADER, format!("{}/{n}", i + 1));
                    format!("{id}:{}", i + 1)
                } else {
                    id.clone()
                };
                let publish = Publish::build().payload(part).headers(headers).message_id(&id);
                (id, publish)
            })
            .collect())
    }
}

/// One event on its way: its subject, its messages (id, message), and how
/// many of them are stored.
struct Sending {
    event: Numbered,
    subject: String,
    messages: Vec<(String, Publish)>,
    stored: usize,
}

impl Sending {
    /// Which of the batch's events follow each other on the server: those
    /// of one owner (its lease) of one session.
    fn chain(&self) -> (usize, &str) {
        (self.event.lease.as_ref().map_or(0, LeaseWatch::key), &self.event.session)
    }

    /// Its next message, naming the session's message before it (when the
    /// session is leased: events without a lease are not checked).
    fn next_message(&self) -> Option<Publish> {
        let (_, publish) = self.messages.get(self.stored)?;
        Some(match &self.event.lease {
            Some(lease) => publish.clone().expected_last_subject_sequence(lease.stored()),
            None => publish.clone(),
        })
    }

    /// Its message went in at stream sequence `sequence`.
    fn stored_at(&mut self, sequence: u64) {
        if let Some(lease) = &self.event.lease {
            lease.set_stored(sequence);
        }
        self.stored += 1;
    }
}

async fn publish_loop(log: Arc<EventLog>, mut queue: mpsc::UnboundedReceiver<Numbered>) {
    let mut batch: VecDeque<Sending> = VecDeque::new();
    loop {
        if batch.is_empty() {
            match queue.recv().await {
                Some(event) => push(&log, &mut batch, event),
                None => return,
            }
        }
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(event) => push(&log, &mut batch, event),
                Err(_) => break,
            }
        }
        send_batch(&log, &mut batch).await;
    }
}

fn push(log: &EventLog, batch: &mut VecDeque<Sending>, event: Numbered) {
    log.backlog.fetch_sub(1, Ordering::SeqCst);
    match log.encode(&event) {
        Ok(messages) => {
            let subject = event_subject(&event.session);
            batch.push_back(Sending { event, subject, messages, stored: 0 });
        }
        Err(e) => {
            tracing::warn!("session {}: event {} cannot be kept: {e}", event.session, event.seq);
            log.done_with(&event.session);
        }
    }
}

/// Make the batch's events safe to send: wait while a lease is in doubt,
/// then drop the events whose lease went to another worker.
async fn only_owned(log: &EventLog, batch: &mut VecDeque<Sending>) {
    let mut waited = false;
    while batch.iter().any(|s| s.event.in_doubt()) {
        if !waited {
            tracing::info!("event stream: a session's lease is in doubt; its events wait for the next renewal");
            waited = true;
        }
        tokio::time::sleep(DOUBT_POLL).await;
    }
    let before = batch.len();
    batch.retain(|s| {
        let stale = s.event.is_stale();
        if stale {
            log.done_with(&s.event.session);
        }
        !stale
    });
    if batch.len() < before {
        tracing::warn!(
            "event stream: {} events dropped: their session's lease went to another worker",
            before - batch.len()
        );
        log.pending_changed.notify_waiters();
    }
}

/// Publish the batch in rounds: each round sends the next message of every
/// session in the batch at once, each naming the session's message before
/// it, then awaits their acknowledgements. A message the server refuses
/// (the session has a message its owner did not write: another worker took
/// it over) tells the lease, and the session's events are dropped; one that
/// failed on the way is sent again (the same message: stored once).
async fn send_batch(log: &EventLog, batch: &mut VecDeque<Sending>) {
    let mut delay = Duration::from_millis(100);
    loop {
        only_owned(log, batch).await;
        if batch.is_empty() {
            return;
        }
        let heads: Vec<usize> = {
            let mut chains = HashSet::new();
            (0..batch.len()).filter(|&at| chains.insert(batch[at].chain())).collect()
        };
        let mut acks = Vec::with_capacity(heads.len());
        let mut failed = None;
        for at in heads {
            let Some(publish) = batch[at].next_message() else { continue };
            match log.jetstream.send_publish(batch[at].subject.clone(), publish).await {
                Ok(ack) => acks.push((at, ack)),
                Err(e) => {
                    failed = Some(e.to_string());
                    break;
                }
            }
        }
        for (at, ack) in acks {
            match ack.await {
                Ok(ack) => batch[at].stored_at(ack.sequence),
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    let sending = &mut batch[at];
                    // Sent again after its answer was lost: stored already.
                    let (id, _) = &sending.messages[sending.stored];
                    match log.last_is(&sending.subject, id).await {
                        Some(sequence) => sending.stored_at(sequence),
                        None => match &sending.event.lease {
                            Some(lease) => lease.refused(&log.losses),
                            None => failed = Some(e.to_string()),
                        },
                    }
                }
                Err(e) => failed = Some(e.to_string()),
            }
        }
        let before = batch.len();
        batch.retain(|sending| {
            let done = sending.stored == sending.messages.len();
            if done {
                log.done_with(&sending.event.session);
            }
            !done
        });
        if batch.len() < before {
            log.pending_changed.notify_waiters();
        }
        if let Some(e) = failed {
            tracing::warn!("event stream: {e}; {} events wait, sending again in {delay:?}", batch.len());
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}
