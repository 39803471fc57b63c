//! The non-chat models of pi-ai 1.6.0's catalog: classifiers
//! (`models.classify()`) and image generators (`models.generateImages()`),
//! which codemode scripts reach through `models.*`. `typed_catalog.json` is
//! transcribed from pi-ai's model data by `gen_typed_catalog.py`; each entry
//! is kept whole, since scripts see it as pi shows it.

use serde_json::Value;

pub use super::catalog::typed_catalog;
use super::models::ModelRegistry;

/// A model type of pi's catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    Chat,
    Image,
    Classifier,
}

impl ModelType {
    /// `"chat"`, `"image"`, `"classifier"`.
    pub fn parse(name: &str) -> Option<ModelType> {
        match name {
            "chat" => Some(ModelType::Chat),
            "image" => Some(ModelType::Image),
            "classifier" => Some(ModelType::Classifier),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ModelType::Chat => "chat",
            ModelType::Image => "image",
            ModelType::Classifier => "classifier",
        }
    }
}

fn field<'a>(model: &'a Value, key: &str) -> &'a str {
    model.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The models of one type (of one provider), as scripts see them: a
/// provider's `models.json` `baseUrl` re-routes its models, as it does its
/// chat models. Chat models come as their catalog entries: the built-in
/// catalog's with `type: "chat"`, a `models.json` model without a type (as
/// pi's entries are; a missing type means chat).
pub fn models_of_type(registry: &mut ModelRegistry, kind: ModelType, provider: Option<&str>) -> Vec<Value> {
    if kind == ModelType::Chat {
        let built_in =
            |m: &crate::model::Model| super::catalog::shared_provider_models(&m.provider).iter().any(|b| b.id == m.id);
        return registry
            .all()
            .into_iter()
            .filter(|m| provider.is_none_or(|p| m.provider == p))
            .filter_map(|m| {
                let mut v = serde_json::to_value(&m).ok()?;
                if let Value::Object(map) = &mut v
                    && built_in(&m)
                {
                    map.insert("type".into(), Value::from("chat"));
                }
                Some(v)
            })
            .collect();
    }
    let catalog: Vec<Value> = typed_catalog().iter().chain(registry.llama_classifiers()).cloned().collect();
    let built_in: Vec<Value> = registry
        .with_stored_typed(catalog)
        .into_iter()
        .filter(|m| field(m, "type") == kind.name())
        .filter(|m| provider.is_none_or(|p| field(m, "provider") == p))
        .filter(|m| !registry.typed_models_replaced(field(m, "provider")))
        .map(|mut m| {
            if let Some(base) = registry.provider_base_url(field(&m, "provider")) {
                m["baseUrl"] = Value::from(base);
            }
            m
        })
        .collect();
    // An extension's typed models keep the base URL their registration gave them.
    let registered = registry
        .extension_typed_models()
        .filter(|m| field(m, "type") == kind.name())
        .filter(|m| provider.is_none_or(|p| field(m, "provider") == p))
        .cloned();
    built_in.into_iter().chain(registered).collect()
}

/// One model of a type by provider and id.
pub fn model_of_type(registry: &mut ModelRegistry, kind: ModelType, provider: &str, id: &str) -> Option<Value> {
    models_of_type(registry, kind, Some(provider)).into_iter().find(|m| field(m, "id") == id)
}

/// The models of a type whose provider has credentials and whose login
/// keeps them (pi's `getAvailableOfType`).
pub fn available_of_type(registry: &mut ModelRegistry, kind: ModelType, provider: Option<&str>) -> Vec<Value> {
    let all = models_of_type(registry, kind, provider);
    all.into_iter()
        .filter(|m| {
            let provider = field(m, "provider");
            registry.provider_usable(provider) && registry.login_keeps(provider, field(m, "id"), kind.name())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_pi_s_classifiers_and_image_models() {
        let all = typed_catalog();
        let count = |api: &str| all.iter().filter(|m| field(m, "api") == api).count();
        assert_eq!(count("typesafe-system-one"), 75);
        assert_eq!(count("openai-decisions"), 1);
        assert_eq!(count("cloudflare-workers-ai-system-one"), 5);
        assert_eq!(count("openrouter-images"), 74);
        let mut registry = ModelRegistry::default();
        let jev = model_of_type(&mut registry, ModelType::Classifier, "typesafe", "jev-latest").expect("jev");
        assert_eq!(jev["baseUrl"], "https://api.typesafe.ai/v1/");
        assert!(model_of_type(&mut registry, ModelType::Image, "typesafe", "jev-latest").is_none());
    }

    #[test]
    fn logins_keep_what_pi_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let ids = |registry: &mut ModelRegistry, kind: ModelType, provider: &str| -> Vec<String> {
            available_of_type(registry, kind, Some(provider)).iter().map(|m| field(m, "id").to_string()).collect()
        };
        // A ChatGPT login of `openai` reaches no classifier; a key does.
        let login = r#"{"openai":{"type":"oauth","refresh":"r","access":"a","expires":1},
            "github-copilot":{"type":"oauth","refresh":"r","access":"a","expires":1,"availableModelIds":["gpt-6.1-sol"]}}"#;
        std::fs::write(dir.path().join("auth.json"), login).unwrap();
        let mut registry = ModelRegistry::load(dir.path()).unwrap();
        assert!(ids(&mut registry, ModelType::Classifier, "openai").is_empty());
        assert!(!ids(&mut registry, ModelType::Chat, "openai").is_empty());
        // Copilot's login: its listed chat models, every classifier.
        assert_eq!(ids(&mut registry, ModelType::Chat, "github-copilot"), ["gpt-6.1-sol"]);
        assert_eq!(ids(&mut registry, ModelType::Classifier, "github-copilot"), ["microsoft-decision-1"]);
        registry.set_runtime_key("openai", "sk-key".into());
        assert_eq!(ids(&mut registry, ModelType::Classifier, "openai"), ["gpt-6-luna"]);
    }
}
