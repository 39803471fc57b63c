//! Choosing the front end for stdin/stdout and serving it until the end,
//! including the termination signals.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use pi_core::agent::{AgentHandle, Output};
use pi_transport::framing::is_content_length_header;
use pi_transport::raw::RawJson;
use pi_transport::{FrameReader, Framing, Preread, Record, RecordReader, ServeEnd, serve_stream};
use tokio::io::{AsyncBufRead, BufReader};
use tokio::sync::mpsc;

use crate::args::Protocol;

/// How the server ended.
pub enum End {
    Finished,
    /// Ended by this signal number.
    Signalled(u8),
}

/// The dialect the first record asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detected {
    Native,
    JsonRpc,
    /// `Content-Length:` header framing (JSON-RPC).
    JsonRpcHeaders,
}

fn detect(record: &Record) -> Detected {
    let Ok(line) = record else { return Detected::Native };
    if is_content_length_header(line) {
        return Detected::JsonRpcHeaders;
    }
    match RawJson::parse(line) {
        Ok(RawJson::Array(_)) => Detected::JsonRpc,
        Ok(RawJson::Object(obj)) if obj.contains("jsonrpc") => Detected::JsonRpc,
        _ => Detected::Native,
    }
}

/// Resolves when SIGTERM or SIGINT arrives, recording which.
pub(crate) async fn termination(signal: Arc<AtomicU8>) {
    use tokio::signal::unix::{SignalKind, signal as listen};
    let (Ok(mut term), Ok(mut int)) = (listen(SignalKind::terminate()), listen(SignalKind::interrupt())) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => signal.store(15, Ordering::SeqCst),
        _ = int.recv() => signal.store(2, Ordering::SeqCst),
    }
}

/// Read the first non-blank record (dialect detection); None at end of input.
async fn first_record<R: AsyncBufRead + Unpin>(records: &mut RecordReader<R>) -> std::io::Result<Option<Record>> {
    loop {
        match records.next_record().await? {
            Some(Ok(line)) if line.trim().is_empty() => continue,
            other => return Ok(other),
        }
    }
}

pub async fn serve_stdio(
    protocol: Protocol,
    handle: AgentHandle,
    outputs: mpsc::Receiver<Output>,
) -> anyhow::Result<End> {
    let signal = Arc::new(AtomicU8::new(0));
    let stop = termination(signal.clone());
    tokio::pin!(stop);
    let stdin = BufReader::with_capacity(256 * 1024, tokio::io::stdin());
    let stdout = std::io::stdout();
    let mut records = RecordReader::new(stdin);

    let (dialect, first) = match protocol {
        Protocol::Acp => anyhow::bail!("--protocol acp: not available yet"),
        Protocol::Jsonl => (Detected::Native, None),
        Protocol::Jsonrpc => {
            let first = tokio::select! {
                _ = &mut stop => return Ok(End::Signalled(signal.load(Ordering::SeqCst))),
                r = first_record(&mut records) => r?,
            };
            match first {
                Some(record) if detect(&record) == Detected::JsonRpcHeaders => (Detected::JsonRpcHeaders, Some(record)),
                other => (Detected::JsonRpc, other),
            }
        }
        Protocol::Auto => {
            let first = tokio::select! {
                _ = &mut stop => return Ok(End::Signalled(signal.load(Ordering::SeqCst))),
                r = first_record(&mut records) => r?,
            };
            match first {
                None => {
                    // Input ended before anything was asked: nothing to serve.
                    let _ = handle.submit(None, pi_core::op::Op::Shutdown { abort: false }).await;
                    return Ok(End::Finished);
                }
                Some(record) => (detect(&record), Some(record)),
            }
        }
    };
    tracing::debug!("dialect: {dialect:?}");
    let end = match (dialect, first) {
        (Detected::Native, first) => {
            let source = Preread::new(first, FrameReader::Lines(records));
            serve_stream(pi_jsonl::Native, source, Framing::Lines, stdout, handle, outputs, stop).await
        }
        (Detected::JsonRpcHeaders, Some(Ok(header))) => {
            let source = FrameReader::headers_after(records, &header);
            let dialect = pi_jsonrpc::JsonRpc::default();
            serve_stream(dialect, source, Framing::Headers, stdout, handle, outputs, stop).await
        }
        (_, first) => {
            let source = Preread::new(first, FrameReader::Lines(records));
            let dialect = pi_jsonrpc::JsonRpc::default();
            serve_stream(dialect, source, Framing::Lines, stdout, handle, outputs, stop).await
        }
    };
    let signalled = end == ServeEnd::Signalled;
    Ok(if signalled { End::Signalled(signal.load(Ordering::SeqCst)) } else { End::Finished })
}
