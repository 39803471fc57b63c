//! The one writer that owns the output stream: a dedicated thread that writes
//! whole lines in the order they were queued and flushes whenever the queue
//! runs dry.
//!
//! Producers queue their bytes (a batch's buffer as it is, small lines
//! appended to the last buffer) and only wake the thread when it is idle, so
//! a fast stream of small lines costs one write (`writev`) per batch instead
//! of one thread hand-off per line, and no copy into the queue. When the client stops reading, the buffer
//! fills up to its cap and producers wait (backpressure) instead of growing
//! memory without bound.
//!
//! Batches: once the async runtime calls [`runtime_idle`] (its
//! `on_thread_park` hook: every ready task has run), a woken writer waits for
//! that moment, or for [`BATCH_BYTES`] of output, or at most [`GATHER_MAX`],
//! before it writes, so the lines of one burst of work (the deltas of one
//! network read, a piped burst of commands) go out in one `write`.
//!
//! A [`StreamedMessage`] (a big reply) takes its place in the queue and is
//! serialised by the writer thread straight into the output, in pieces of
//! [`PIECE_BYTES`]: it is never held whole, and no other line is written
//! inside it.
//!
//! [`flushed`] resolves once every writer has written and flushed all it
//! was given (MCP servers wait for it before they start: the answer that let
//! them start is then with the client).

