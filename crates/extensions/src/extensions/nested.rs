//! A running extension tool calling other tools (pi's `ctx.tools` and
//! `ctx.executeTool()`). While its `execute_tool` call runs, the tool's
//! call id maps to the agent's runner of nested calls; the extension asks
//! with `callableTools` `{toolCallId}` (synchronous: `{tools: [{name,
//! description, parameters}]}`) and `executeTool` `{toolCallId, name, args,
//! callId?}` (pi's `AgentToolCallOutcome`: `{toolCall, result, isError,
//! durationMs?}`); partial results of the nested tool come back as
//! `builtinToolUpdate` notifications for `callId`.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::tools::{NestedOutcome, NestedToolCalls, ToolOutput, ToolUpdate};

/// What a running tool's nested calls need: the runner and the call's token.
#[derive(Clone)]
pub struct NestedScope {
    pub runner: Arc<dyn NestedToolCalls>,
    pub cancel: CancellationToken,
}

/// `callableTools`: the tools the running tool may call (none outside a tool call).
pub(super) async fn callable(scope: Option<NestedScope>) -> Value {
    let tools = match scope {
        Some(scope) => scope.runner.callable().await,
        None => Vec::new(),
    };
    let tools: Vec<Value> = tools
        .into_iter()
        .map(|t| json!({"name": t.name, "label": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    json!({"tools": tools})
}

/// `executeTool`: run the call through the agent (`scope`: the calling
/// call's, if it is running); withdrawn when the extension aborts it, and
/// cancelled with the calling tool. `send_update` forwards partial results.
pub(super) async fn execute(
    scope: Option<NestedScope>,
    params: Value,
    withdrawn: CancellationToken,
    send_update: impl Fn(&Value, ToolUpdate),
) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let caller = params.get("toolCallId").and_then(Value::as_str).unwrap_or_default();
    let Some(scope) = scope else {
        // pi's answer where a context cannot call tools.
        let output = ToolOutput::error("Nested tool calls are not available in this context");
        let outcome =
            NestedOutcome { tool_call_id: format!("{caller}/0"), arguments: json!({}), output, duration_ms: None };
        return outcome_json(&name, &outcome);
    };
    let args = params.get("args").cloned().unwrap_or(Value::Null);
    let call_id = params.get("callId").cloned().unwrap_or(Value::Null);
    let cancel = scope.cancel.child_token();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let run = scope.runner.execute(caller, &name, args, cancel.clone(), Some(tx));
    tokio::pin!(run);
    let outcome = loop {
        tokio::select! {
            biased;
            Some(update) = rx.recv() => send_update(&call_id, update),
            _ = withdrawn.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
            outcome = &mut run => break outcome,
        }
    };
    // Updates sent just before the tool returned still precede the answer.
    while let Ok(update) = rx.try_recv() {
        send_update(&call_id, update);
    }
    outcome_json(&name, &outcome)
}

/// pi's `AgentToolCallOutcome`.
fn outcome_json(name: &str, outcome: &NestedOutcome) -> Value {
    let out = &outcome.output;
    let mut result = json!({"content": out.content});
    if let Some(details) = &out.details {
        result["details"] = details.clone();
    }
    if let Some(structured) = &out.structured_content {
        result["structuredContent"] = structured.clone();
    }
    if let Some(usage) = &out.usage {
        result["usage"] = serde_json::to_value(usage).unwrap_or(Value::Null);
    }
    let mut value = json!({
        "toolCall": {"type": "toolCall", "id": outcome.tool_call_id, "name": name, "arguments": outcome.arguments},
        "result": result,
        "isError": out.is_error,
    });
    if let Some(ms) = outcome.duration_ms {
        value["durationMs"] = json!(ms);
    }
    value
}
