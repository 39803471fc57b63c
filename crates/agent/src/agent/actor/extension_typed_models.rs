//! pi's `ctx.modelRegistry` calls of the classifier and image APIs
//! (`getModelsOfType`, `getAvailableOfType`, `getModelOfType`, `classify`,
//! `generateImages`), and its catalog calls (`refresh`, `getError`,
//! `getAll` (cached by the host against a revision, see
//! `listed_catalog`), `find`, another extension's registration, the
//! session's runtime key `setRuntimeKey`), served by the same host as codemode's `models.*`
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
        &mut self,
        params: &Value,
        cancel: &CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        let op = params.get("op").and_then(Value::as_str).unwrap_or_default();
        let args = params.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(answer) = self.catalog_call(op, &args).or_else(|| self.registry_call(op, &args)) {
            let _ = reply.send(Ok(answer));
            return;
        }
        let host = self.models.models_host();
        match host.registry_step(op, &args, cancel) {
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

    /// pi's `modelRegistry.refresh()`, `getError()`, `getAll()`, `find()`
    /// and another extension's registration (`getRegisteredProvider`:
    /// `{native, config}`, pi's runtime being shared): `{value}` or `{}`
    /// (undefined); `None` for the other ops.
    fn catalog_call(&mut self, op: &str, args: &[Value]) -> Option<Value> {
        let arg = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or_default();
        let value = match op {
            "refresh" => {
                // pi reads models.json and the stored logins again.
                let agent_dir = self.workspace.agent_dir().to_path_buf();
                self.models.sync_logins(&agent_dir);
                self.models.refresh_models(&agent_dir);
                Some(json!({"aborted": false}))
            }
            "getError" => self.models.registry().config_error().map(|e| json!(e)),
            // With a revision (`args[0]`, null: none yet) the host caches the list: `{revision, models}`, the models left out when unchanged.
            "getAll" if !args.is_empty() => {
                let (revision, models) = self.models.all_models_since(args[0].as_u64());
                let mut answer = json!({ "revision": revision });
                if let Some(models) = models {
                    answer["models"] = models.iter().map(super::extension_host_requests::model_json).collect();
                }
                Some(answer)
            }
            "getAll" => Some(Value::Array(
                self.models.all_models().iter().map(super::extension_host_requests::model_json).collect(),
            )),
            "find" => self.models.find_model(arg(0), arg(1)).map(|m| super::extension_host_requests::model_json(&m)),
            // `ctx.modelRegistry.runtime.setRuntimeApiKey(provider, key)` (`key` null: removed): the session's key.
            "setRuntimeKey" => {
                self.models.set_runtime_key(arg(0), args.get(1).and_then(Value::as_str).map(str::to_string));
                None
            }
            "getRegisteredProvider" => self.ext.registered_provider_kind(arg(0)).map(|native| {
                let config = if native {
                    Value::Null
                } else {
                    self.models.registry().extension_config(arg(0)).cloned().unwrap_or(Value::Null)
                };
                json!({"native": native, "config": config})
            }),
            _ => return None,
        };
        Some(value.map_or_else(|| json!({}), |value| json!({ "value": value })))
    }
}
