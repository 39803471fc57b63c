//! The built-in provider table and model catalog (static data, no network).
//!
//! The catalog is `catalog.json`, transcribed from pi-ai 1.6.0's model data
//! (see its `_source` field and `gen_catalog.py`); it is compiled in, indexed
//! by the build script, and each provider's section is parsed when needed.
//! The classifier and image models are `typed_catalog.json`, kept whole.

use std::sync::OnceLock;

use serde_json::Value;

use crate::model::Model;

pub use super::builtin_providers::{BUILTIN_PROVIDERS, BuiltinProvider, builtin_provider};

/// Each built-in provider's default chat model, in pi 1.6.0's order of
/// preference (pi's `defaultModelPerProvider`): the start-up choice among
/// providers with credentials, and the template of a custom id on a provider.
pub const DEFAULT_MODEL_PER_PROVIDER: &[(&str, &str)] = &[
    ("amazon-bedrock", "us.anthropic.claude-opus-5-5"),
    ("ant-ling", "Ring-2.6-1T"),
    ("anthropic", "claude-opus-5-5"),
    ("openai", "gpt-6.2-sol"),
    ("azure", "gpt-6.2-sol"),
    ("openai-codex", "gpt-6.2-sol"),
    ("radius", "balanced"),
    ("nvidia", "nvidia/nemotron-3.5-super-vl-120b-a12b"),
    ("deepseek", "deepseek-v4-pro"),
    ("google", "gemini-4-argon"),
    ("google-vertex", "gemini-4-argon"),
    ("github-copilot", "gpt-6.1-sol"),
    ("openrouter", "moonshotai/kimi-k2.7-code"),
    ("vercel-ai-gateway", "zai/glm-5.3"),
    ("xai", "grok-4.7"),
    ("groq", "openai/gpt-oss-120b"),
    ("cerebras", "gpt-oss-120b"),
    ("zai", "glm-5.3"),
    ("zai-coding-cn", "glm-5.3"),
    ("mistral", "devstral-medium-latest"),
    ("minimax", "MiniMax-M3"),
    ("minimax-cn", "MiniMax-M3"),
    ("moonshotai", "kimi-k2.7-code"),
    ("moonshotai-cn", "kimi-k2.7-code"),
    ("huggingface", "moonshotai/Kimi-K2.7-Code"),
    ("fireworks", "accounts/fireworks/models/kimi-k3"),
    ("together", "moonshotai/Kimi-K3"),
    ("baseten", "zai-org/GLM-5.3"),
    ("opencode", "kimi-k2.7-code"),
    ("opencode-go", "kimi-k3.1-pro"),
    ("kimi-coding", "kimi-for-coding"),
    ("meta", "muse-spark-1.3"),
    ("cloudflare-workers-ai", "@cf/moonshotai/kimi-k2.7-code"),
    ("cloudflare-ai-gateway", "workers-ai/@cf/moonshotai/kimi-k2.7-code"),
    ("qwen-token-plan", "qwen3.8-max"),
    ("qwen-token-plan-cn", "qwen3.8-max"),
    ("qwen-token-plan-individual", "qwen3.8-max"),
    ("qwen-token-plan-individual-cn", "qwen3.8-max"),
    ("xiaomi", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-cn", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-ams", "mimo-v2.6-pro"),
    ("xiaomi-token-plan-sgp", "mimo-v2.6-pro"),
];

/// The default chat model id of a built-in provider.
pub fn default_model_of(provider: &str) -> Option<&'static str> {
    DEFAULT_MODEL_PER_PROVIDER.iter().find(|(p, _)| *p == provider).map(|(_, id)| *id)
}

/// Default API of a built-in provider.
pub fn provider_api(provider: &str) -> Option<&'static str> {
    builtin_provider(provider).map(|p| p.api)
}

/// Default base URL of a built-in provider.
pub fn provider_base_url(provider: &str) -> Option<&'static str> {
    builtin_provider(provider).map(|p| p.base_url)
}

/// The catalog data, compiled in.
pub const CATALOG_JSON: &str = include_str!("catalog.json");

// `PROVIDER_SECTIONS`, computed from catalog.json by the build script: the
// byte range of each provider's model array, so a start touches only the
// sections it needs, not the whole text.
include!(concat!(env!("OUT_DIR"), "/catalog_index.rs"));

static CATALOG: OnceLock<Vec<Model>> = OnceLock::new();

/// Names of the providers the catalog has models for, in catalog order.
pub fn catalog_providers() -> impl Iterator<Item = &'static str> {
    PROVIDER_SECTIONS.iter().map(|(name, _, _)| *name)
}

/// The catalog models of one provider (parsed on each call; callers keep them).
pub fn provider_models(provider: &str) -> Vec<Model> {
    let Some(&(_, start, end)) = PROVIDER_SECTIONS.iter().find(|(name, _, _)| *name == provider) else {
        return Vec::new();
    };
    let section = CATALOG_JSON.get(start..end).unwrap_or("[]");
    match serde_json::from_str::<Vec<Model>>(section) {
        Ok(models) => models,
        Err(e) => {
            tracing::error!("built-in model catalog, provider {provider}: {e}");
            Vec::new()
        }
    }
}

