//! The built-in provider table and model catalog (static data, no network).

use crate::model::Model;

/// A built-in provider: its wire API and default base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinProvider {
    pub name: &'static str,
    pub api: &'static str,
    pub base_url: &'static str,
}

/// Providers pi-rpc knows by name, so `models.json` entries may omit `api`/`baseUrl`.
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider { name: "openai", api: "openai-responses", base_url: "https://api.openai.com/v1" },
    BuiltinProvider { name: "anthropic", api: "anthropic-messages", base_url: "https://api.anthropic.com" },
    BuiltinProvider {
        name: "google",
        api: "google-generative-ai",
        base_url: "https://generativelanguage.googleapis.com/v1beta",
    },
    BuiltinProvider { name: "openrouter", api: "openai-completions", base_url: "https://openrouter.ai/api/v1" },
    BuiltinProvider { name: "groq", api: "openai-completions", base_url: "https://api.groq.com/openai/v1" },
    BuiltinProvider { name: "xai", api: "openai-completions", base_url: "https://api.x.ai/v1" },
    BuiltinProvider { name: "deepseek", api: "openai-completions", base_url: "https://api.deepseek.com" },
    BuiltinProvider { name: "mistral", api: "openai-completions", base_url: "https://api.mistral.ai/v1" },
    BuiltinProvider { name: "cerebras", api: "openai-completions", base_url: "https://api.cerebras.ai/v1" },
];

/// Default API of a built-in provider.
pub fn provider_api(provider: &str) -> Option<&'static str> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == provider).map(|p| p.api)
}

/// Default base URL of a built-in provider.
pub fn provider_base_url(provider: &str) -> Option<&'static str> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == provider).map(|p| p.base_url)
}

/// The built-in model catalog.
pub fn builtin_models() -> Vec<Model> {
    Vec::new()
}
