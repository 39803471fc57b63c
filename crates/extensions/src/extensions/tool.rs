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
use super::tool_content::parse_content;
use crate::tools::{GateDecision, Tool, ToolCallGate, ToolContext, ToolOutput};

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

    fn sequential(&self) -> bool {
        self.spec.execution_mode.as_deref() == Some("sequential")
    }

    fn output_schema(&self) -> Option<&Value> {
        self.spec.output_schema.as_ref().filter(|s| s.is_object())
    }

    fn exposure(&self) -> &str {
        self.spec.exposure.as_deref().unwrap_or("direct")
    }

    fn callable(&self, active: bool) -> bool {
        match self.spec.exposure.as_deref() {
            None | Some("direct") => active,
            Some("codemode" | "deferred") => true,
            Some(_) => false,
        }
    }

    async fn prepare_arguments_elsewhere(&self, args: &Value) -> Option<Result<Value, String>> {
        if !self.spec.prepare_arguments {
            return None;
        }
        let params = json!({"toolName": self.spec.name, "input": args});
        Some(match self.ext.call("prepare_arguments", params, None).await {
            Ok(answer) => Ok(answer.get("args").cloned().unwrap_or(Value::Null)),
            Err(CallError::Failed(message)) => Err(message),
            Err(CallError::Dead(message)) => Err(format!("Extension {} is not running: {message}", self.ext.name())),
            Err(CallError::Cancelled) => Err("Operation aborted".to_string()),
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let call_id = ctx.tool_call_id.clone();
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.ext.watch_tool(&call_id, tx);
        if let Some(runner) = &ctx.nested {
            let scope = super::nested::NestedScope { runner: runner.clone(), cancel: ctx.cancel.clone() };
            self.ext.watch_nested(&call_id, scope);
        }
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
                // pi's `result.usage`: the tool's own model usage (a sub-agent's), on its toolResult.
                let usage = super::tool_content::parse_usage(&result);
                // pi's `structuredContent`: on `tool_execution_end`, and a codemode call's value when typed.
                let structured_content = result.get("structuredContent").filter(|v| !v.is_null()).cloned();
                ToolOutput { content, details, is_error, terminate, usage, structured_content, ..Default::default() }
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
    /// The `tool_call` hooks, in load order.
    async fn check(
        &self,
        parent: Option<&str>,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        cancel: &CancellationToken,
    ) -> GateDecision {
        let mut input = args.clone();
        let mut replaced = false;
        for ext in self.extensions.subscribers("tool_call") {
            let mut params = json!({"toolName": tool_name, "toolCallId": tool_call_id, "input": input});
            if let Some(parent) = parent {
                params["parentToolCallId"] = json!(parent);
            }
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
        parent: Option<&str>,
        tool_call_id: &str,
        tool_name: &str,
        args: &Value,
        output: ToolOutput,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        if !self.extensions.listens("tool_result") {
            return output;
        }
        self.extensions.tool_result(parent, tool_call_id, tool_name, args, output, cancel).await
    }
}
