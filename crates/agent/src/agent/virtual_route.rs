//! Virtual models (pi's `registerVirtualModel`): before each model request a
//! run makes with one, the extension that registered it names the physical
//! model and thinking level the request goes to ([`VirtualRouter::route`]).
//! The request, and the assistant message, then name the physical model, as
//! pi records dispatch; the selection stays the virtual model. A routing that
//! fails ends the request with an error response ([`unrouted`]).

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::ModelRegistry;
use crate::config::models::is_virtual;
use crate::extensions::{CallError, Extension};
use crate::message::{AgentMessage, StopReason};
use crate::model::{Model, ThinkingLevel};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRegistry, ProviderRequest, ProviderStream};

/// What one request is routed to.
pub(crate) struct Routed {
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub provider: Arc<dyn Provider>,
    pub api_key: Option<String>,
    pub headers: std::collections::HashMap<String, String>,
}

/// Routes the requests of a run made with a virtual model.
pub(crate) struct VirtualRouter {
    /// The extension that registered the virtual model (`None`: no longer registered).
    owner: Option<Arc<Extension>>,
    /// The selection: the virtual model and its thinking level.
    model: Model,
    thinking: ThinkingLevel,
    registry: ModelRegistry,
    providers: ProviderRegistry,
    /// The assistant message of the request that failed, for the retry's `failed`.
    failed: Option<AgentMessage>,
}

impl VirtualRouter {
    pub(crate) fn new(
        owner: Arc<Extension>,
        model: Model,
        thinking: ThinkingLevel,
        registry: ModelRegistry,
        providers: ProviderRegistry,
    ) -> Self {
        VirtualRouter { owner: Some(owner), model, thinking, registry, providers, failed: None }
    }

    /// The router of a virtual model no extension registers (any more): every
    /// request fails. `registry`: the catalog its earlier answers are found in.
    pub(crate) fn unregistered(model: Model, registry: ModelRegistry) -> Self {
        let providers = ProviderRegistry::default();
        VirtualRouter { owner: None, model, thinking: ThinkingLevel::Off, registry, providers, failed: None }
    }

    /// The selected virtual model (named by a request whose routing failed).
    pub(crate) fn virtual_model(&self) -> &Model {
        &self.model
    }

    /// The physical model the latest successful answer among `messages` came
    /// from, when the catalog has it (pi's `routedModel`): the model whose
    /// limits apply to the conversation under this selection.
    pub(crate) fn answered_by(&mut self, messages: &[AgentMessage]) -> Option<Model> {
        let answer = messages.iter().rev().find_map(|message| match message {
            AgentMessage::Assistant(a) if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => Some(a),
            _ => None,
        })?;
        self.registry.find_physical(&answer.provider, &answer.model)
    }

    /// A request failed and will be retried: the retry's route sees it as `failed`.
    pub(crate) fn note_failed(&mut self, message: &AgentMessage) {
        self.failed = Some(message.clone());
    }

    /// Ask the router for this request's physical model. `retry`: the first
    /// request of an automatic retry.
    pub(crate) async fn route(
        &mut self,
        messages: &[AgentMessage],
        retry: bool,
        cancel: &CancellationToken,
    ) -> Result<Routed, String> {
        let reason = if retry {
            "retry"
        } else if user_turn(messages) {
            "user"
        } else {
            "continuation"
        };
        // pi's `failed`: the failed request's assistant message (its physical model, stop reason, error).
        let failed = self.failed.take().filter(|_| retry);
        self.ask(reason, messages, failed, cancel).await
    }

    /// Route a request made outside the agent loop (pi's reason `direct`:
    /// a compaction summary); the router is given no state and any it
    /// returns is not stored.
    pub(crate) async fn route_direct(
        &mut self,
        messages: &[AgentMessage],
        cancel: &CancellationToken,
    ) -> Result<Routed, String> {
        self.ask("direct", messages, None, cancel).await
    }

