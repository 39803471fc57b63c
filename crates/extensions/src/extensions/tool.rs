//! Extension tools (a [`Tool`] whose `execute` is a request to the
//! extension) and the `tool_call` gate (extensions that subscribed to
//! `tool_call` may block a call, or replace its arguments, before it runs).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Extensions;
use super::process::{CallError, Extension};
use super::protocol::ToolSpecWire;
use crate::message::ContentBlock;
use crate::tools::{GateDecision, Tool, ToolCallGate, ToolContext, ToolOutput};

/// `content` (a string or content blocks) and `details` of a tool result or update.
pub(crate) fn parse_content(v: &Value) -> (Vec<ContentBlock>, Option<Value>) {
    let content = match v.get("content") {
        Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => ContentBlock::text(s.clone()),
                other => {
                    serde_json::from_value(other.clone()).unwrap_or_else(|_| ContentBlock::text(other.to_string()))
                }
            })
            .collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![ContentBlock::text(other.to_string())],
    };
    let details = v.get("details").filter(|d| !d.is_null()).cloned();
    (content, details)
}

/// A tool registered by an extension.
pub struct ExtensionTool {
    ext: Arc<Extension>,
    spec: ToolSpecWire,
}

impl ExtensionTool {
    pub fn new(ext: Arc<Extension>, spec: ToolSpecWire) -> Self {
        ExtensionTool { ext, spec }
    }
}

#[async_trait]
impl Tool for ExtensionTool {
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
        self.spec.prompt_snippet.as_deref().filter(|s| !s.trim().is_empty())
    }

    fn prompt_guidelines(&self) -> &[String] {
        &self.spec.prompt_guidelines
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let call_id = ctx.tool_call_id.clone();
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.ext.watch_tool(&call_id, tx);
        let params = json!({"toolName": self.spec.name, "toolCallId": call_id, "input": args});
        let call = self.ext.call("execute_tool", params, Some(&ctx.cancel));
        tokio::pin!(call);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(update) = rx.recv() => ctx.update(update),
                outcome = &mut call => break outcome,
            }
        };
        self.ext.unwatch_tool(&call_id);
        while let Ok(update) = rx.try_recv() {
            ctx.update(update);
        }
        match outcome {
            Ok(result) => {
                let (content, details) = parse_content(&result);
                let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
                let details = match (details, is_error) {
                    (None, true) => Some(json!({})),
                    (d, _) => d,
                };
                let terminate = result.get("terminate").and_then(Value::as_bool) == Some(true);
                ToolOutput { content, details, is_error, terminate, ..Default::default() }
            }
            Err(CallError::Failed(message)) => ToolOutput::error(message),
            Err(CallError::Dead(message)) => {
                ToolOutput::error(format!("Extension {} is not running: {message}", self.ext.name()))
            }
            Err(CallError::Cancelled) => ToolOutput::error("Operation aborted"),
        }
    }
}

/// The `tool_call` hook of all extensions, in load order.
pub struct ExtensionGate {
    pub(super) extensions: Extensions,
}

#[async_trait]
impl ToolCallGate for ExtensionGate {
    async fn check(
        &self,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> GateDecision {
        let mut input = args.clone();
        let mut replaced = false;
        for ext in self.extensions.subscribers("tool_call") {
            let params = json!({"toolName": tool_name, "toolCallId": tool_call_id, "input": input});
            match ext.call("tool_call", params, Some(cancel)).await {
                Ok(result) => {
                    if result.get("block").and_then(Value::as_bool) == Some(true) {
                        let reason = result
                            .get("reason")
                            .and_then(Value::as_str)
                            .filter(|r| !r.is_empty())
                            .unwrap_or("Tool execution was blocked");
                        return GateDecision::Block { reason: reason.to_string() };
                    }
                    if let Some(new_input) = result.get("input").filter(|i| i.is_object()) {
                        input = new_input.clone();
                        replaced = true;
                    }
                }
                // A failing gate fails closed, as pi's `tool_call` handlers do.
                Err(CallError::Failed(message)) => return GateDecision::Block { reason: message },
                Err(CallError::Dead(message)) => {
                    return GateDecision::Block { reason: format!("Extension failed, blocking execution: {message}") };
                }
                Err(CallError::Cancelled) => return GateDecision::Block { reason: "Operation aborted".to_string() },
            }
        }
        GateDecision::Allow { args: replaced.then_some(input) }
    }

    async fn after(
        &self,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        output: ToolOutput,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        if !self.extensions.listens("tool_result") {
            return output;
        }
        self.extensions.tool_result(tool_call_id, tool_name, args, output, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_accepts_strings_and_blocks() {
        let (c, d) = parse_content(&json!({"content": "hi", "details": {"n": 1}}));
        assert_eq!(c, vec![ContentBlock::text("hi")]);
        assert_eq!(d, Some(json!({"n": 1})));
        let (c, d) = parse_content(&json!({"content": [{"type": "text", "text": "a"}, "b"]}));
        assert_eq!(c, vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(d, None);
    }
}
