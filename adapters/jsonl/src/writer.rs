//! The one task that owns the output stream: it writes whole lines, in the
//! order they were queued, and flushes whenever the queue runs dry.

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Capacity of the line queue; producers wait when the client stops reading.
pub const LINE_QUEUE_CAPACITY: usize = 4096;

/// A handle for queueing output lines.
#[derive(Clone)]
pub struct LineSender {
    tx: mpsc::Sender<Vec<u8>>,
}

impl LineSender {
    /// Queue one record; a trailing `\n` is added. Returns false once the writer is gone.
    pub async fn send(&self, mut line: Vec<u8>) -> bool {
        line.push(b'\n');
        self.tx.send(line).await.is_ok()
    }

    /// Queue bytes exactly as given (for header-framed output).
    pub async fn send_raw(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(bytes).await.is_ok()
    }
}

/// Start the writer task on `out`. It ends when every sender is dropped (after
/// flushing) or when the output breaks (e.g. the client closed its end).
pub fn spawn_writer<W>(mut out: W) -> (LineSender, JoinHandle<std::io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(LINE_QUEUE_CAPACITY);
    let task = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            out.write_all(&line).await?;
            while let Ok(more) = rx.try_recv() {
                out.write_all(&more).await?;
            }
            out.flush().await?;
        }
        out.flush().await
    });
    (LineSender { tx }, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order() {
        let (client, mut server) = tokio::io::duplex(64);
        let (sender, task) = spawn_writer(client);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut server, &mut all).await.unwrap();
            all
        });
        for i in 0..1000 {
            assert!(sender.send(format!("{{\"n\":{i}}}").into_bytes()).await);
        }
        drop(sender);
        task.await.unwrap().unwrap();
        let all = String::from_utf8(reader.await.unwrap()).unwrap();
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert_eq!(lines[999], "{\"n\":999}");
    }
}
