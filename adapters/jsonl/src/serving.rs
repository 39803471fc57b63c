//! How both dialects serve a connection: read records until input ends, a
//! termination signal arrives or the agent stops, then let the agent's output
//! and the writer drain, and say how it ended.

use std::future::Future;

use pi_core::agent::AgentHandle;
use pi_core::op::Op;
use tokio::task::JoinHandle;

use crate::framing::Record;
use crate::writer::WriterHandle;

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

/// Why the input loop stopped, and the forwarder's result if it was the one
/// that ended (the agent stopped, e.g. after `shutdown`).
pub struct InputEnd {
    end: ServeEnd,
    forwarder_result: Option<bool>,
}

/// Feed records to `handle` in arrival order until input ends or fails (the
/// agent finishes accepted work), `stop` resolves (the agent aborts), or the
/// agent's output forwarder ends.
pub async fn read_input<S>(
    agent: &AgentHandle,
    stop: S,
    forwarder: &mut JoinHandle<bool>,
    mut next: impl AsyncFnMut() -> std::io::Result<Option<Record>>,
    mut handle: impl AsyncFnMut(Record),
) -> InputEnd
where
    S: Future<Output = ()>,
{
    tokio::pin!(stop);
    loop {
        let record = tokio::select! {
            biased;
            _ = &mut stop => {
                let _ = agent.submit(None, Op::Shutdown { abort: true }).await;
                return InputEnd { end: ServeEnd::Signalled, forwarder_result: None };
            }
            r = next() => r,
            done = &mut *forwarder => {
                return InputEnd { end: ServeEnd::Eof, forwarder_result: Some(done.unwrap_or(false)) };
            }
        };
        match record {
            Ok(Some(record)) => handle(record).await,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("input error: {e}");
                break;
            }
        }
    }
    let _ = agent.submit(None, Op::Shutdown { abort: false }).await;
    InputEnd { end: ServeEnd::Eof, forwarder_result: None }
}

/// Wait for the output forwarder (the agent's end) unless it already ended,
/// then for the writer to flush: the input's end unless the output broke on
/// the way. Call it once every sender of the writer and the agent handle are
/// dropped.
pub async fn finish_serving(input: InputEnd, forwarder: JoinHandle<bool>, writer: WriterHandle) -> ServeEnd {
    let output_ok = match input.forwarder_result {
        Some(ok) => ok,
        None => forwarder.await.unwrap_or(false),
    };
    match writer.finish().await {
        Ok(()) if output_ok => input.end,
        _ => ServeEnd::OutputClosed,
    }
}
