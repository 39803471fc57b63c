//! The RPC `bash` command: one job at a time, its output streamed as
//! `bash_execution_update`, its result held for the conversation while a run streams.

use serde_json::Map;
use tokio::sync::mpsc;

use super::Agent;
use crate::agent::internal::Internal;
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::message::{AgentMessage, BashExecutionMessage, now_ms};
use crate::op::RequestTag;

impl Agent {
    pub(super) async fn bash(&mut self, tag: Option<RequestTag>, command: String, exclude_from_context: bool) {
        let Some(cancel) = self.activity.begin_bash() else {
            self.reply(tag, Err(CoreError::busy("A bash command is already running"))).await;
            return;
        };
        let emitter = self.channels.emitter();
        let cwd = self.workspace.cwd().to_path_buf();
        let temp_dir = self.workspace.temp_dir().to_path_buf();
        let env = self.tool_context().env;
        tokio::spawn(async move {
            let (chunk_tx, mut chunk_rx) = mpsc::unbounded_channel::<String>();
            let forward = {
                let emitter = emitter.clone();
                tokio::spawn(async move {
                    while let Some(delta) = chunk_rx.recv().await {
                        emitter.emit(AgentEvent::BashExecutionUpdate { request: tag, delta }).await;
                    }
                })
            };
            let result =
                crate::tools::bash::run_command(&command, &cwd, &env, &temp_dir, cancel, move |chunk: &str| {
                    let _ = chunk_tx.send(chunk.to_string());
                })
                .await;
            let _ = forward.await;
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
