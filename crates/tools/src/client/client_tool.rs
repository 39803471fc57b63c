//! A tool the client declared and runs itself: the model calls it like any
//! tool, the client gets the call and answers with the result (JSON-RPC
//! `toolCall` → `toolResult`). No answer in time, abort, or a client that
//! went away give the model an error result.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{ClientFailure, ClientReply, ClientRequestKind, ClientToolSpec};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// A client-declared tool.
pub struct ClientTool {
    spec: ClientToolSpec,
    timeout: Duration,
}

impl ClientTool {
    pub fn new(mut spec: ClientToolSpec, timeout: Duration) -> Self {
        if !spec.parameters.is_object() {
            spec.parameters = serde_json::json!({"type": "object", "properties": {}});
        }
        ClientTool { spec, timeout }
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> &Value {
        &self.spec.parameters
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some(&self.spec.description)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let Some(client) = &ctx.client else {
            return ToolOutput::error(format!(
                "Tool \"{}\" runs in the client, and no client is connected",
                self.name()
            ));
        };
        let kind = ClientRequestKind::ToolCall {
            tool_call_id: ctx.tool_call_id.clone(),
            tool_name: self.spec.name.clone(),
            args,
        };
        match client.request(kind, &ctx.cancel, Some(self.timeout)).await {
            Ok(ClientReply::ToolResult { content, details, is_error }) => ToolOutput {
                content,
                details: details.or_else(|| is_error.then(|| Value::Object(Default::default()))),
                is_error,
                ..Default::default()
            },
            Ok(other) => ToolOutput::error(format!("unexpected answer from the client: {other:?}")),
            Err(ClientFailure::Cancelled) => ToolOutput::error("Operation aborted"),
            Err(ClientFailure::TimedOut(ms)) => ToolOutput::error(format!(
                "Tool \"{}\" got no result from the client within {} seconds",
                self.name(),
                super::seconds(ms)
            )),
            Err(e) => ToolOutput::error(format!("Tool \"{}\" failed in the client: {e}", self.name())),
        }
    }
}