use std::collections::VecDeque;
use std::io::{IoSlice, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use crate::batch::MessageBatch;
use crate::streamed::{PIECE_BYTES, StreamedMessage};

/// Bytes queued before producers wait for the writer.
pub const QUEUE_CAP_BYTES: usize = 4 * 1024 * 1024;

/// Output that is written at once, without waiting for the runtime to go idle.
pub const BATCH_BYTES: usize = 64 * 1024;

/// The longest a batch waits for the runtime to go idle (a task that keeps
/// the runtime busy must not hold a line back longer than this).
pub const GATHER_MAX: Duration = Duration::from_millis(2);

/// Whether [`runtime_idle`] is installed (else writers never wait to gather).
static IDLE_HOOK: AtomicBool = AtomicBool::new(false);

/// The writers running in this process, told when the runtime goes idle.
static WRITERS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Woken when a writer has flushed all it was given (only while a
/// [`flushed`] waits: the writer's loop does not pay for it otherwise).
static FLUSHED: Notify = Notify::const_new();
static FLUSH_WAITERS: AtomicUsize = AtomicUsize::new(0);

/// Resolves once every writer of the process has written and flushed all
/// that was queued to it (at once when nothing is queued, or when no writer
/// runs; a broken output counts as flushed: nothing more is written to it).
pub async fn flushed() {
    struct Waiting;
    impl Drop for Waiting {
        fn drop(&mut self) {
            FLUSH_WAITERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    FLUSH_WAITERS.fetch_add(1, Ordering::SeqCst);
    let _waiting = Waiting;
    loop {
        let notified = FLUSHED.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if all_flushed() {
            return;
        }
        notified.await;
    }
}

fn all_flushed() -> bool {
    let writers = WRITERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    writers.iter().filter_map(Weak::upgrade).all(|shared| {
        let st = shared.lock();
        st.broken || (st.is_empty() && shared.flushed.load(Ordering::SeqCst) == st.taken)
    })
}

/// Tell [`flushed`] waiters that a writer flushed (or stopped).
fn tell_flushed() {
    if FLUSH_WAITERS.load(Ordering::SeqCst) > 0 {
        FLUSHED.notify_waiters();
    }
}

/// The async runtime's `on_thread_park` hook: every ready task has run, so
/// the lines queued so far are a whole batch; writers waiting for one write it now.
pub fn runtime_idle() {
    IDLE_HOOK.store(true, Ordering::Relaxed);
    let mut writers = WRITERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    writers.retain(|writer| match writer.upgrade() {
        Some(shared) => {
            let mut st = shared.lock();
            if !st.is_empty() {
                st.batch_ready = true;
                if st.gathering {
                    shared.wake_writer.notify_one();
                }
            }
            true
        }
        None => false,
    });
}

#[derive(Default)]
struct State {
    /// A message to serialise before `buf`. It counts as the whole
    /// [`QUEUE_CAP_BYTES`]: it is admitted into an otherwise empty queue, as
    /// a whole big reply always was.
    streamed: Option<StreamedMessage>,
    /// Bytes queued (after `streamed`), in order: a batch's buffer is queued
    /// as it is (not copied into another), small records are appended to the
    /// last buffer. None is empty.
    bufs: VecDeque<Vec<u8>>,
    /// How many bytes `bufs` holds.
    bytes: usize,
    /// Emptied buffers the writer gave back, for the next records and batches.
    spares: Vec<Vec<u8>>,
    writer_waiting: bool,
    /// The writer has data and waits for the batch to be complete.
    gathering: bool,
    /// The runtime went idle since the writer last took the buffer.
    batch_ready: bool,
    senders: usize,
    /// How many times the writer took the queue's bytes (see `Shared::flushed`).
    taken: u64,
    /// The output failed (e.g. the client closed it); nothing more is written.
    broken: bool,
}

struct Shared {
    state: Mutex<State>,
    wake_writer: Condvar,
    space: Notify,
    /// The last `State::taken` whose bytes are written and flushed.
    flushed: AtomicU64,
}

impl State {
    fn is_empty(&self) -> bool {
        self.bufs.is_empty() && self.streamed.is_none()
    }

    fn queued(&self) -> usize {
        self.bytes + if self.streamed.is_some() { QUEUE_CAP_BYTES } else { 0 }
    }

    /// Whether `bytes` more may be queued now: into an empty queue always,
    /// else while the queue stays within [`QUEUE_CAP_BYTES`].
    fn has_room(&self, bytes: usize) -> bool {
        self.is_empty() || self.queued() + bytes <= QUEUE_CAP_BYTES
    }

    /// An emptied buffer for the queue's next bytes.
    fn spare(&mut self) -> Vec<u8> {
        self.spares.pop().unwrap_or_default()
    }

    /// Queue `bytes` (and a `\n`) if there is room: into an empty queue
    /// always, else while the queue stays within [`QUEUE_CAP_BYTES`].
    fn admit(&mut self, mut bytes: Vec<u8>, newline: bool) -> Admit {
        if self.broken {
            return Admit::Broken;
        }
        if !self.has_room(bytes.len()) {
            return Admit::Full(bytes);
        }
        let need = bytes.len() + usize::from(newline);
        if need == 0 {
            return Admit::Queued;
        }
        self.bytes += need;
        if bytes.len() > APPEND_MAX {
            // A big record is queued as it is, not copied (a 100 MB
            // `get_messages` reply must not be held twice).
            if newline {
                bytes.push(b'\n');
            }
            self.bufs.push_back(bytes);
            return Admit::Queued;
        }
        // A small one joins the last buffer while it has room (a new
        // buffer then, so that nothing queued is moved by a regrowth).
        if self.bufs.back().is_none_or(|last| last.capacity() - last.len() < need) {
            let mut spare = self.spare();
            spare.reserve(BATCH_BYTES.max(need));
            self.bufs.push_back(spare);
        }
        if let Some(last) = self.bufs.back_mut() {
            last.extend_from_slice(&bytes);
            if newline {
                last.push(b'\n');
            }
        }
        Admit::Queued
    }
}

/// The largest record copied into the queue's last buffer; bigger ones are
/// queued as they are.
const APPEND_MAX: usize = 4 * 1024;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// After records were queued: wake the writer if it sleeps, or if it
    /// gathers a batch that is now big enough.
    fn wake_if_needed(&self, st: &State) {
        if st.writer_waiting || (st.gathering && st.queued() >= BATCH_BYTES) {
            self.wake_writer.notify_one();
        }
    }
}

/// What [`State::admit`] did with a record.
enum Admit {
    Queued,
    /// The output failed: nothing more is queued.
    Broken,
    /// No room now: the record is handed back.
    Full(Vec<u8>),
}

/// A handle for queueing output records.
pub struct LineSender {
    shared: Arc<Shared>,
}

impl Clone for LineSender {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        LineSender { shared: self.shared.clone() }
    }
}

impl Drop for LineSender {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.senders = st.senders.saturating_sub(1);
        if st.senders == 0 {
            self.shared.wake_writer.notify_one();
        }
    }
}

impl LineSender {
    /// Queue one record; a trailing `\n` is added. Returns false once the output is broken.
    pub async fn send(&self, line: Vec<u8>) -> bool {
        self.push(line, true).await
    }

    /// Queue bytes exactly as given (for header-framed output).
    pub async fn send_raw(&self, bytes: Vec<u8>) -> bool {
        self.push(bytes, false).await
    }

    /// Queue several records, in order, each with a trailing `\n`, as many
    /// [`LineSender::send`]s would (taking the lock once while they fit).
    /// `lines` is left empty. Returns false once the output is broken (the
    /// records not queued by then are dropped).
    pub async fn send_all(&self, lines: &mut Vec<Vec<u8>>) -> bool {
        let mut pending = lines.drain(..);
        loop {
            // Under one lock while they fit, with no wait armed.
            let refused = {
                let mut st = self.shared.lock();
                let mut refused = None;
                for line in pending.by_ref() {
                    match st.admit(line, true) {
                        Admit::Queued => {}
                        Admit::Broken => return false,
                        Admit::Full(back) => {
                            refused = Some(back);
                            break;
                        }
                    }
                }
                self.shared.wake_if_needed(&st);
                refused
            };
            match refused {
                None => return true,
                Some(line) => {
                    if !self.push(line, true).await {
                        return false;
                    }
                }
            }
        }
    }

    /// Queue the lines of `batch` (each message with its `\n`), as
    /// [`LineSender::send_all`] would queue its messages; `batch` is left
    /// empty. Into an empty queue the batch's buffer is swapped for the
    /// queue's (no copy, and both keep their room for the next batch).
    /// Returns false once the output is broken.
    pub async fn send_batch(&self, batch: &mut MessageBatch) -> bool {
        if batch.is_empty() {
            return true;
        }
        {
            let mut st = self.shared.lock();
            if st.broken {
                batch.clear();
                return false;
            }
            // Room as `State::admit` sees it: an empty queue, or within the cap.
            if st.has_room(batch.lines().len()) {
                // The batch's buffer joins the queue as it is (not copied),
                // and the batch gets an emptied one for its next messages.
                let mut bytes = st.spare();
                batch.hand_over(|lines| std::mem::swap(lines, &mut bytes));
                st.bytes += bytes.len();
                st.bufs.push_back(bytes);
                self.shared.wake_if_needed(&st);
                return true;
            }
        }
        // No room now: queued as one record once there is.
        let bytes = batch.lines().to_vec();
        batch.clear();
        self.push(bytes, false).await
    }

    async fn push(&self, mut bytes: Vec<u8>, newline: bool) -> bool {
        loop {
            // First without arming a wait: most often there is room.
            match self.try_push(bytes, newline) {
                Ok(queued) => return queued,
                Err(back) => bytes = back,
            }
            let space = self.shared.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            // Room may have been made before the wait was armed.
            match self.try_push(bytes, newline) {
                Ok(queued) => return queued,
                Err(back) => bytes = back,
            }
            space.await;
        }
    }

    /// Queue a record now if there is room: whether the output still
    /// works, or the record back when the queue is full.
    fn try_push(&self, bytes: Vec<u8>, newline: bool) -> Result<bool, Vec<u8>> {
        let mut st = self.shared.lock();
        match st.admit(bytes, newline) {
            Admit::Queued => {
                self.shared.wake_if_needed(&st);
                Ok(true)
            }
            Admit::Broken => Ok(false),
            Admit::Full(back) => Err(back),
        }
    }

    /// Queue a message the writer serialises as it writes it (a trailing
    /// `\n` is added); it waits for a queue with nothing else in it. Returns
    /// false once the output is broken.
    pub async fn send_streamed(&self, message: StreamedMessage) -> bool {
        loop {
            let space = self.shared.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            {
                let mut st = self.shared.lock();
                if st.broken {
                    return false;
                }
                if st.is_empty() {
                    st.streamed = Some(message);
                    if st.writer_waiting || st.gathering {
                        self.shared.wake_writer.notify_one();
                    }
                    return true;
                }
            }
            space.await;
        }
    }
}

/// Waits for the writer thread to finish.
pub struct WriterHandle {
    done: oneshot::Receiver<std::io::Result<()>>,
}

impl WriterHandle {
    /// Resolves once every sender is gone and everything was written and
    /// flushed, or the output failed.
    pub async fn finish(self) -> std::io::Result<()> {
        self.done.await.unwrap_or_else(|_| Err(std::io::Error::other("the writer thread stopped")))
    }
}

/// Start the writer thread on `out`.
pub fn spawn_writer<W>(out: W) -> (LineSender, WriterHandle)
where
    W: Write + Send + 'static,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State { senders: 1, ..State::default() }),
        wake_writer: Condvar::new(),
        space: Notify::new(),
        flushed: AtomicU64::new(0),
    });
    let (done_tx, done_rx) = oneshot::channel();
    let thread_shared = shared.clone();
    let spawned = std::thread::Builder::new().name("pi-stdout".into()).spawn(move || {
        let result = write_loop(&thread_shared, out);
        if result.is_err() {
            thread_shared.lock().broken = true;
        }
        thread_shared.space.notify_waiters();
        tell_flushed();
        let _ = done_tx.send(result);
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the output thread: {e}");
        shared.lock().broken = true;
    }
    WRITERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Arc::downgrade(&shared));
    (LineSender { shared }, WriterHandle { done: done_rx })
}