/// Each provider's models parsed once per process and shared by every
/// registry (every `pi serve` session): a session's registry refers to these
/// and copies a model only when its `models.json` changes it.
static SHARED: OnceLock<Box<[OnceLock<Vec<Model>>]>> = OnceLock::new();

/// The catalog models of one provider, parsed on first use and shared for the
/// rest of the process (empty for a provider the catalog does not have).
pub fn shared_provider_models(provider: &str) -> &'static [Model] {
    let Some(index) = PROVIDER_SECTIONS.iter().position(|(name, _, _)| *name == provider) else {
        return &[];
    };
    let slots = SHARED.get_or_init(|| PROVIDER_SECTIONS.iter().map(|_| OnceLock::new()).collect());
    match slots.get(index) {
        Some(slot) => slot.get_or_init(|| provider_models(provider)),
        None => &[],
    }
}

/// The whole parsed catalog (parsed on first use). A catalog that does not
/// parse is a build defect caught by the tests; it yields no models.
pub fn catalog() -> &'static [Model] {
    CATALOG.get_or_init(|| catalog_providers().flat_map(provider_models).collect())
}

/// The built-in model catalog, as owned models.
pub fn builtin_models() -> Vec<Model> {
    catalog().to_vec()
}

/// Every classifier and image model of the built-in catalog, in its order
/// (`typed_catalog.json`, transcribed by `gen_typed_catalog.py`).
pub fn typed_catalog() -> &'static [Value] {
    static CATALOG: OnceLock<Vec<Value>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let parsed: Value = serde_json::from_str(include_str!("typed_catalog.json")).unwrap_or(Value::Null);
        match parsed.get("models") {
            Some(Value::Array(models)) => models.clone(),
            _ => Vec::new(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::auth::provider_env_vars;
    use crate::provider::ProviderRegistry;
    use crate::provider::faux::FauxProvider;
    use crate::provider::http::HttpClient;

    #[test]
    fn catalog_parses_and_names_its_source() {
        let root: serde_json::Value = serde_json::from_str(CATALOG_JSON).unwrap();
        assert!(root["_source"].as_str().unwrap().contains("pi-ai 1.6.0"));
        let total: usize = root["providers"].as_object().unwrap().values().map(|v| v.as_array().unwrap().len()).sum();
        assert_eq!(catalog().len(), total);
        let in_file: Vec<&str> = root["providers"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(catalog_providers().collect::<Vec<_>>(), in_file, "the build script's index, in file order");
        for (name, models) in root["providers"].as_object().unwrap() {
            assert_eq!(provider_models(name).len(), models.as_array().unwrap().len(), "{name}");
            assert!(provider_models(name).iter().all(|m| &m.provider == name), "{name}");
        }
        assert!(catalog().len() > 1000);
        let shared = shared_provider_models("anthropic");
        assert!(std::ptr::eq(shared, shared_provider_models("anthropic")), "parsed once, then shared");
        assert_eq!(shared, provider_models("anthropic").as_slice());
        assert!(shared_provider_models("no-such-provider").is_empty());
        let sonnet = catalog().iter().find(|m| m.provider == "anthropic" && m.id == "claude-sonnet-4-5").unwrap();
        assert_eq!((sonnet.context_window, sonnet.max_tokens), (200_000, 64_000));
        assert_eq!(sonnet.cost.cache_write, 3.75);
        let ids: std::collections::HashSet<(&str, &str)> =
            catalog().iter().map(|m| (m.provider.as_str(), m.id.as_str())).collect();
        assert_eq!(ids.len(), catalog().len(), "provider/id pairs are unique");
    }

    #[test]
    fn every_model_has_a_provider_an_api_and_env_keys() {
        let registry = ProviderRegistry::builtin(HttpClient::new().unwrap(), FauxProvider::default());
        for m in catalog() {
            assert!(registry.get(&m.api).is_some(), "{}: api {} has no provider", m.full_id(), m.api);
            let provider = builtin_provider(&m.provider).unwrap_or_else(|| panic!("{} is not built in", m.provider));
            // The ChatGPT subscription has no key variable: it is an OAuth login only. Bedrock
            // authenticates through the AWS credential chain (keys, profiles, bearer token), not one variable.
            if m.provider != "openai-codex" && m.provider != "amazon-bedrock" {
                assert!(!provider_env_vars(&m.provider).is_empty(), "{}: no key variable", m.provider);
            }
            // Azure's endpoint comes from the environment (AZURE_OPENAI_BASE_URL, …).
            if m.provider != "azure" {
                assert!(!m.base_url.is_empty() && !provider.base_url.is_empty(), "{}", m.full_id());
            }
            // pi's clamp always lands on a level the model has.
            let high = crate::provider::openai::request::clamp_level(m, crate::model::ThinkingLevel::High);
            assert!(m.thinking_levels().contains(&high), "{}: {:?} {high:?}", m.full_id(), m.thinking_levels());
        }
        for p in super::super::builtin_providers::chat_providers() {
            assert!(catalog().iter().any(|m| m.provider == p.name), "{} has no models", p.name);
            assert!(registry.get(p.api).is_some(), "{}: api {}", p.name, p.api);
        }
    }
}
