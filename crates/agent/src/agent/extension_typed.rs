//! Classifier and image calls of the providers extensions register with
//! their own implementations (pi's `registerProvider` with `classifiers` /
//! `images` keyed by API, or a native provider's `classify` /
//! `generateImages`): `ctx.modelRegistry.classify / generateImages` and
//! codemode's `models.*` reach them through [`pi_mcp::codemode::ModelsHost`],
//! which applies the provider's key, headers and base URL first (pi-ai's
//! `applyAuth`); the call goes to the extension as `provider_typed`
//! (`{op, model, context, options}`) and its answer is pi's result object.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::extensions::protocol::ProviderSpec;
use crate::extensions::{CallError, Extension};
use pi_mcp::codemode::models::TypedModelDelegate;

/// What one provider's extension implements: its classifier and image APIs (`"*"`: all).
#[derive(Clone)]
struct Implemented {
    ext: Arc<Extension>,
    classifiers: Vec<String>,
    images: Vec<String>,
}

/// The providers whose typed model calls their extension implements.
#[derive(Clone, Default)]
pub(crate) struct ExtensionTypedModels {
    by_provider: HashMap<String, Implemented>,
}

impl ExtensionTypedModels {
    /// A registration: the APIs it implements (none: the provider's typed calls are pi-rpc's own).
    pub(crate) fn register(&mut self, spec: &ProviderSpec, ext: &Arc<Extension>) {
        if spec.classifiers.is_empty() && spec.images.is_empty() {
            self.by_provider.remove(&spec.name);
            return;
        }
        let implemented =
            Implemented { ext: ext.clone(), classifiers: spec.classifiers.clone(), images: spec.images.clone() };
        self.by_provider.insert(spec.name.clone(), implemented);
    }

    pub(crate) fn unregister(&mut self, name: &str) {
        self.by_provider.remove(name);
    }

    /// The delegate for a models host (none when no provider has an implementation).
    pub(crate) fn delegate(&self) -> Option<Arc<dyn TypedModelDelegate>> {
        (!self.by_provider.is_empty()).then(|| Arc::new(self.clone()) as Arc<dyn TypedModelDelegate>)
    }
}

impl TypedModelDelegate for ExtensionTypedModels {
    fn serves(&self, provider: &str, api: &str, op: &str) -> bool {
        let Some(implemented) = self.by_provider.get(provider) else { return false };
        let apis = if op == "classify" { &implemented.classifiers } else { &implemented.images };
        apis.iter().any(|a| a == api || a == "*")
    }

    fn call(
        &self,
        op: &'static str,
        model: Value,
        context: Value,
        options: Value,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>> {
        let provider = model["provider"].as_str().unwrap_or_default().to_string();
        let ext = self.by_provider.get(&provider).map(|i| i.ext.clone());
        Box::pin(async move {
            let Some(ext) = ext else { return Err(format!("Provider {provider} is not registered")) };
            let params = json!({"op": op, "model": model, "context": context, "options": options});
            match ext.call_streaming("provider_typed", params, Some(&cancel)).await {
                Ok(answer) => Ok(answer),
                Err(CallError::Cancelled) => Err(crate::provider::typed::ABORTED.to_string()),
                Err(CallError::Failed(error) | CallError::Dead(error)) => Err(error),
            }
        })
    }
}
