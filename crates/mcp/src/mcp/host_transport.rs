//! A server connection through an extension's transport (pi's
//! `createMcpExtension({ createTransport })`): pi-rpc's MCP client sends its
//! JSON-RPC messages to the extension, whose transport object (`start`,
//! `send`, `onMessage`, `onError`, `onClose`, `close`) carries them to the
//! server, and gets back what the transport receives. The extension side is
//! a [`TransportHost`] (the agent's, over the extension protocol).

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::config::{ServerConfig, Transport};
use super::oauth::TokenSource;

/// One call of the `authProvider` pi gives `createTransport` (pi's OAuth for
/// the server, on pi-rpc's stored credentials): `{op: "token"}` answers the
/// access token to send (refreshed first when it is about to expire, null
/// without one); `{op: "unauthorized", token, challenge}` is told the server
/// refused `token` with the `WWW-Authenticate` `challenge`: the stored
/// refresh token is used (once, under pi's lock), or it fails as pi's
/// provider does, and the server then needs sign-in; `{op: "settled"}`
/// answers once no refresh is under way (pi's `settled()`).
pub async fn serve_auth(auth: &TokenSource, params: &Value) -> Result<Value, String> {
    match params.get("op").and_then(Value::as_str) {
        Some("token") => Ok(auth.token().await.map_or(Value::Null, Value::String)),
        Some("unauthorized") => {
            let sent = params.get("token").and_then(Value::as_str);
            let challenge = params.get("challenge").and_then(Value::as_str).unwrap_or_default();
            auth.on_unauthorized(sent, challenge).await.map(|()| Value::Null)
        }
        Some("settled") => {
            auth.settled().await;
            Ok(Value::Null)
        }
        other => Err(format!("unknown authProvider call: {other:?}")),
    }
}

/// Where an extension's transports are opened.
pub trait TransportHost: Send + Sync {
    /// Open the extension's transport for pi's server entry `entry`
    /// (`{name, config, source}`) in the session's directory `cwd`, and start
    /// it; `auth`, for a server that signs in with OAuth, answers the
    /// extension's `authProvider` ([`serve_auth`]). A failure says what
    /// `createTransport` or `start()` threw (a status for pi-mcp's HTTP
    /// errors: pi tries again after a transient one).
    fn open(
        &self,
        entry: Value,
        cwd: PathBuf,
        auth: Option<Arc<TokenSource>>,
    ) -> BoxFuture<'static, Result<HostLink, SendFailure>>;
}

/// Why the extension's transport could not send a message: what its `send`
/// threw (pi's client fails that request with it). `status` is that of
/// pi-mcp's `McpHttpError`, `network` says it was a `TypeError` (fetch's
/// network failure): pi retries a connect after either when transient.
/// `kind` names pi-mcp's subclasses pi's client treats apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendFailure {
    pub message: String,
    pub status: Option<u16>,
    pub network: bool,
    pub kind: Option<PiMcpError>,
}

/// pi-mcp's HTTP errors that pi's client handles on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiMcpError {
    /// `McpSessionExpiredError`: pi starts a new session once and sends the request again.
    SessionExpired,
    /// `McpAuthRequiredError`: a server with an `authProvider` comes to need sign-in.
    AuthRequired,
}

impl SendFailure {
    /// A failure that is neither HTTP nor the network's.
    pub fn other(message: String) -> SendFailure {
        SendFailure { message, status: None, network: false, kind: None }
    }

