//! Calls a running tool makes to other tools (pi's `ctx.tools` and
//! `ctx.executeTool()`): each goes through validation, the `tool_call` and
//! `tool_result` hooks and `tool_execution_*` events like a call of the
//! model, with the calling call as `parentToolCallId` and the id
//! `<calling id>/<n>`. They add nothing to the transcript: a bounded record
//! of them (no results) and their usage go on the calling call's result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::internal::{Callable, Emitter, Internal};
use super::tool_exec::{emit_end, emit_start, gate, run_prepared};
use crate::message::{ContentBlock, NestedCallStatus, NestedToolCallRecord, NestedToolCalls, ToolCall, Usage};
use crate::provider::ToolSpec;
use crate::tools::{NestedOutcome, NestedToolCalls as Runner, ToolContext, ToolOutput, ToolRegistry, ToolUpdate};

/// pi's bounds of the record: calls kept, argument bytes kept per call and
/// per result, characters of an error kept.
const MAX_CALLS: usize = 256;
const MAX_ARGUMENT_BYTES_PER_CALL: usize = 8 * 1024;
const MAX_ARGUMENT_BYTES_TOTAL: usize = 32 * 1024;
const MAX_ERROR_CHARS: usize = 500;

/// The nested calls of one batch of the model's tool calls.
pub(crate) struct NestedRunner {
    emitter: Emitter,
    /// The batch's tool context (without `nested`: each call gets this runner).
    base: ToolContext,
    me: Weak<NestedRunner>,
    /// By the id of a calling call: the model's calls and the nested calls
    /// still running (their own calls are recorded on the same record).
    scopes: Mutex<HashMap<String, Scope>>,
    /// Held by a nested call of an `executionMode: "sequential"` tool (and
    /// by the calls it makes in turn), so such calls run one at a time.
    queue: Arc<tokio::sync::Mutex<()>>,
}

struct Scope {
    record: Arc<Mutex<Recorder>>,
    next: u32,
    /// This call, or one that made it, holds the queue.
    holds_queue: bool,
}

