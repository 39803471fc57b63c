//! The one writer that owns the output stream: a dedicated thread that writes
//! whole lines in the order they were queued and flushes whenever the queue
//! runs dry.
//!
//! Producers append to a shared buffer and only wake the thread when it is
//! idle, so a fast stream of small lines costs one write per batch instead of
//! one thread hand-off per line. When the client stops reading, the buffer
//! fills up to its cap and producers wait (backpressure) instead of growing
//! memory without bound.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::{Notify, oneshot};

/// Bytes queued before producers wait for the writer.
pub const QUEUE_CAP_BYTES: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    writer_waiting: bool,
    senders: usize,
    /// The output failed (e.g. the client closed it); nothing more is written.
    broken: bool,
}

struct Shared {
    state: Mutex<State>,
    wake_writer: Condvar,
    space: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
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

    async fn push(&self, bytes: Vec<u8>, newline: bool) -> bool {
        loop {
            let space = self.shared.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            {
                let mut st = self.shared.lock();
                if st.broken {
                    return false;
                }
                if st.buf.is_empty() || st.buf.len() + bytes.len() <= QUEUE_CAP_BYTES {
                    if st.buf.is_empty() && st.buf.capacity() < bytes.len() {
                        // Into an empty queue the record goes as it is, not copied
                        // (a 100 MB `get_messages` reply must not be held twice).
                        st.buf = bytes;
                    } else {
                        st.buf.extend_from_slice(&bytes);
                    }
                    if newline {
                        st.buf.push(b'\n');
                    }
                    if st.writer_waiting {
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
    });
    let (done_tx, done_rx) = oneshot::channel();
    let thread_shared = shared.clone();
    let spawned = std::thread::Builder::new().name("pi-stdout".into()).spawn(move || {
        let result = write_loop(&thread_shared, out);
        if result.is_err() {
            thread_shared.lock().broken = true;
        }
        thread_shared.space.notify_waiters();
        let _ = done_tx.send(result);
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the output thread: {e}");
        shared.lock().broken = true;
    }
    (LineSender { shared }, WriterHandle { done: done_rx })
}

fn write_loop<W: Write>(shared: &Shared, mut out: W) -> std::io::Result<()> {
    loop {
        let chunk = {
            let mut st = shared.lock();
            while st.buf.is_empty() && st.senders > 0 {
                st.writer_waiting = true;
                st = shared.wake_writer.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
                st.writer_waiting = false;
            }
            if st.buf.is_empty() {
                return out.flush();
            }
            std::mem::take(&mut st.buf)
        };
        shared.space.notify_waiters();
        out.write_all(&chunk)?;
        if shared.lock().buf.is_empty() {
            out.flush()?;
        }
    }
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
}
