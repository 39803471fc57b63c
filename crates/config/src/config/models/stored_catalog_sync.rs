//! The session's registry and the catalogs `models-store.json` keeps: when
//! the file changes (pi-rpc's background refresh stored a newer catalog, or
//! pi did), the registry is built again over the stored catalogs, as pi's
//! model runtime refreshes its providers once a catalog is published.

use std::path::Path;

use super::super::stored_catalogs::StoredCatalogs;
use super::ModelRegistry;

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

    /// pi 1.6.0's provider `provider` implements no chat API (TypeSafe:
    /// classifiers only), so a chat model a stored catalog gives it cannot
    /// be called, unless `models.json` or an extension configures the
    /// provider (pi then streams it by the model's API). The error pi's
    /// call ends with, if so.
    pub fn missing_chat_api(&self, model: &crate::model::Model) -> Option<String> {
        let provider = model.provider.as_str();
        let built_in_without_chat = !super::catalog::catalog_providers().any(|p| p == provider)
            && super::super::stored_catalogs::catalog_providers().contains(&provider);
        let configured = self.providers.contains_key(provider)
            || self.extension_configs.contains_key(provider)
            || self.json_overrides.contains_key(provider);
        (built_in_without_chat && !configured)
            .then(|| format!("Provider {provider} has no API implementation for \"{}\"", model.api))
    }

    /// The built-in classifier and image models with the stored catalogs' over them.
    pub(crate) fn with_stored_typed(&self, built_in: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
        self.stored_catalogs.typed_over(built_in)
    }
}
