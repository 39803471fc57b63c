//! pi's `createMcpExtension({ createTransport })`: the MCP owner's
//! transport factory carries pi-rpc's MCP client's messages. Each server's
//! transport is opened in the extension with an `mcp_transport` call
//! (`{op: "open", stream, entry, cwd, auth}`: the host calls
//! `createTransport(entry, cwd, authProvider)` and `start()`s the transport;
//! for a server that signs in with OAuth, `auth` is true and the
//! `authProvider`'s calls come back as `streamService` of `stream`);
//! messages go to it in order (`{op: "send", stream, message}`), and what the
//! transport receives, its errors and its close come back as `streamData`
//! of `stream` (`{message}`, `{error}`, `{closed: true}`). `{op: "close"}`
//! closes it; `{op: "forget"}` drops it unclosed (a session that expired).

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::extensions::Extension;
use crate::mcp::host_transport::{HostLink, Outgoing, PiMcpError, SendFailure, TransportHost, serve_auth};
use crate::mcp::oauth::TokenSource;

/// The transports of the extension that owns MCP, or (`session`) those of
/// the MCP extension inside an SDK session that extension's process runs.
pub(super) struct ExtensionTransports {
    pub(super) owner: Arc<Extension>,
    pub(super) session: Option<String>,
}

impl TransportHost for ExtensionTransports {
    fn open(
        &self,
        entry: Value,
        cwd: PathBuf,
        auth: Option<Arc<TokenSource>>,
    ) -> BoxFuture<'static, Result<HostLink, SendFailure>> {
        let ext = self.owner.clone();
        let session = self.session.clone();
        Box::pin(async move {
            let stream = format!("mcp-transport-{}", uuid::Uuid::new_v4());
            let incoming = ext.open_stream(&stream);
            let with_auth = auth.is_some();
            if let Some(auth) = auth {
                // The `authProvider` given to `createTransport` asks here.
                ext.serve_stream(
                    &stream,
                    Arc::new(move |params| {
                        let auth = auth.clone();
                        Box::pin(async move { serve_auth(&auth, &params).await })
                    }),
                );
            }
            let mut params = json!({"op": "open", "stream": stream, "entry": entry, "cwd": cwd, "auth": with_auth});
            if let Some(session) = session {
                // The host opens it with that SDK session's `createTransport`.
                params["session"] = json!(session);
            }
            let failure = match ext.call("mcp_transport", params, None).await {
                // What `createTransport` or `start()` threw, as pi reports it.
                Ok(answer) => answer.get("failed").map(SendFailure::from_report),
                Err(error) => {
                    Some(SendFailure::other(format!("the extension's transport did not start: {}", describe(&error))))
                }
            };
            if let Some(failure) = failure {
                ext.close_stream(&stream);
                return Err(failure);
            }
            let (outgoing, queue) = mpsc::unbounded_channel();
            tokio::spawn(deliver(ext, stream, queue));
            Ok(HostLink { outgoing, incoming })
        })
    }
}

/// Hand the client's messages to transport `stream` one after the other,
/// each `send`'s outcome to its sender (what it threw fails that request, as
/// in pi); close it when told to, or when the client is gone. A transport
/// whose last `send` threw pi-mcp's `McpSessionExpiredError` is let go
/// without `close()`, as pi lets go the client of an expired session.
async fn deliver(ext: Arc<Extension>, stream: String, mut queue: mpsc::UnboundedReceiver<Option<Outgoing>>) {
    let mut expired = false;
    while let Some(Some(Outgoing { message, sent })) = queue.recv().await {
        let outcome =
            match ext.call("mcp_transport", json!({"op": "send", "stream": stream, "message": message}), None).await {
                Ok(answer) => match answer.get("failed") {
                    Some(failed) => Err(SendFailure::from_report(failed)),
                    None => Ok(()),
                },
                Err(error) => Err(SendFailure::other(describe(&error))),
            };
        if let Err(failure) = &outcome {
            tracing::info!("MCP transport of {}: send failed: {failure}", ext.path_string());
        }
        expired = outcome.as_ref().err().is_some_and(|f| f.kind == Some(PiMcpError::SessionExpired));
        let _ = sent.send(outcome);
    }
    let op = if expired { "forget" } else { "close" };
    let _ = ext.call("mcp_transport", json!({"op": op, "stream": stream}), None).await;
    ext.close_stream(&stream);
}

fn describe(error: &crate::extensions::CallError) -> String {
    match error {
        crate::extensions::CallError::Failed(why) | crate::extensions::CallError::Dead(why) => why.clone(),
        crate::extensions::CallError::Cancelled => "cancelled".to_string(),
    }
}
