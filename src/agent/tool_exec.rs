//! Running one assistant message's tool calls: starts announced in call order,
//! executions concurrent, results returned (and announced) in call order.

use std::time::Instant;

use futures::future::join_all;
use serde_json::Map;
use tokio::sync::mpsc;

use super::internal::Emitter;
use crate::event::{AgentEvent, ToolResultPayload};
use crate::message::{ToolCall, ToolResultMessage, now_ms};
use crate::tools::{GateDecision, ToolContext, ToolOutput, ToolRegistry};

/// Execute `calls` and return their result messages in call order. The caller
/// emits the result messages (message_start/end) afterwards.
pub(crate) async fn execute_tool_calls(
    emitter: &Emitter,
    registry: &ToolRegistry,
    calls: &[ToolCall],
    base: &ToolContext,
) -> Vec<ToolResultMessage> {
    let mut prepared = Vec::with_capacity(calls.len());
    for call in calls {
        emitter
            .emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            })
            .await;
        let checked = match registry.prepare(&call.name, &call.arguments) {
            Ok(tool) => gate(base, call).await.map(|args| (tool, args)),
            Err(output) => Err(output),
        };
        if let Err(output) = &checked {
            emit_end(emitter, call, output).await;
        }
        prepared.push(checked);
    }

    let runs = calls.iter().zip(prepared).map(|(call, prepared)| async move {
        let (tool, args) = match prepared {
            Ok(prepared) => prepared,
            Err(output) => return (output, None),
        };
        let started = Instant::now();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut ctx = base.clone();
        ctx.updates = Some(tx);
        ctx.tool_call_id = call.id.clone();
        let run = tool.execute(args, ctx);
        tokio::pin!(run);
        let emit_update = |update: crate::tools::ToolUpdate| {
            emitter.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
                partial_result: ToolResultPayload { content: update.content, details: update.details },
            })
        };
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                Some(update) = rx.recv() => emit_update(update).await,
            }
        };
        // Updates sent just before the tool returned still precede its end.
        while let Ok(update) = rx.try_recv() {
            emit_update(update).await;
        }
        emit_end(emitter, call, &output).await;
        (output, Some(started.elapsed().as_millis() as u64))
    });
    let outputs = join_all(runs).await;

    calls
        .iter()
        .zip(outputs)
        .map(|(call, (output, _duration))| ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            usage: output.usage,
            is_error: output.is_error,
            timestamp: now_ms(),
            extra: Map::new(),
        })
        .collect()
}

/// The `tool_call` gate (extension hooks): the arguments to run with, or the
/// error result of a blocked call.
async fn gate(base: &ToolContext, call: &ToolCall) -> Result<serde_json::Value, ToolOutput> {
    let Some(gate) = &base.gate else { return Ok(call.arguments.clone()) };
    match gate.check(&call.id, &call.name, &call.arguments, &base.cancel).await {
        GateDecision::Allow { args } => Ok(args.unwrap_or_else(|| call.arguments.clone())),
        GateDecision::Block { reason } => Err(ToolOutput::error(reason)),
    }
}

async fn emit_end(emitter: &Emitter, call: &ToolCall, output: &ToolOutput) {
    emitter
        .emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: ToolResultPayload { content: output.content.clone(), details: output.details.clone() },
            is_error: output.is_error,
        })
        .await;
}