/// The largest emptied buffer the writer gives back for the next batch
/// (bigger ones, such as a whole large reply queued as it was, are let go).
const SPARE_MAX: usize = 4 * BATCH_BYTES;

/// Emptied buffers kept for the producers.
const SPARES: usize = 8;

/// Most buffers given to one `write_vectored` (Linux's `IOV_MAX` is 1024).
const SLICES_MAX: usize = 1024;

fn write_loop<W: Write>(shared: &Shared, mut out: W) -> std::io::Result<()> {
    // The queue's buffers taken last, written and emptied: they go back to
    // the producers, so a stream of lines does not grow new buffers from
    // nothing each batch.
    let mut taken_bufs: VecDeque<Vec<u8>> = VecDeque::new();
    loop {
        let chunk = {
            let mut st = shared.lock();
            for mut buf in taken_bufs.drain(..) {
                if st.spares.len() < SPARES && buf.capacity() <= SPARE_MAX {
                    buf.clear();
                    st.spares.push(buf);
                }
            }
            while st.is_empty() && st.senders > 0 {
                st.writer_waiting = true;
                st = shared.wake_writer.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
                st.writer_waiting = false;
            }
            if st.is_empty() {
                return out.flush();
            }
            if IDLE_HOOK.load(Ordering::Relaxed) {
                st.gathering = true;
                st = shared
                    .wake_writer
                    .wait_timeout_while(st, GATHER_MAX, |st| {
                        !st.batch_ready && st.queued() < BATCH_BYTES && st.senders > 0
                    })
                    .map(|(st, _)| st)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0);
                st.gathering = false;
            }
            st.batch_ready = false;
            st.taken += 1;
            st.bytes = 0;
            std::mem::swap(&mut st.bufs, &mut taken_bufs);
            (st.taken, st.streamed.take())
        };
        shared.space.notify_waiters();
        let (taken, streamed) = chunk;
        if let Some(message) = streamed {
            write_streamed(&message, &mut out)?;
        }
        write_all_bufs(&mut out, &taken_bufs)?;
        if shared.lock().is_empty() {
            out.flush()?;
            // Bytes queued since are not taken yet: `flushed` sees them in the queue.
            shared.flushed.store(taken, Ordering::SeqCst);
            tell_flushed();
        }
    }
}

