//! The classifier and image models an extension's provider registers
//! (`registerProvider`'s `models` with `type: "classifier" | "image"`): kept
//! apart from the chat models, as pi's provider composer lists them by type
//! only (`getAllModels`, not `getModels`). A registration with `models`
//! replaces every model of the provider, the built-in typed ones included.

use serde_json::{Map, Value};

use super::ModelRegistry;

/// Whether a model definition is a classifier or image model (not chat).
pub(super) fn is_typed(definition: &Value) -> bool {
    matches!(definition.get("type").and_then(Value::as_str), Some("classifier" | "image"))
}

/// A typed definition as pi builds it (`extensionModelFromDefinition`): its
/// own `api` (typed models take none from the provider) and `baseUrl` (else
/// the provider's), its provider, no headers.
pub(super) fn typed_model(provider: &str, base_url: Option<&str>, definition: &Value) -> Result<Value, String> {
    let Value::Object(fields) = definition else {
        return Err(format!("Provider {provider}: a model definition must be an object"));
    };
    let id = fields.get("id").and_then(Value::as_str).unwrap_or_default();
    if !fields.get("api").is_some_and(Value::is_string) {
        return Err(format!("Provider {provider}, model {id}: no \"api\" specified. Set it at model level."));
    }
    let base = fields.get("baseUrl").and_then(Value::as_str).or(base_url);
    let Some(base) = base else {
        return Err(format!("Provider {provider}: \"baseUrl\" is required when defining custom models."));
    };
    let mut model: Map<String, Value> = fields.clone();
    model.insert("provider".into(), Value::from(provider));
    model.insert("baseUrl".into(), Value::from(base));
    model.remove("headers");
    Ok(Value::Object(model))
}

impl ModelRegistry {
    /// The typed models extensions registered, each provider's in order.
    pub fn extension_typed_models(&self) -> impl Iterator<Item = &Value> {
        self.extension_typed.values().flatten()
    }

    /// Whether an extension's registration replaced the provider's models
    /// (its built-in classifier and image models are then gone too).
    pub fn typed_models_replaced(&self, provider: &str) -> bool {
        self.extension_typed.contains_key(provider)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::config::typed_models::{ModelType, available_of_type, model_of_type, models_of_type};

    use super::*;

    #[test]
    fn a_registered_provider_s_typed_models_are_listed_by_type_not_as_chat() {
        let mut reg = ModelRegistry::default();
        let config = json!({
            "baseUrl": "http://127.0.0.1:9/typed",
            "apiKey": "typed-key",
            "models": [
                {"id": "sorter", "type": "classifier", "api": "typedco-classify", "headers": {"x": "y"}},
                {"id": "painter", "type": "image", "api": "typedco-images", "baseUrl": "http://elsewhere"},
                {"id": "talker", "api": "openai-completions"},
            ],
        });
        reg.register_provider("typedco", &config).unwrap();
        let chat: Vec<String> = reg.all().into_iter().filter(|m| m.provider == "typedco").map(|m| m.id).collect();
        assert_eq!(chat, ["talker"]);
        let sorter = model_of_type(&mut reg, ModelType::Classifier, "typedco", "sorter").expect("sorter");
        assert_eq!(sorter["api"], "typedco-classify");
        assert_eq!(sorter["baseUrl"], "http://127.0.0.1:9/typed");
        assert!(sorter.get("headers").is_none());
        let painter = model_of_type(&mut reg, ModelType::Image, "typedco", "painter").expect("painter");
        assert_eq!(painter["baseUrl"], "http://elsewhere");
        assert!(model_of_type(&mut reg, ModelType::Image, "typedco", "sorter").is_none());
        assert_eq!(available_of_type(&mut reg, ModelType::Classifier, Some("typedco")).len(), 1);
        reg.unregister_provider("typedco");
        assert!(models_of_type(&mut reg, ModelType::Classifier, Some("typedco")).is_empty());
    }

    #[test]
    fn a_registration_with_models_replaces_the_built_in_typed_models() {
        let mut reg = ModelRegistry::default();
        assert!(!models_of_type(&mut reg, ModelType::Classifier, Some("typesafe")).is_empty());
        let chat_only =
            json!({"baseUrl": "http://x", "apiKey": "k", "api": "openai-completions", "models": [{"id": "c"}]});
        reg.register_provider("typesafe", &chat_only).unwrap();
        assert!(models_of_type(&mut reg, ModelType::Classifier, Some("typesafe")).is_empty());
        reg.unregister_provider("typesafe");
        assert!(!models_of_type(&mut reg, ModelType::Classifier, Some("typesafe")).is_empty());
        // A typed model without its own api is refused, as pi refuses it.
        let bad = json!({"baseUrl": "http://x", "apiKey": "k", "models": [{"id": "s", "type": "classifier"}]});
        let error = reg.register_provider("typedco", &bad).unwrap_err();
        assert!(error.contains("no \"api\" specified"), "{error}");
    }
}
