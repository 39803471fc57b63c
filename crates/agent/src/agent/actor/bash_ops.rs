//! The RPC `bash` command: one job at a time, first offered to the
//! extensions' `user_bash` hooks (which may answer with the result, or with
//! their own `exec` to run it through), its output streamed as
//! `bash_execution_update`, its result held for the conversation while a run streams.

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::Agent;
use crate::agent::internal::Internal;
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::extensions::hooks::BashDecision;
use crate::message::{AgentMessage, BashExecutionMessage, now_ms};
use crate::op::{BashResult, RequestTag};
use crate::tools::ToolContext;

/// A `user_bash` handler's `{output, exitCode, cancelled, truncated, fullOutputPath?}` (checked by the host).
fn extension_result(result: &Value) -> BashResult {
    BashResult {
        output: result.get("output").and_then(Value::as_str).unwrap_or_default().to_string(),
        exit_code: result.get("exitCode").and_then(Value::as_i64).map(|c| i32::try_from(c).unwrap_or(i32::MAX)),
        cancelled: result.get("cancelled").and_then(Value::as_bool).unwrap_or(false),
        truncated: result.get("truncated").and_then(Value::as_bool).unwrap_or(false),
        full_output_path: result.get("fullOutputPath").and_then(Value::as_str).map(str::to_string),
    }
}

impl Agent {
    pub(super) async fn bash(&mut self, tag: Option<RequestTag>, command: String, exclude_from_context: bool) {
        let Some(cancel) = self.activity.begin_bash() else {
            self.reply(tag, Err(CoreError::busy("A bash command is already running"))).await;
            return;
        };
        let emitter = self.channels.emitter();
        let cwd = self.workspace.cwd().to_path_buf();
        let temp_dir = self.workspace.temp_dir().to_path_buf();
        let ToolContext { env, shell, .. } = self.tool_context();
        let hooks = self.ext.handle().listens("user_bash").then(|| self.ext.handle().clone());
        let event = json!({
            "type": "user_bash",
            "command": command,
            "excludeFromContext": exclude_from_context,
            "cwd": cwd.display().to_string(),
        });
        tokio::spawn(async move {
            let decision = match &hooks {
                Some(extensions) => extensions.user_bash(event).await,
                None => BashDecision::Local,
            };
            let result = match &decision {
                BashDecision::Failed(error) => Err(error.clone()),
                BashDecision::Result(result) => Ok(extension_result(result)),
                BashDecision::Local | BashDecision::Operations(_) => {
                    let (chunk_tx, mut chunk_rx) = mpsc::unbounded_channel::<String>();
                    let forward = {
                        let emitter = emitter.clone();
                        tokio::spawn(async move {
                            while let Some(delta) = chunk_rx.recv().await {
                                emitter.emit(AgentEvent::BashExecutionUpdate { request: tag, delta }).await;
                            }
                        })
                    };
                    let ops = match &decision {
                        BashDecision::Operations(ops) => Some(ops.operations()),
                        _ => None,
                    };
                    let on_chunk = move |chunk: &str| {
                        let _ = chunk_tx.send(chunk.to_string());
                    };
                    let runner = crate::tools::bash::CommandRunner { shell: &shell, ops };
                    let result =
                        crate::tools::bash::run_command_with(&command, &cwd, &env, &temp_dir, cancel, runner, on_chunk)
                            .await;
                    let _ = forward.await;
                    result
                }
            };
            // The extension's operations are released once the command is done.
            drop(decision);
            let outcome = result.map(|result| {
                let message = AgentMessage::BashExecution(BashExecutionMessage {
                    command,
                    output: result.output.clone(),
                    exit_code: result.exit_code,
                    cancelled: result.cancelled,
                    truncated: result.truncated,
                    full_output_path: result.full_output_path.clone(),
                    exclude_from_context,
                    timestamp: now_ms(),
                    extra: Map::new(),
                });
                (result, message)
            });
            emitter.send(Internal::BashFinished { tag, outcome: Box::new(outcome) }).await;
        });
    }
}
