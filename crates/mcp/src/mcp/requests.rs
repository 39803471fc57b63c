//! A connection's requests (`tools/call`, resource listings and reads) as
//! pi 1.6.0's client sends them: each bounded by the server's timeout
//! (progress notifications reset it) and cancellable. A request is sent at
//! most twice: once more in a new session when the server no longer knew
//! the session (an HTTP 404, or pi-mcp's `McpSessionExpiredError` thrown by
//! an extension's transport: the old connection is let go and the server
//! connected again, `initialize` and `tools/list` included), or, for a
//! request that changes nothing, after a transient HTTP status
//! ([`super::super::retry`]).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, PaginatedRequestParams, ReadResourceRequestParams,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Connection;
use crate::mcp::retry;

/// Why a request failed: the service's error (which may be worth another
/// attempt), or already in the words the model reads (a timeout, an abort).
enum Failure {
    Service(rmcp::ServiceError),
    Said(String),
}

impl From<rmcp::ServiceError> for Failure {
    fn from(error: rmcp::ServiceError) -> Failure {
        Failure::Service(error)
    }
}

impl Connection {
    /// `tools/call`: the `CallToolResult` as JSON.
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        progress: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<Value, String> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params.arguments = Some(map);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let result = self
            .with_client(false, |peer| {
                let (request, progress) = (request.clone(), progress.clone());
                async move { self.request(&peer, request, cancel, progress).await }
            })
            .await?;
        match result {
            ServerResult::CallToolResult(r) => serde_json::to_value(r).map_err(|e| e.to_string()),
            other => Err(format!("unexpected answer to tools/call: {}", kind_of(&other))),
        }
    }

    async fn request(
        &self,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        cancel: &CancellationToken,
        progress: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<ServerResult, Failure> {
        let mut options = PeerRequestOptions::with_timeout(self.config.timeout);
        options.reset_timeout_on_progress = true;
        let handle = peer.send_cancellable_request(request, options).await?;
        let id = handle.id.clone();
        let token = progress_key(&handle.progress_token);
        if let (Some(tx), Ok(mut map)) = (progress, self.progress.lock()) {
            map.insert(token.clone(), tx);
        }
        let response = handle.await_response();
        tokio::pin!(response);
        let outcome = tokio::select! {
            r = &mut response => match r {
                Ok(result) => Ok(result),
                Err(rmcp::ServiceError::Timeout { timeout }) => Err(Failure::Said(format!("MCP server {} did not answer within {} s", self.config.name, timeout.as_secs_f64()))),
                Err(e) => Err(Failure::Service(e)),
            },
            _ = cancel.cancelled() => {
                let note = rmcp::model::CancelledNotificationParam::new(Some(id), Some("aborted".into()));
                let _ = peer.notify_cancelled(note).await;
                Err(Failure::Said("Operation aborted".to_string()))
            }
        };
        if let Ok(mut map) = self.progress.lock() {
            map.remove(&token);
        }
        outcome
    }

    pub(super) fn on_progress(&self, params: &rmcp::model::ProgressNotificationParam) {
        let Ok(map) = self.progress.lock() else { return };
        let Some(tx) = map.get(&progress_key(&params.progress_token)) else { return };
        let text = match (&params.message, params.total) {
            (Some(m), _) => m.clone(),
            (None, Some(total)) => format!("Progress {}/{total}", params.progress),
            (None, None) => format!("Progress {}", params.progress),
        };
        let _ = tx.send(text);
    }

    /// One page of `resources/list` (or `resources/templates/list`).
    pub async fn list_page(self: &Arc<Self>, templates: bool, cursor: Option<String>) -> Result<Value, String> {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        self.with_client(true, |peer| {
            let params = Some(params.clone());
            async move {
                let page = if templates {
                    peer.list_resource_templates(params).await.map(|r| serde_json::to_value(r).unwrap_or_default())
                } else {
                    peer.list_resources(params).await.map(|r| serde_json::to_value(r).unwrap_or_default())
                };
                Ok(page?)
            }
        })
        .await
    }

    /// `resources/read`: the result's `contents`.
    pub async fn read_resource(self: &Arc<Self>, uri: &str) -> Result<Value, String> {
        let result = self
            .with_client(true, |peer| async move {
                Ok(peer.read_resource(ReadResourceRequestParams::new(uri.to_string())).await?)
            })
            .await?;
        Ok(serde_json::to_value(result).unwrap_or_default().get("contents").cloned().unwrap_or(Value::Array(vec![])))
    }

    /// Send a request with pi's second chance: after an expired session, in
    /// a new one; after a transient HTTP status, when it changes nothing
    /// (`read_only`), 250 ms later. Never more than twice.
    async fn with_client<T, F, Fut>(self: &Arc<Self>, read_only: bool, send: F) -> Result<T, String>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Failure>>,
    {
        let mut first = true;
        loop {
            let (peer, epoch) = self.peer().await?;
            let error = match send(peer).await {
                Ok(value) => return Ok(value),
                Err(Failure::Said(text)) => return Err(text),
                Err(Failure::Service(error)) => error,
            };
            let http = retry::of_service(&error);
            if first && read_only && http.as_ref().is_some_and(|h| h.is_transient_status()) {
                first = false;
                tokio::time::sleep(retry::READ_DELAY).await;
                continue;
            }
            if first && http.as_ref().is_some_and(|h| h.is_session_expired()) {
                first = false;
                tracing::info!("MCP server {}: the session expired; starting a new one", self.config.name);
                self.let_go(epoch).await;
                continue;
            }
            return Err(self.failed(&error).await);
        }
    }
}

fn progress_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

fn kind_of(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(",")))
        .unwrap_or_default()
}
