//! Running one assistant message's tool calls: starts announced in call order,
//! executions concurrent, results returned (and announced) in call order.

use std::time::Instant;

use futures::future::join_all;
use serde_json::Map;
use tokio::sync::mpsc;

use super::stream::Emitter;
use crate::event::{AgentEvent, ToolResultPayload};
use crate::message::{ToolCall, ToolResultMessage, now_ms};
use crate::tools::{ToolContext, ToolOutput, ToolRegistry};

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
        match registry.prepare(&call.name, &call.arguments) {
            Ok(tool) => prepared.push(Ok(tool)),
            Err(output) => {
                emit_end(emitter, call, &output).await;
                prepared.push(Err(output));
            }
        }
    }

    let runs = calls.iter().zip(prepared).map(|(call, prepared)| async move {
        let tool = match prepared {
            Ok(tool) => tool,
            Err(output) => return (output, None),
        };
        let started = Instant::now();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut ctx = base.clone();
        ctx.updates = Some(tx);
        let run = tool.execute(call.arguments.clone(), ctx);
        tokio::pin!(run);
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                Some(update) = rx.recv() => {
                    emitter.emit(AgentEvent::ToolExecutionUpdate {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        args: call.arguments.clone(),
                        partial_result: ToolResultPayload { content: update.content, details: update.details },
                    }).await;
                }
            }
        };
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
