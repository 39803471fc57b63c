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

/// Execute `calls` and return their result messages in call order, and
/// whether every result asked to end the run there (`terminate`). The caller
/// emits the result messages (message_start/end) afterwards. `cut_off`: the
/// message stopped at the output token limit, so no call of it is run.
pub(crate) async fn execute_tool_calls(
    emitter: &Emitter,
    registry: &ToolRegistry,
    calls: &[ToolCall],
    base: &ToolContext,
    cut_off: bool,
) -> (Vec<ToolResultMessage>, bool) {
    let mut prepared = Vec::with_capacity(calls.len());
    for call in calls {
        emitter
            .emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            })
            .await;
        let checked = match incomplete(call, cut_off) {
            Some(refused) => Err(refused),
            None => match registry.prepare(&call.name, &call.arguments) {
                Ok(tool) => gate(base, call).await.map(|args| (tool, args)),
                Err(output) => Err(output),
            },
        };
        if let Err(output) = &checked {
            emit_end(emitter, call, output, None).await;
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
        let ran_with = base.gate.as_ref().map(|_| args.clone());
        let run = tool.execute(args, ctx);
        tokio::pin!(run);
        let emit_update = |update: crate::tools::ToolUpdate| {
            emitter.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
                partial_result: ToolResultPayload {
                    content: update.content,
                    details: update.details,
                    structured_content: None,
                    is_error: false,
                },
            })
        };
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                Some(update) = rx.recv() => emit_update(update).await,
            }
        };
        // The run itself, as pi times it (not the hooks after it).
        let duration_ms = started.elapsed().as_millis() as u64;
        // Updates sent just before the tool returned still precede its end.
        while let Ok(update) = rx.try_recv() {
            emit_update(update).await;
        }
        let output = match (&base.gate, &ran_with) {
            (Some(gate), Some(args)) => gate.after(&call.id, &call.name, args, output, &base.cancel).await,
            _ => output,
        };
        emit_end(emitter, call, &output, Some(duration_ms)).await;
        (output, Some(duration_ms))
    });
    let outputs = join_all(runs).await;
    let terminate = !outputs.is_empty() && outputs.iter().all(|(output, _)| output.terminate);

    let results = calls
        .iter()
        .zip(outputs)
        .map(|(call, (output, duration_ms))| ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            usage: output.usage,
            is_error: output.is_error,
            duration_ms,
            timestamp: now_ms(),
            extra: Map::new(),
        })
        .collect();
    (results, terminate)
}

/// The error result of a call whose arguments may not have arrived whole (the
/// texts are pi 1.6.0's): it is never executed, and the model is told why.
fn incomplete(call: &ToolCall, cut_off: bool) -> Option<ToolOutput> {
    if cut_off {
        return Some(ToolOutput::error(format!(
            "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be \
             truncated. Re-issue the tool call with complete arguments.",
            call.name
        )));
    }
    let error = call.arguments_error.as_deref()?;
    Some(ToolOutput::error(format!("Invalid arguments for tool \"{}\": {error}", call.name)))
}

/// The `tool_call` gate (extension hooks), then the approval gate (the
/// user sees the arguments the call would run with): the arguments to run
/// with, or the error result of a blocked or rejected call.
async fn gate(base: &ToolContext, call: &ToolCall) -> Result<serde_json::Value, ToolOutput> {
    let args = match &base.gate {
        None => call.arguments.clone(),
        Some(gate) => match gate.check(&call.id, &call.name, &call.arguments, &base.cancel).await {
            GateDecision::Allow { args } => args.unwrap_or_else(|| call.arguments.clone()),
            GateDecision::Block { reason } => return Err(ToolOutput::error(reason)),
        },
    };
    if let Some(client) = &base.client {
        client.approvals.check(client, &call.id, &call.name, &args, &base.cancel).await.map_err(ToolOutput::error)?;
    }
    Ok(args)
}

async fn emit_end(emitter: &Emitter, call: &ToolCall, output: &ToolOutput, duration_ms: Option<u64>) {
    emitter
        .emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: ToolResultPayload {
                content: output.content.clone(),
                details: output.details.clone(),
                structured_content: output.structured_content.clone(),
                is_error: output.result_is_error,
            },
            is_error: output.is_error,
            duration_ms,
        })
        .await;
}
