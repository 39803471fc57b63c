//! pi's `modelRegistry.refresh()` and `getError()`: `models.json` read
//! again while the session runs, what extensions registered kept over it.
//! A file that cannot be used is an error to report, not a stop: the
//! registry goes on without it, as pi's model runtime does.

use std::path::Path;

use super::super::{ConfigError, auth::AuthStore};
use super::{ModelRegistry, ModelsFile, is_virtual, read_models_file};

impl ModelRegistry {
    /// Read `<agent_dir>/models.json` (and `auth.json`) again. Keys set at
    /// run time, the providers and virtual models extensions registered
    /// and pi's llama.cpp models stay; a `models.json` that cannot be read
    /// or parsed leaves its providers out and is kept as
    /// [`ModelRegistry::config_error`] (pi's wording: "Failed to parse
    /// models.json: …\n\nFile: …"), a provider that cannot be set up is
    /// left out alone (`Provider "…": …`).
    pub fn refresh_models_json(&mut self, agent_dir: &Path) {
        let path = agent_dir.join("models.json");
        let auth = AuthStore::load(agent_dir).unwrap_or_else(|_| self.auth.clone());
        let (mut fresh, error) = match read_models_file(&path) {
            Ok(file) => {
                let mut fresh = self.rebuilt(auth.clone(), &file);
                match fresh.apply_models_json(file, &path) {
                    Ok(provider_errors) => (fresh, joined(provider_errors)),
                    Err(e) => (self.rebuilt(auth, &ModelsFile::default()), Some(pi_wording(&e))),
                }
            }
            Err(e) => (self.rebuilt(auth, &ModelsFile::default()), Some(pi_wording(&e))),
        };
        fresh.read_llama_store(agent_dir);
        let mut configs: Vec<(&String, &serde_json::Value)> = self.extension_configs.iter().collect();
        configs.sort_by(|a, b| a.0.cmp(b.0));
        for (name, config) in configs {
            match fresh.put_extension_provider(name, config) {
                Ok(()) => {
                    fresh.extension_configs.insert(name.clone(), config.clone());
                }
                Err(e) => tracing::warn!("{e}"),
            }
        }
        for model in self.models.iter().filter(|m| is_virtual(m)) {
            if let Err(e) = fresh.add_virtual((**model).clone()) {
                tracing::warn!("{e}");
            }
        }
        fresh.config_error = error;
        *self = fresh;
    }

    /// A registry of the catalog and `file`'s needs, with this one's
    /// run-time keys and the catalog providers it had loaded.
    fn rebuilt(&self, auth: AuthStore, file: &ModelsFile) -> ModelRegistry {
        let mut fresh = ModelRegistry { auth, stored_catalogs: self.stored_catalogs.clone(), ..Default::default() };
        fresh.load_needed_providers(file);
        for provider in &self.loaded {
            fresh.ensure_provider(provider);
        }
        if self.all_loaded {
            fresh.ensure_all();
        }
        for (provider, key) in &self.runtime_keys {
            fresh.set_runtime_key(provider, key.clone());
        }
        fresh
    }

    /// The config extensions registered for provider `name`, as it applies
    /// now (pi's `getRegisteredProviderConfig`, whichever extension made it).
    pub fn extension_config(&self, name: &str) -> Option<&serde_json::Value> {
        self.extension_configs.get(name)
    }

    /// Why the last refresh could not use `models.json` (pi's `getError()`), if it could not.
    pub fn config_error(&self) -> Option<&str> {
        self.config_error.as_deref()
    }
}

/// pi's `getError()` of the providers that could not be set up: one
/// paragraph each, none when all could.
pub(super) fn joined(errors: Vec<String>) -> Option<String> {
    (!errors.is_empty()).then(|| errors.join("\n\n"))
}

/// pi's text for a `models.json` it cannot use.
pub(super) fn pi_wording(error: &ConfigError) -> String {
    match error {
        ConfigError::Io { path, source } => {
            format!("Failed to load models.json: {source}\n\nFile: {}", path.display())
        }
        ConfigError::Parse { path, message } => {
            format!("Failed to parse models.json: {message}\n\nFile: {}", path.display())
        }
        ConfigError::Invalid { path, message } => {
            format!("Invalid models.json schema:\n  - {message}\n\nFile: {}", path.display())
        }
    }
}
