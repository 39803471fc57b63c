//! Starting the session's MCP servers, with the one start-up warning.

use std::sync::Arc;

use super::internal::Internal;
use crate::event::{AgentEvent, ExtensionUiKind, ExtensionUiRequest};
use crate::mcp::McpManager;

/// Start connecting; report configuration errors and failed servers once,
/// as a warning notification, when every server has settled.
pub(super) fn start_mcp(
    options: crate::mcp::McpOptions,
    active: &[String],
    internal: &tokio::sync::mpsc::Sender<Internal>,
) -> Arc<McpManager> {
    watch_startup(McpManager::start(options), active, internal)
}

/// Report `mcp`'s configuration errors and failed servers once, as a
/// warning notification, when every server has settled; and pi's warning
/// when its tools cannot be reached with the `active` tools.
pub(super) fn watch_startup(
    mcp: Arc<McpManager>,
    active: &[String],
    internal: &tokio::sync::mpsc::Sender<Internal>,
) -> Arc<McpManager> {
    if let Some(message) = mcp.unreachable_warning(active) {
        // pi's MCP extension says so at `session_start`, before the servers connect.
        let internal = internal.clone();
        tokio::spawn(async move { warn(&internal, message.to_string()).await });
    }
    if !mcp.is_empty() {
        let (mcp, internal) = (mcp.clone(), internal.clone());
        tokio::spawn(async move {
            if let Some(message) = mcp.startup_report().await {
                tracing::warn!("{message}");
                warn(&internal, message).await;
            }
        });
    }
    mcp
}

/// A warning `notify` of the MCP client.
async fn warn(internal: &tokio::sync::mpsc::Sender<Internal>, message: String) {
    let request = ExtensionUiRequest {
        id: uuid::Uuid::new_v4().to_string(),
        extension: "mcp".to_string(),
        kind: ExtensionUiKind::Notify { message, notify_type: Some("warning".to_string()) },
    };
    let _ = internal.send(Internal::Event(Box::new(AgentEvent::ExtensionUiRequest(Box::new(request))))).await;
}