    /// The host's `{message, status?, network?, kind?}`.
    pub fn from_report(report: &Value) -> SendFailure {
        let kind = match report.get("kind").and_then(Value::as_str) {
            Some("sessionExpired") => Some(PiMcpError::SessionExpired),
            Some("authRequired") => Some(PiMcpError::AuthRequired),
            _ => None,
        };
        SendFailure {
            message: report.get("message").and_then(Value::as_str).unwrap_or("the transport failed").to_string(),
            status: report.get("status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok()),
            network: report.get("network").and_then(Value::as_bool).unwrap_or(false),
            kind,
        }
    }
}

impl std::fmt::Display for SendFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SendFailure {}

/// One message for the extension's transport, and where its `send`'s outcome goes.
pub struct Outgoing {
    pub message: Value,
    pub sent: oneshot::Sender<Result<(), SendFailure>>,
}

/// One open transport of an extension.
pub struct HostLink {
    /// What to do with it, in order: `Some(outgoing)` sends one message,
    /// `None` closes it (as does dropping the sender).
    pub outgoing: mpsc::UnboundedSender<Option<Outgoing>>,
    /// What it reports: `{message}` (one it received), `{error}`, `{closed: true}`.
    pub incoming: mpsc::UnboundedReceiver<Value>,
}

/// pi's `McpServerEntry` of `server`, as a transport factory is given it.
pub fn entry(server: &ServerConfig) -> Value {
    let config = if server.raw.is_object() {
        server.raw.clone()
    } else {
        match &server.transport {
            Transport::Stdio { command, args, cwd, .. } => json!({"command": command, "args": args, "cwd": cwd}),
            Transport::Http { url, .. } => json!({"url": url}),
        }
    };
    let mut entry = json!({"name": server.name, "config": config, "source": server.source});
    if let Some(scope) = &server.scope {
        entry["scope"] = json!(scope);
    }
    if let Some(path) = &server.override_path {
        entry["override"] = json!(path);
    }
    entry
}

/// Open `server`'s transport on `host`.
pub async fn open(
    host: Arc<dyn TransportHost>,
    server: &ServerConfig,
    cwd: PathBuf,
    auth: Option<Arc<TokenSource>>,
) -> Result<HostTransport, SendFailure> {
    let link = host.open(entry(server), cwd, auth).await?;
    Ok(HostTransport { link, server: server.name.clone() })
}

/// rmcp's view of a [`HostLink`].
pub struct HostTransport {
    link: HostLink,
    server: String,
}

fn closed() -> SendFailure {
    SendFailure::other("the extension's MCP transport is closed".to_string())
}

impl rmcp::transport::Transport<RoleClient> for HostTransport {
    type Error = SendFailure;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Queued now, so messages reach the extension in the order they were
        // sent; the future ends with the extension's `send`.
        let (sent, outcome) = oneshot::channel();
        let queued = serde_json::to_value(&item)
            .map_err(|e| SendFailure::other(e.to_string()))
            .and_then(|message| self.link.outgoing.send(Some(Outgoing { message, sent })).map_err(|_| closed()));
        async move {
            queued?;
            outcome.await.unwrap_or_else(|_| Err(closed()))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let report = self.link.incoming.recv().await?;
            if let Some(message) = report.get("message") {
                match serde_json::from_value(message.clone()) {
                    Ok(message) => return Some(message),
                    Err(error) => {
                        tracing::warn!(
                            "MCP server {}: the transport gave a message that is not JSON-RPC ({error})",
                            self.server
                        );
                    }
                }
            } else if let Some(error) = report.get("error") {
                let error = error.as_str().map_or_else(|| error.to_string(), str::to_string);
                tracing::warn!("MCP server {}: transport error: {error}", self.server);
            } else if report.get("closed").is_some() {
                return None;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let _ = self.link.outgoing.send(None);
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::Transport as _;

    /// `createTransport`'s entry of a global server a trusted project
    /// overrides names the project file as its `override`, as pi's does; a
    /// server nothing overrides has none.
    #[test]
    fn an_entry_names_the_project_file_that_overrides_it() {
        let agent = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let global = json!({"mcpServers": {"a": {"url": "http://127.0.0.1:9/mcp"}, "b": {"command": "b"}}});
        std::fs::write(agent.path().join("mcp.json"), global.to_string()).unwrap();
        std::fs::create_dir_all(cwd.path().join(".pi")).unwrap();
        let project = json!({"mcpServers": {"a": {"exposure": "direct"}}});
        std::fs::write(cwd.path().join(".pi/mcp.json"), project.to_string()).unwrap();
        let sources = crate::mcp::config::ConfigSources {
            agent_dir: agent.path(),
            cwd: cwd.path(),
            project_trusted: true,
            env: None,
        };
        let config = crate::mcp::config::McpConfig::load(&sources);
        let entries: Vec<Value> = config.servers.iter().map(entry).collect();
        let project_file = cwd.path().join(".pi").join("mcp.json").display().to_string();
        assert_eq!(entries[0]["name"], "a");
        assert_eq!(entries[0]["override"], json!(project_file));
        assert_eq!(entries[0]["scope"], "global");
        assert_eq!(entries[1]["name"], "b");
        assert!(entries[1].get("override").is_none(), "{}", entries[1]);
    }

    #[tokio::test]
    async fn messages_go_out_in_order_and_come_back_until_the_transport_closes() {
        let (outgoing, mut sent) = mpsc::unbounded_channel();
        let (report, incoming) = mpsc::unbounded_channel();
        let mut transport = HostTransport { link: HostLink { outgoing, incoming }, server: "s".into() };
        let mut sends = Vec::new();
        for id in 1..=3 {
            let ping: TxJsonRpcMessage<RoleClient> =
                serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap();
            sends.push(tokio::spawn(transport.send(ping)));
        }
        for id in 1..=3 {
            let out = sent.recv().await.unwrap().unwrap();
            assert_eq!(out.message["id"], id);
            let outcome = if id == 2 {
                Err(SendFailure::from_report(&json!({"message": "down", "status": 503})))
            } else {
                Ok(())
            };
            out.sent.send(outcome).unwrap();
        }
        let mut outcomes = Vec::new();
        for send in sends {
            outcomes.push(send.await.unwrap());
        }
        let failed = SendFailure { message: "down".into(), status: Some(503), network: false, kind: None };
        assert_eq!(outcomes, vec![Ok(()), Err(failed), Ok(())], "each send ends with the extension's");
        report.send(json!({"error": "a hiccup"})).unwrap();
        report.send(json!({"message": {"jsonrpc": "2.0", "id": 1, "result": {}}})).unwrap();
        report.send(json!({"closed": true})).unwrap();
        let answer = transport.receive().await.expect("the answer");
        assert_eq!(serde_json::to_value(&answer).unwrap()["id"], 1);
        assert!(transport.receive().await.is_none(), "closed");
        transport.close().await.unwrap();
        assert!(matches!(sent.recv().await, Some(None)), "closing is the last op");
    }
}
