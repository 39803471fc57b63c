//! Running one assistant message's tool calls: starts announced in call order,
//! executions concurrent, results returned (and announced) in call order.
//! The calls a tool makes to other tools go through the same steps
//! ([`nested_calls`](super::nested_calls)).

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::internal::Emitter;
use super::nested_calls::NestedRunner;
use crate::event::{AgentEvent, ToolResultPayload};
use crate::message::{ToolCall, ToolResultMessage, now_ms};
use crate::tools::{GateDecision, Tool, ToolContext, ToolOutput, ToolRegistry, ToolUpdate};

/// How one batch of the model's tool calls ended.
pub(crate) struct Batch {
    /// The result messages, in call order.
    pub results: Vec<ToolResultMessage>,
    /// Every result asked to end the run there (`terminate`).
    pub terminate: bool,
    /// The result messages were announced (`message_start`/`end`) as each
    /// call ended (a sequential batch); otherwise the caller announces them.
    pub announced: bool,
}

/// Execute `calls` and return their result messages in call order.
/// `cut_off`: the message stopped at the output token limit, so no call of
/// it is run. As pi: when a called tool is `executionMode: "sequential"`,
/// each call starts, runs, ends and has its result message announced before
/// the next starts; otherwise every call starts (and is checked) in order,
/// then they run concurrently.
pub(crate) async fn execute_tool_calls(
    emitter: &Emitter,
    registry: &ToolRegistry,
    calls: &[ToolCall],
    base: &ToolContext,
    cut_off: bool,
) -> Batch {
    let nested = NestedRunner::new(emitter.clone(), base.clone());
    let mut base = base.clone();
    base.nested = Some(nested.clone());
    let base = &base;
    let check = |call: &ToolCall| {
        let call = call.clone();
        async move {
            if base.gate.is_some() {
                // pi's `tool_call` handlers run after its `tool_execution_start` ones.
                emitter.flush().await;
            }
            let checked = match incomplete(&call, cut_off) {
                Some(refused) => Err(refused),
                None => match registry.prepare_with_hooks(&call.name, &call.arguments).await {
                    Ok((tool, prepared)) => {
                        let call =
                            prepared.map_or_else(|| call.clone(), |arguments| ToolCall { arguments, ..call.clone() });
                        gate(base, &call, None).await.map(|args| (tool, args))
                    }
                    Err(output) => Err(output),
                },
            };
            if let Err(output) = &checked {
                emit_end(emitter, &call, output, None, None).await;
            }
            checked
        }
    };
    let sequential = calls.iter().any(|c| registry.get(&c.name).is_some_and(|t| t.sequential()));
    if sequential {
        let mut results = Vec::with_capacity(calls.len());
        let mut terminate = !calls.is_empty();
        for call in calls {
            emit_start(emitter, call, None).await;
            let (output, duration_ms) = match check(call).await {
                Ok((tool, args)) => run_prepared(emitter, tool, args, call, base, None, None).await,
                Err(output) => (output, None),
            };
            terminate &= output.terminate;
            let message = result_message(&nested, call, output, duration_ms);
            let announced = Box::new(crate::message::AgentMessage::ToolResult(message.clone()));
            emitter.emit(AgentEvent::MessageStart { message: announced.clone() }).await;
            emitter.emit(AgentEvent::MessageEnd { message: announced }).await;
            // As the `message_end` handlers left it.
            let message = match emitter.replaced(crate::message::AgentMessage::ToolResult(message.clone())) {
                crate::message::AgentMessage::ToolResult(replaced) => replaced,
                _ => message,
            };
            results.push(message);
        }
        return Batch { results, terminate, announced: true };
    }
    let mut prepared = Vec::with_capacity(calls.len());
    for call in calls {
        emit_start(emitter, call, None).await;
        prepared.push(check(call).await);
    }

    let runs = calls.iter().zip(prepared).map(|(call, prepared)| async move {
        match prepared {
            Ok((tool, args)) => run_prepared(emitter, tool, args, call, base, None, None).await,
            Err(output) => (output, None),
        }
    });
    let outputs = join_all(runs).await;
    let terminate = !outputs.is_empty() && outputs.iter().all(|(output, _)| output.terminate);
    let results = calls
        .iter()
        .zip(outputs)
        .map(|(call, (output, duration_ms))| result_message(&nested, call, output, duration_ms))
        .collect();
    Batch { results, terminate, announced: false }
}

