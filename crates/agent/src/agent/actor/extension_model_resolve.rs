//! pi's `ModelRuntime.resolveModel(model, messages, options)` asked by an
//! extension (the `models` request's op `resolveModel`): the extension that
//! registered the virtual model is asked for its route (`route_model` with
//! `manual: true`: the caller's `state`, nothing stored on the branch), and
//! the answer is checked as pi's runtime checks it (a physical catalog model
//! whose provider has credentials, its thinking level clamped to that
//! model). The router may run in another extension's process: the request
//! goes there as the session's own routing does (virtual_route.rs).

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::extensions::CallError;
use crate::model::ThinkingLevel;

impl Agent {
    /// Serve `{op: "resolveModel", args: [model, messages, options]}`;
    /// `reply` gets `{value: {model, thinkingLevel, state}}` or pi's error text.
    pub(super) fn start_model_resolve(
        &self,
        params: &Value,
        cancel: CancellationToken,
        reply: oneshot::Sender<Result<Value, String>>,
    ) {
        let args = params.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
        let (model, messages, options) = (arg(0), arg(1), arg(2));
        let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let (provider, id) = (text(&model, "provider"), text(&model, "id"));
        let name = format!("Virtual model {provider}/{id}");
        let Some(owner) = self.ext.virtual_model_owner(&provider, &id) else {
            let _ = reply.send(Err(format!("{name} is not registered.")));
            return;
        };
        let requested = text(&options, "thinkingLevel");
        let mut route = json!({
            "provider": provider,
            "id": id,
            "reason": text(&options, "reason"),
            "thinkingLevel": requested,
            "messages": if messages.is_array() { messages } else { json!([]) },
            "manual": true,
        });
        for key in ["failed", "state"] {
            if let Some(value) = options.get(key).filter(|v| !v.is_null()) {
                route[key] = value.clone();
            }
        }
        let mut registry = self.models.registry().clone();
        tokio::spawn(async move {
            let answer = match owner.call("route_model", route, Some(&cancel)).await {
                Ok(answer) => answer,
                Err(CallError::Failed(error) | CallError::Dead(error)) => {
                    let _ = reply.send(Err(error));
                    return;
                }
                Err(CallError::Cancelled) => {
                    let _ = reply.send(Err("Request was aborted".to_string()));
                    return;
                }
            };
            let field = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let routed = format!("{name} routed to {}/{}", field("provider"), field("id"));
            let Some(target) = registry.find_physical(&field("provider"), &field("id")) else {
                let _ = reply.send(Err(format!("{routed}, which is not a physical model.")));
                return;
            };
            if !registry.has_credentials(&target) {
                let _ = reply.send(Err(format!("{routed}, which has no credentials.")));
                return;
            }
            let wanted = answer.get("thinkingLevel").and_then(Value::as_str).or(Some(requested.as_str()));
            let level = wanted.and_then(|l| l.parse::<ThinkingLevel>().ok()).unwrap_or(ThinkingLevel::Off);
            let mut value = json!({
                "model": super::extension_host_requests::model_json(&target),
                "thinkingLevel": target.clamp_thinking(level).as_str(),
            });
            if let Some(state) = answer.get("state").filter(|s| !s.is_null()) {
                value["state"] = state.clone();
            }
            let _ = reply.send(Ok(json!({ "value": value })));
        });
    }
}
