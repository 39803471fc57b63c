//! pi's `ctx.modelRegistry` calls of the classifier and image APIs
//! (`getModelsOfType`, `getAvailableOfType`, `getModelOfType`, `classify`,
//! `generateImages`), served by the same host as codemode's `models.*`
//! (`pi_mcp::codemode::models`): the model is resolved by provider and id
//! in the session's catalog, with its credentials. A model call runs aside
//! from the actor; the answer is `{value}`.

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Agent;
use pi_mcp::codemode::models::ModelStep;

impl Agent {
    /// Serve `{op, args}`; `reply` gets `{value}` (no `value`: undefined) or pi's error text.
    pub(super) fn extension_models_call(
        &self,
        params: &Value,
        cancel: &CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        let op = params.get("op").and_then(Value::as_str).unwrap_or_default();
        let args = params.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(answer) = self.registry_call(op, &args) {
            let _ = reply.send(Ok(answer));
            return;
        }
        let host = self.models.models_host();
        match host.step(op, &args, cancel) {
            ModelStep::Done(result) => {
                let _ = reply.send(result.map(|value| value.map_or_else(|| json!({}), |v| json!({"value": v}))));
            }
            ModelStep::Call(call, early) => {
                tokio::spawn(async move {
                    let result = match early {
                        Some(result) => result,
                        None => call.run().await,
                    };
                    let _ = reply.send(Ok(json!({"value": result})));
                });
            }
        }
    }
}
