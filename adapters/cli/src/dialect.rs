//! Choosing the front end for stdin/stdout and serving it until the end,
//! including the termination signals.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use pi_core::agent::{AgentHandle, Outputs};
use pi_transport::detect::{Detected, detect};
use pi_transport::{BatchedOutputs, FrameReader, Framing, Preread, Record, RecordReader, ServeEnd, serve_stream};
use tokio::io::{AsyncBufRead, BufReader};
use tokio::sync::mpsc;

use crate::args::{Args, Protocol};

/// How the server ended.
pub enum End {
    Finished,
    /// Ended by this signal number.
    Signalled(u8),
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

/// Standard output as a plain file (a duplicate of its descriptor), for the
/// writer thread, which batches what it writes itself. std's `Stdout` is
/// line buffered: each write looks for the last `\n` in all it is given (the
/// whole of a 100 MB `get_messages` reply, 64 KiB at a time). `Stdout` is
/// the fallback if the descriptor cannot be duplicated (standard output closed).
fn raw_stdout() -> Box<dyn std::io::Write + Send> {
    use std::os::fd::AsFd;
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(std::io::stdout()),
    }
}

/// Serve stdin/stdout. `agent` is the one agent of the seed dialects (None
/// with `--protocol acp`, whose sessions each start their own and ask
/// `catalogs` for their catalog refresh).
pub async fn serve_stdio(
    protocol: Protocol,
    args: Arc<Args>,
    agent: Option<(AgentHandle, mpsc::Receiver<Outputs>)>,
    catalogs: Option<Arc<pi_core::auth::catalog_refreshes::CatalogRefreshes>>,
) -> anyhow::Result<End> {
    let signal = Arc::new(AtomicU8::new(0));
    let stop = termination(signal.clone());
    tokio::pin!(stop);
    let stdin = BufReader::with_capacity(256 * 1024, tokio::io::stdin());
    let stdout = raw_stdout();
    let mut records = RecordReader::new(stdin);

    let (dialect, first) = match protocol {
        Protocol::Acp => (Detected::Acp, None),
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
                    if let Some((handle, _)) = &agent {
                        let _ = handle.submit(None, pi_core::op::Op::Shutdown { abort: false }).await;
                    }
                    return Ok(End::Finished);
                }
                Some(record) => (detect(&record), Some(record)),
            }
        }
    };
    tracing::debug!("dialect: {dialect:?}");
    let (handle, outputs) = match (dialect, agent) {
        (Detected::Acp, agent) => {
            if let Some((handle, _)) = agent {
                // ACP sessions start their own agents: the one started for the seed dialects is not needed.
                let _ = handle.submit(None, pi_core::op::Op::Shutdown { abort: true }).await;
            }
            let source = Preread::new(first, FrameReader::Lines(records));
            let (lines, writer) = pi_transport::writer::spawn_writer(stdout);
            let sink = pi_transport::connection::FramedSink::new(lines, Framing::Lines);
            let host = crate::acp_host::StdioHost::new(args, catalogs);
            if !pi_acp_agent::serve_acp(host, source, sink, &mut stop).await {
                tracing::debug!("stdout closed before every ACP message was written");
            }
            let _ = writer.finish().await;
            let signalled = signal.load(Ordering::SeqCst);
            return Ok(if signalled != 0 { End::Signalled(signalled) } else { End::Finished });
        }
        (_, Some((handle, outputs))) => (handle, BatchedOutputs::new(outputs)),
        (_, None) => anyhow::bail!("no agent to serve"),
    };
    let end = match (dialect, first) {
        (Detected::Native, first) => {
            let source = Preread::new(first, FrameReader::Lines(records));
            serve_stream(pi_jsonl::Native::default(), source, Framing::Lines, stdout, handle, outputs, stop).await
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

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(line: &str) -> Detected {
        detect(&Ok(line.to_string()))
    }

    #[test]
    fn an_initialize_with_an_integer_protocol_version_is_acp() {
        let acp =
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
        assert_eq!(detected(acp), Detected::Acp);
        // Seed 004's initialize has no protocolVersion; a string or a float is not ACP's.
        for rpc in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"model":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1.5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"protocolVersion":1}}"#,
        ] {
            assert_eq!(detected(rpc), Detected::JsonRpc, "{rpc}");
        }
        assert_eq!(detected(r#"{"type":"get_state"}"#), Detected::Native);
    }
}