/// The result message of the model's call `call`, with what its own calls
/// to other tools leave on it (their record, their usage added to its own).
fn result_message(
    nested: &NestedRunner,
    call: &ToolCall,
    output: ToolOutput,
    duration_ms: Option<u64>,
) -> ToolResultMessage {
    let (nested_calls, nested_usage) = nested.take(&call.id);
    let usage = match (output.usage, nested_usage) {
        (Some(mut own), Some(nested)) => {
            own.add(&nested);
            Some(own)
        }
        (own, nested) => own.or(nested),
    };
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: output.content,
        details: output.details,
        usage,
        is_error: output.is_error,
        duration_ms,
        timestamp: now_ms(),
        nested_calls,
        extra: Map::new(),
    }
}

/// Run a call that passed its checks: its updates become
/// `tool_execution_update` events (and go to `forward`, the caller of a
/// nested call), then the `tool_result` hooks, then `tool_execution_end`.
/// `parent`: the call whose tool made this one. Returns the output and how
/// long the tool ran.
pub(super) async fn run_prepared(
    emitter: &Emitter,
    tool: Arc<dyn Tool>,
    args: Value,
    call: &ToolCall,
    base: &ToolContext,
    parent: Option<&str>,
    forward: Option<&mpsc::UnboundedSender<ToolUpdate>>,
) -> (ToolOutput, Option<u64>) {
    let started = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut ctx = base.clone();
    ctx.updates = Some(tx);
    ctx.tool_call_id = call.id.clone();
    let ran_with = base.gate.as_ref().map(|_| args.clone());
    let run = tool.execute(args, ctx);
    tokio::pin!(run);
    let emit_update = |update: ToolUpdate| {
        if let Some(forward) = forward {
            let _ = forward.send(update.clone());
        }
        emitter.emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Box::new(call.arguments.clone()),
            partial_result: Box::new(ToolResultPayload {
                content: update.content,
                details: update.details,
                structured_content: None,
                is_error: false,
                usage: None,
                terminate: false,
            }),
            parent_tool_call_id: parent.map(str::to_string),
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
        (Some(gate), Some(args)) => gate.after(parent, &call.id, &call.name, args, output, &base.cancel).await,
        _ => output,
    };
    // As pi, the images the result carries (an extension's or MCP tool's, or
    // put there by a hook) are prepared once the hooks ran.
    let mut output = output;
    super::input_images::tool_result_prepared(&mut output.content, base.result_image_resize).await;
    emit_end(emitter, call, &output, Some(duration_ms), parent).await;
    (output, Some(duration_ms))
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
/// `parent`: the call whose tool made this one.
pub(super) async fn gate(base: &ToolContext, call: &ToolCall, parent: Option<&str>) -> Result<Value, ToolOutput> {
    let args = match &base.gate {
        None => call.arguments.clone(),
        Some(gate) => match gate.check(parent, &call.id, &call.name, &call.arguments, &base.cancel).await {
            GateDecision::Allow { args } => args.unwrap_or_else(|| call.arguments.clone()),
            GateDecision::Block { reason } => return Err(ToolOutput::error(reason)),
        },
    };
    if let Some(client) = &base.client {
        client.approvals.check(client, &call.id, &call.name, &args, &base.cancel).await.map_err(ToolOutput::error)?;
    }
    Ok(args)
}

pub(super) async fn emit_start(emitter: &Emitter, call: &ToolCall, parent: Option<&str>) {
    emitter
        .emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Box::new(call.arguments.clone()),
            parent_tool_call_id: parent.map(str::to_string),
        })
        .await;
}

pub(super) async fn emit_end(
    emitter: &Emitter,
    call: &ToolCall,
    output: &ToolOutput,
    duration_ms: Option<u64>,
    parent: Option<&str>,
) {
    emitter
        .emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: Box::new(ToolResultPayload {
                content: output.content.clone(),
                details: output.details.clone(),
                structured_content: output.structured_content.clone().map(Box::new),
                is_error: output.result_is_error,
                usage: output.usage.clone().map(Box::new),
                terminate: output.terminate,
            }),
            is_error: output.is_error,
            duration_ms,
            parent_tool_call_id: parent.map(str::to_string),
        })
        .await;
}