    async fn ask(
        &mut self,
        reason: &str,
        messages: &[AgentMessage],
        failed: Option<AgentMessage>,
        cancel: &CancellationToken,
    ) -> Result<Routed, String> {
        let mut params = json!({
            "provider": self.model.provider,
            "id": self.model.id,
            "reason": reason,
            "thinkingLevel": self.thinking.as_str(),
            "messages": messages,
        });
        if let Some(failed) = failed {
            params["failed"] = json!(failed);
        }
        let Some(owner) = &self.owner else {
            return Err(format!("Virtual model {} is not registered.", self.model.full_id()));
        };
        let answer = match owner.call("route_model", params, Some(cancel)).await {
            Ok(answer) => answer,
            Err(CallError::Failed(error) | CallError::Dead(error)) => return Err(error),
            Err(CallError::Cancelled) => return Err("Request was aborted".to_string()),
        };
        let field = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let (provider, id) = (field("provider"), field("id"));
        let name = format!("Virtual model {} routed to {provider}/{id}", self.model.full_id());
        let model = self
            .registry
            .find_physical(&provider, &id)
            .filter(|m| !is_virtual(m))
            .ok_or_else(|| format!("{name}, which is not a physical model."))?;
        if !self.registry.has_credentials(&model) {
            return Err(format!("{name}, which has no credentials."));
        }
        let physical = self
            .providers
            .for_model(&model.provider, &self.registry.chat_api(&model))
            .ok_or_else(|| format!("{name}, whose API \"{}\" this build does not support.", model.api))?;
        let wanted = answer.get("thinkingLevel").and_then(Value::as_str).and_then(|l| l.parse().ok());
        Ok(Routed {
            thinking: model.clamp_thinking(wanted.unwrap_or(self.thinking)),
            provider: crate::auth::authorize(physical, &self.registry, &model),
            api_key: self.registry.api_key(&model.provider),
            headers: self.registry.headers(&model),
            model,
        })
    }
}

/// A message the user wrote comes after the last response (pi's reason `user`).
fn user_turn(messages: &[AgentMessage]) -> bool {
    let last_response = messages.iter().rposition(|m| matches!(m, AgentMessage::Assistant(_)));
    let after = last_response.map_or(0, |i| i + 1);
    messages[after..].iter().any(|m| matches!(m, AgentMessage::User(_)))
}

/// The provider of a request whose routing failed: it answers the error.
pub(crate) fn unrouted(error: String) -> Arc<dyn Provider> {
    Arc::new(Unrouted { error })
}

struct Unrouted {
    error: String,
}

impl Provider for Unrouted {
    fn api(&self) -> &'static str {
        crate::config::models::VIRTUAL_MODEL_API
    }

    fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> ProviderStream {
        let error = ProviderError::new(ProviderErrorKind::InvalidRequest, self.error.clone());
        futures::stream::once(async move { Err(error) }).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::faux::faux_model;

    fn model(provider: &str, id: &str) -> Model {
        Model { provider: provider.into(), id: id.into(), ..faux_model() }
    }

    fn answer(model: &Model, stop_reason: StopReason) -> AgentMessage {
        AgentMessage::Assistant(crate::message::AssistantMessage::empty(model, stop_reason))
    }

    #[test]
    fn the_latest_successful_answer_names_the_model_whose_limits_apply() {
        let (small, big) = (model("fake", "small"), model("fake", "big"));
        let gone = model("fake", "gone");
        let registry = ModelRegistry::from_models(vec![small.clone(), big.clone()]);
        let mut router = VirtualRouter::unregistered(model("router", "auto"), registry);
        let found = |router: &mut VirtualRouter, messages: &[AgentMessage]| router.answered_by(messages).map(|m| m.id);
        assert_eq!(found(&mut router, &[]), None);
        // Failed and aborted answers are passed over, as pi's `findLatestResponse`.
        let failed_last = [answer(&big, StopReason::Stop), answer(&small, StopReason::Error)];
        assert_eq!(found(&mut router, &failed_last), Some("big".into()));
        let aborted_last = [answer(&small, StopReason::ToolUse), answer(&big, StopReason::Aborted)];
        assert_eq!(found(&mut router, &aborted_last), Some("small".into()));
        // A model the catalog no longer has names none.
        assert_eq!(found(&mut router, &[answer(&gone, StopReason::Stop)]), None);
    }
}