/// Write every byte of `bufs`, in order, with as few writes as the output
/// takes (`writev` for a file or a pipe).
fn write_all_bufs<W: Write>(out: &mut W, bufs: &VecDeque<Vec<u8>>) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = bufs.iter().map(|buf| IoSlice::new(buf)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let end = rest.len().min(SLICES_MAX);
        match out.write_vectored(&rest[..end]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Write `message` and its `\n` through a buffer of [`PIECE_BYTES`]. A body
/// that fails to serialise (the output still works) is logged and its line
/// ended, so the lines after it stay whole.
fn write_streamed<W: Write>(message: &StreamedMessage, out: &mut W) -> std::io::Result<()> {
    let mut pieces = std::io::BufWriter::with_capacity(PIECE_BYTES, out);
    let written = message.write_to(&mut pieces);
    pieces.write_all(b"\n")?;
    pieces.flush()?;
    if let Err(e) = written {
        tracing::error!("cannot serialize an output message: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order() {
        let sink = Sink::default();
        let (sender, handle) = spawn_writer(sink.clone());
        let other = sender.clone();
        for i in 0..10_000 {
            let s = if i % 2 == 0 { &sender } else { &other };
            assert!(s.send(format!("{{\"n\":{i}}}").into_bytes()).await);
        }
        drop(sender);
        drop(other);
        handle.finish().await.unwrap();
        let all = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!(lines.len(), 10_000);
        assert_eq!(lines[9_999], "{\"n\":9999}");
    }

    #[tokio::test]
    async fn lines_sent_together_arrive_as_if_sent_one_by_one() {
        let sink = Sink::default();
        let (sender, handle) = spawn_writer(sink.clone());
        let mut expected = Vec::new();
        let mut n = 0;
        // Small lines, then a batch bigger than the queue's cap (it waits for room part way).
        for (lines, size) in [(1_000, 10), (3, 0), (60, 100_000), (1_000, 50)] {
            let mut batch = Vec::new();
            for _ in 0..lines {
                let line = format!("{n}:{}", "x".repeat(size)).into_bytes();
                expected.extend_from_slice(&line);
                expected.push(b'\n');
                batch.push(line);
                n += 1;
            }
            assert!(sender.send_all(&mut batch).await);
            assert!(batch.is_empty());
            assert!(sender.send(b"one".to_vec()).await);
            expected.extend_from_slice(b"one\n");
        }
        drop(sender);
        handle.finish().await.unwrap();
        assert_eq!(*sink.0.lock().unwrap(), expected);
    }

    #[tokio::test]
    async fn batches_arrive_as_their_lines_sent_one_by_one() {
        let sink = Sink::default();
        let (sender, handle) = spawn_writer(sink.clone());
        let mut expected = Vec::new();
        let mut batch = MessageBatch::default();
        let mut n = 0;
        // Small messages, an empty batch, then batches bigger than the queue's cap (they wait for room).
        for (messages, size) in [(1_000, 10), (0, 0), (60, 100_000), (1_000, 50), (50, 100_000)] {
            for _ in 0..messages {
                let message = format!("{n}:{}", "x".repeat(size)).into_bytes();
                expected.extend_from_slice(&message);
                expected.push(b'\n');
                batch.push(&message);
                n += 1;
            }
            assert!(sender.send_batch(&mut batch).await);
            assert!(batch.is_empty());
            assert!(sender.send(b"one".to_vec()).await);
            expected.extend_from_slice(b"one\n");
        }
        drop(sender);
        handle.finish().await.unwrap();
        assert_eq!(*sink.0.lock().unwrap(), expected);
    }

    /// Counts the writes it gets.
    #[derive(Clone, Default)]
    struct Counting(Arc<Mutex<(usize, Vec<u8>)>>);

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut seen = self.0.lock().unwrap();
            seen.0 += 1;
            seen.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_burst_of_lines_is_gathered_into_few_writes() {
        let sink = Counting::default();
        let (sender, handle) = spawn_writer(sink.clone());
        for round in 0..10 {
            for i in 0..1_000 {
                assert!(sender.send(format!("{{\"round\":{round},\"n\":{i}}}").into_bytes()).await);
            }
            // What the runtime's park hook does once the burst's tasks have run.
            runtime_idle();
        }
        drop(sender);
        handle.finish().await.unwrap();
        let (writes, bytes) = sink.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10_000);
        assert_eq!(lines[9_999], "{\"round\":9,\"n\":999}");
        // One write per line would be 10,000; a batch waits at most
        // `GATHER_MAX`, so even a slow machine stays far below that.
        assert!(writes < 1_000, "{writes} writes for 10,000 lines");
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_broken_output_stops_producers_instead_of_blocking_them() {
        let (sender, handle) = spawn_writer(Broken);
        let mut refused = false;
        for _ in 0..100_000 {
            if !sender.send(vec![b'x'; 1024]).await {
                refused = true;
                break;
            }
        }
        assert!(refused);
        drop(sender);
        assert!(handle.finish().await.is_err());
    }
    /// Writes wait until the test lets them through; says when one started.
    struct HeldSink {
        started: Option<oneshot::Sender<()>>,
        release: std::sync::mpsc::Receiver<()>,
        out: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for HeldSink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Some(started) = self.started.take() {
                let _ = started.send(());
            }
            let _ = self.release.recv();
            self.out.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Holds its first write until released; records where each written
    /// piece's bytes were.
    struct Places {
        release: Option<std::sync::mpsc::Receiver<()>>,
        started: Option<oneshot::Sender<()>>,
        seen: Arc<Mutex<(Vec<usize>, Vec<u8>)>>,
    }

    impl Write for Places {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
            if let Some(started) = self.started.take() {
                let _ = started.send(());
            }
            if let Some(release) = self.release.take() {
                let _ = release.recv();
            }
            let mut seen = self.seen.lock().unwrap();
            for buf in bufs {
                seen.0.push(buf.as_ptr() as usize);
                seen.1.extend_from_slice(buf);
            }
            Ok(bufs.iter().map(|b| b.len()).sum())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_queued_behind_others_is_written_from_its_own_buffer() {
        let (started, write_started) = oneshot::channel();
        let (release, released) = std::sync::mpsc::channel();
        let seen = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let sink = Places { release: Some(released), started: Some(started), seen: seen.clone() };
        let (sender, handle) = spawn_writer(sink);
        assert!(sender.send(b"first".to_vec()).await);
        // The writer holds "first"; what follows waits in the queue behind it.
        write_started.await.unwrap();
        let mut places = Vec::new();
        let mut expected = b"first\n".to_vec();
        for round in 0..3 {
            let mut batch = MessageBatch::default();
            for i in 0..100 {
                let message = format!("{{\"round\":{round},\"n\":{i}}}");
                batch.push(message.as_bytes());
                expected.extend_from_slice(message.as_bytes());
                expected.push(b'\n');
            }
            places.push(batch.lines().as_ptr() as usize);
            assert!(sender.send_batch(&mut batch).await);
            assert!(sender.send(b"small".to_vec()).await);
            expected.extend_from_slice(b"small\n");
        }
        release.send(()).unwrap();
        drop(sender);
        handle.finish().await.unwrap();
        let (written_from, bytes) = seen.lock().unwrap().clone();
        assert_eq!(String::from_utf8(bytes).unwrap(), String::from_utf8(expected).unwrap());
        // Each batch went out from the buffer it was written in: not copied into the queue.
        assert!(places.iter().all(|p| written_from.contains(p)), "{places:?} not in {written_from:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn flushed_waits_for_bytes_the_writer_took_but_has_not_written() {
        let (started, write_started) = oneshot::channel();
        let (release, released) = std::sync::mpsc::channel();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = HeldSink { started: Some(started), release: released, out: out.clone() };
        let (sender, handle) = spawn_writer(sink);
        assert!(sender.send(b"answer".to_vec()).await);
        // The writer took the line (the queue is empty again) and is inside its write.
        write_started.await.unwrap();
        let waiting = tokio::spawn(flushed());
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "flushed before the line was written");
        release.send(()).unwrap();
        waiting.await.unwrap();
        assert_eq!(*out.lock().unwrap(), b"answer\n");
        drop(sender);
        handle.finish().await.unwrap();
    }
}
