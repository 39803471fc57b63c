//! The session's registry and the catalogs `models-store.json` keeps: when
//! the file changes (pi-rpc's background refresh stored a newer catalog, or
//! pi did), the registry is built again over the stored catalogs, as pi's
//! model runtime refreshes its providers once a catalog is published.

use std::path::Path;

use super::super::stored_catalogs::StoredCatalogs;
use super::ModelRegistry;

/// pi-ai 1.6.0's built-in providers made with an API map (by `model.api`);
/// the others are made with a single API.
const DISPATCH_BY_API: &[&str] = &[
    "azure",
    "cloudflare-ai-gateway",
    "fireworks",
    "github-copilot",
    "opencode",
    "opencode-go",
    "openrouter",
    "typesafe",
];

impl ModelRegistry {
    /// Read the store again when it changed since it was read (`revision`:
    /// the file's current one); when the
    /// catalogs that count changed, the registry is refreshed over them
    /// (`models.json` read again, what extensions registered kept).
    pub(super) fn sync_stored_catalogs(&mut self, agent_dir: &Path, revision: Option<(u64, u64, i128)>) {
        if !self.stored_catalogs.changed_from(revision) {
            return;
        }
        let stored = StoredCatalogs::read(agent_dir);
        let differs = !stored.same_models(&self.stored_catalogs);
        self.stored_catalogs = stored;
        if differs {
            self.refresh_models_json(agent_dir);
        }
    }

    /// pi 1.6.0's built-in provider of `model`, unless `models.json` or an
    /// extension configures it (pi then composes the provider and streams
    /// each model by its own API).
    fn unconfigured_built_in(&self, provider: &str) -> bool {
        let configured = self.providers.contains_key(provider)
            || self.extension_configs.contains_key(provider)
            || self.json_overrides.contains_key(provider);
        !configured && super::super::stored_catalogs::catalog_providers().contains(&provider)
    }

    /// pi-ai's built-in providers dispatch their chat models by API (an
    /// implementation for each API of their catalog; TypeSafe, classifiers
    /// only, has none), so a model of another API (a stored catalog may give
    /// one) cannot be called: the error pi's call ends with, if so.
    pub fn missing_chat_api(&self, model: &crate::model::Model) -> Option<String> {
        let provider = model.provider.as_str();
        if !DISPATCH_BY_API.contains(&provider) || !self.unconfigured_built_in(provider) {
            return None;
        }
        let declared = super::catalog::shared_provider_models(provider).iter().any(|m| m.api == model.api);
        (!declared).then(|| format!("Provider {provider} has no API implementation for \"{}\"", model.api))
    }

    /// The wire API pi's provider streams `model` with: every other built-in
    /// provider has one API and streams all its chat models with it (a stored
    /// model of another API too); otherwise the model's own.
    pub fn chat_api(&self, model: &crate::model::Model) -> String {
        let provider = model.provider.as_str();
        if DISPATCH_BY_API.contains(&provider) || !self.unconfigured_built_in(provider) {
            return model.api.clone();
        }
        let built_in = super::catalog::shared_provider_models(provider).first();
        built_in.map_or_else(|| model.api.clone(), |m| m.api.clone())
    }

    /// The built-in classifier and image models with the stored catalogs' over them.
    pub(crate) fn with_stored_typed(&self, built_in: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
        self.stored_catalogs.typed_over(built_in)
    }
}