/// The record of one model call's nested calls, at every depth.
#[derive(Default)]
struct Recorder {
    calls: Vec<NestedToolCallRecord>,
    started: HashMap<usize, Instant>,
    dropped: bool,
    argument_bytes: usize,
    usage: Option<Usage>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Recorder {
    /// Note a call as it starts; `None` when there is no room left for it.
    fn start(&mut self, id: &str, name: &str, args: &Value) -> Option<usize> {
        if self.calls.len() >= MAX_CALLS {
            self.dropped = true;
            return None;
        }
        let bytes = serde_json::to_string(args).map(|json| json.len()).unwrap_or(0);
        let keep = bytes <= MAX_ARGUMENT_BYTES_PER_CALL && self.argument_bytes + bytes <= MAX_ARGUMENT_BYTES_TOTAL;
        if keep {
            self.argument_bytes += bytes;
        } else {
            self.dropped = true;
        }
        self.calls.push(NestedToolCallRecord {
            id: id.to_string(),
            name: name.to_string(),
            status: NestedCallStatus::Unfinished,
            arguments: keep.then(|| args.clone()),
            arguments_bytes: (!keep).then_some(bytes as u64),
            duration_ms: None,
            error: None,
        });
        let index = self.calls.len() - 1;
        self.started.insert(index, Instant::now());
        Some(index)
    }

    fn finish(&mut self, index: Option<usize>, output: &ToolOutput) {
        if let Some(usage) = &output.usage {
            match &mut self.usage {
                Some(total) => total.add(usage),
                None => self.usage = Some(usage.clone()),
            }
        }
        let Some(index) = index else { return };
        let started = self.started.remove(&index);
        let Some(record) = self.calls.get_mut(index) else { return };
        record.status = if output.is_error { NestedCallStatus::Error } else { NestedCallStatus::Ok };
        record.duration_ms = started.map(|at| at.elapsed().as_millis() as u64);
        let text = text_of(output);
        if output.is_error && !text.is_empty() {
            record.error = Some(text.chars().take(MAX_ERROR_CHARS).collect());
        }
    }

    fn snapshot(&self) -> Option<NestedToolCalls> {
        if self.calls.is_empty() && !self.dropped {
            return None;
        }
        let finished = self.calls.iter().all(|c| c.status != NestedCallStatus::Unfinished);
        Some(NestedToolCalls { calls: self.calls.clone(), complete: !self.dropped && finished })
    }
}

/// The text blocks of a result, one a line.
fn text_of(output: &ToolOutput) -> String {
    let texts: Vec<&str> = output
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

impl NestedRunner {
    pub(crate) fn new(emitter: Emitter, mut base: ToolContext) -> Arc<Self> {
        base.nested = None;
        Arc::new_cyclic(|me| NestedRunner {
            emitter,
            base,
            me: me.clone(),
            scopes: Mutex::new(HashMap::new()),
            queue: Arc::default(),
        })
    }

    /// The record of the nested calls the model's call `tool_call_id` made,
    /// and their summed usage (none when it made none).
    pub(crate) fn take(&self, tool_call_id: &str) -> (Option<NestedToolCalls>, Option<Usage>) {
        match lock(&self.scopes).remove(tool_call_id) {
            Some(scope) => {
                let record = lock(&scope.record);
                (record.snapshot(), record.usage.clone())
            }
            None => (None, None),
        }
    }

    /// The tools a tool may call, as the agent has them now (an extension may have changed them).
    async fn callable_tools(&self) -> Option<Callable> {
        let (reply, answer) = oneshot::channel();
        self.emitter.send(Internal::CallableTools { reply }).await;
        answer.await.ok()
    }

    /// The call's checks (lookup and validation, the `tool_call` hooks,
    /// approval): the tool and the arguments to run it with.
    async fn check(
        &self,
        registry: Option<&ToolRegistry>,
        call: &ToolCall,
        ctx: &ToolContext,
        caller_id: &str,
    ) -> Result<(Arc<dyn crate::tools::Tool>, Value), ToolOutput> {
        let registry = registry.ok_or_else(|| ToolOutput::error("The agent has shut down"))?;
        let (tool, prepared) = registry.prepare_with_hooks(&call.name, &call.arguments).await?;
        let call = &prepared.map_or_else(|| call.clone(), |arguments| ToolCall { arguments, ..call.clone() });
        let args = gate(ctx, call, Some(caller_id)).await?;
        Ok((tool, args))
    }
}

#[async_trait]
impl Runner for NestedRunner {
    async fn callable(&self) -> Vec<ToolSpec> {
        self.callable_tools().await.map(|Callable(_, specs)| specs).unwrap_or_default()
    }

    async fn execute(
        &self,
        caller_id: &str,
        name: &str,
        args: Value,
        cancel: CancellationToken,
        updates: Option<mpsc::UnboundedSender<ToolUpdate>>,
    ) -> NestedOutcome {
        let args = if args.is_null() { Value::Object(Default::default()) } else { args };
        let (id, record, index, caller_holds) = {
            let mut scopes = lock(&self.scopes);
            let new_scope = || Scope { record: Arc::default(), next: 1, holds_queue: false };
            let scope = scopes.entry(caller_id.to_string()).or_insert_with(new_scope);
            let id = format!("{caller_id}/{}", scope.next);
            scope.next += 1;
            let (record, caller_holds) = (scope.record.clone(), scope.holds_queue);
            let index = lock(&record).start(&id, name, &args);
            scopes.insert(id.clone(), Scope { record: record.clone(), next: 1, holds_queue: caller_holds });
            (id, record, index, caller_holds)
        };
        let call = ToolCall {
            id: id.clone(),
            name: name.to_string(),
            arguments: args,
            thought_signature: None,
            arguments_error: None,
        };
        emit_start(&self.emitter, &call, Some(caller_id)).await;
        let mut ctx = self.base.clone();
        ctx.cancel = cancel;
        ctx.nested = self.me.upgrade().map(|me| me as Arc<dyn Runner>);
        let tools = self.callable_tools().await;
        // pi: a sequential tool's nested call waits for the queue, unless a call that made it holds it.
        let sequential = tools.as_ref().and_then(|t| t.0.get(name)).is_some_and(|t| t.sequential());
        let _turn = if sequential && !caller_holds {
            if let Some(scope) = lock(&self.scopes).get_mut(&id) {
                scope.holds_queue = true;
            }
            Some(self.queue.clone().lock_owned().await)
        } else {
            None
        };
        let (output, duration_ms) = match self.check(tools.as_ref().map(|t| &t.0), &call, &ctx, caller_id).await {
            Ok((tool, args)) => {
                run_prepared(&self.emitter, tool, args, &call, &ctx, Some(caller_id), updates.as_ref()).await
            }
            Err(output) => {
                emit_end(&self.emitter, &call, &output, None, Some(caller_id)).await;
                (output, None)
            }
        };
        lock(&self.scopes).remove(&id);
        lock(&record).finish(index, &output);
        NestedOutcome { tool_call_id: id, arguments: call.arguments, output, duration_ms }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failed(text: &str) -> ToolOutput {
        ToolOutput::error(text)
    }

    #[test]
    fn the_record_keeps_calls_in_order_with_their_status_and_error() {
        let mut record = Recorder::default();
        assert!(record.snapshot().is_none(), "no call, no record");
        let first = record.start("c/1", "bash", &json!({"command": "ls"}));
        let second = record.start("c/2", "nope", &json!({}));
        assert!(!record.snapshot().unwrap().complete, "a running call leaves the record incomplete");
        record.finish(first, &ToolOutput::text("ok"));
        record.finish(second, &failed(&"x".repeat(600)));
        let snapshot = record.snapshot().unwrap();
        assert!(snapshot.complete);
        assert_eq!(snapshot.calls[0].status, NestedCallStatus::Ok);
        assert_eq!(snapshot.calls[0].arguments, Some(json!({"command": "ls"})));
        assert_eq!(snapshot.calls[0].error, None);
        assert_eq!(snapshot.calls[1].status, NestedCallStatus::Error);
        assert_eq!(snapshot.calls[1].error.as_deref().map(str::len), Some(MAX_ERROR_CHARS));
        assert!(snapshot.calls.iter().all(|c| c.duration_ms.is_some()));
    }

    #[test]
    fn large_arguments_and_calls_past_the_limit_are_left_out() {
        let mut record = Recorder::default();
        let big = json!({"text": "a".repeat(MAX_ARGUMENT_BYTES_PER_CALL)});
        let index = record.start("c/1", "write", &big);
        record.finish(index, &ToolOutput::text("ok"));
        let call = &record.snapshot().unwrap().calls[0];
        assert_eq!(call.arguments, None);
        assert_eq!(call.arguments_bytes, Some(serde_json::to_string(&big).unwrap().len() as u64));
        assert!(!record.snapshot().unwrap().complete);

        let mut record = Recorder::default();
        for n in 0..MAX_CALLS {
            let index = record.start(&format!("c/{n}"), "ls", &json!({}));
            record.finish(index, &ToolOutput::text("ok"));
        }
        assert!(record.snapshot().unwrap().complete);
        assert!(record.start("c/x", "ls", &json!({})).is_none());
        let snapshot = record.snapshot().unwrap();
        assert_eq!((snapshot.calls.len(), snapshot.complete), (MAX_CALLS, false));
    }

    #[test]
    fn usage_of_nested_results_adds_up() {
        let mut record = Recorder::default();
        for n in 0..2 {
            let index = record.start(&format!("c/{n}"), "ask", &json!({}));
            let usage = Usage { input: 10, output: 5, ..Default::default() };
            record.finish(index, &ToolOutput { usage: Some(usage), ..ToolOutput::text("ok") });
        }
        let usage = record.usage.unwrap();
        assert_eq!((usage.input, usage.output), (20, 10));
    }
}
