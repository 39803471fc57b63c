//! The model registry: the built-in catalog, `models.json` custom providers and
//! overrides, credentials per provider, and model lookup (`provider/id`, id, fuzzy).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ConfigError;
use super::auth::{AuthStore, env_bearer_token_for, env_key_for, resolve_config_value};
use super::catalog;
use super::llama;
use super::model_resolver::{self, Selected};
use crate::model::{Model, ModelCost, ThinkingLevel};
use crate::provider::faux;

mod extension_providers;
mod extension_typed;
mod llama_store;
mod overrides;
mod provider_auth;
mod refresh;
mod schema_errors;
mod stored_catalog_sync;
use overrides::{apply_override, merge_compat};
pub use provider_auth::{AuthStatus, LoginMethods, ProviderAuth, ProviderInfo};

/// The provider whose login lists the models its account may use.
const COPILOT: &str = "github-copilot";

/// The `api` of a virtual model: each request made with it is routed to a physical model first.
pub const VIRTUAL_MODEL_API: &str = "pi-virtual";

/// Whether `model` is virtual (an extension routes its requests).
pub fn is_virtual(model: &Model) -> bool {
    model.api == VIRTUAL_MODEL_API
}

/// Request settings of one provider (from the catalog and `models.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// The provider's display name (`models.json`'s or a registration's `name`).
    pub name: Option<String>,
    /// Config value for the key (`$ENV`, `!cmd`, literal).
    pub api_key: Option<String>,
    /// Header config values.
    pub headers: Map<String, Value>,
    /// Send the key as `Authorization: Bearer` (for custom anthropic-style endpoints).
    pub auth_header: bool,
    /// The provider's `baseUrl` (re-routes its built-in models, classifiers and image models too).
    pub base_url: Option<String>,
}

/// One model of a registry: a built-in one as the shared catalog has it, or
/// the registry's own (custom, or a built-in one its `models.json` changed).
/// Sessions of one process thus share the parsed catalog; a change made by
/// one session's registry copies the model into that registry only.
#[derive(Debug, Clone)]
enum Slot {
    Shared(&'static Model),
    Own(Box<Model>),
}

impl std::ops::Deref for Slot {
    type Target = Model;
    fn deref(&self) -> &Model {
        match self {
            Slot::Shared(model) => model,
            Slot::Own(model) => model,
        }
    }
}

impl Slot {
    /// Change the model: the registry's own copy is changed, never the shared one.
    fn change<E>(&mut self, f: impl FnOnce(&mut Model) -> Result<(), E>) -> Result<(), E> {
        let mut model = (**self).clone();
        f(&mut model)?;
        *self = Slot::Own(Box::new(model));
        Ok(())
    }
}

/// All models pi-rpc knows, and how to authenticate to their providers.
#[derive(Debug, Clone, Default)]
pub struct ModelRegistry {
    models: Vec<Slot>,
    providers: HashMap<String, ProviderSettings>,
    auth: AuthStore,
    runtime_keys: HashMap<String, String>,
    /// Catalog providers whose models are in `models`. The catalog is large, so
    /// only providers that have credentials or appear in `models.json` are
    /// loaded at start; the rest come in when a lookup needs them.
    loaded: HashSet<String>,
    all_loaded: bool,
    /// Providers extensions registered (`registerProvider`): what each was
    /// before, restored when it is unregistered.
    registered: HashMap<String, ProviderBackup>,
    /// The config extensions registered for each provider, as it applies
    /// now: each `registerProvider(name, config)` is merged over it,
    /// whatever extension made the previous one (pi's model runtime).
    extension_configs: HashMap<String, Value>,
    /// `models.json`'s `modelOverrides` per provider: pi applies them over
    /// the models an extension registers too.
    json_overrides: HashMap<String, Map<String, Value>>,
    /// pi's llama.cpp provider: the models its last listing kept.
    llama: llama::StoredModels,
    /// The classifier and image models of the providers extensions
    /// registered with `models` (an empty list hides the built-in ones).
    extension_typed: BTreeMap<String, Vec<Value>>,
    /// Why the last `refresh` could not use `models.json` (pi's `getError()`).
    config_error: Option<String>,
    /// The catalogs pi's `models-store.json` keeps, laid over the built-in
    /// providers' models as they come in (the session's registry only).
    stored_catalogs: super::stored_catalogs::StoredCatalogs,
}

/// A provider's models and settings before an extension registered it.
#[derive(Debug, Clone)]
struct ProviderBackup {
    models: Vec<Slot>,
    settings: Option<ProviderSettings>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelsFile {
    /// Required, as in pi (`{}` is not a models.json).
    providers: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderFile {
    name: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    api: Option<String>,
    #[serde(default)]
    headers: Map<String, Value>,
    compat: Option<Map<String, Value>>,
    #[serde(default)]
    auth_header: bool,
    #[serde(default)]
    models: Vec<Value>,
    #[serde(default)]
    model_overrides: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelFile {
    id: String,
    name: Option<String>,
    api: Option<String>,
    base_url: Option<String>,
    reasoning: Option<bool>,
    thinking_level_map: Option<Map<String, Value>>,
    input: Option<Vec<String>>,
    cost: Option<ModelCost>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    sampling_params: Option<Map<String, Value>>,
    sampling_params_by_thinking_level: Option<Map<String, Value>>,
    headers: Option<Map<String, Value>>,
    compat: Option<Map<String, Value>>,
    /// `promptCache`: the cache lifetimes (seconds) of the `short` and `long`
    /// tiers, which cache warming reads; kept among the model's other members.
    prompt_cache: Option<Map<String, Value>>,
    /// `inputLimits` (pi-ai's: `images.resize`, the limits the model's
    /// images are fitted into); kept among the model's other members.
    input_limits: Option<Map<String, Value>>,
}

/// `models.json` (none when missing or empty).
fn read_models_file(path: &Path) -> Result<ModelsFile, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => text,
        Ok(_) => return Ok(ModelsFile::default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ModelsFile::default()),
        Err(e) => return Err(ConfigError::Io { path: path.to_path_buf(), source: e }),
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() })?;
    schema_errors::deserialize_at(value, "")
        .map_err(|message| ConfigError::Invalid { path: path.to_path_buf(), message })
}

impl ModelRegistry {
    /// Catalog + `<agent_dir>/models.json` + `auth.json`. A `models.json`
    /// that cannot be read or parsed is no stop, as in pi: its providers are
    /// left out and the reason is kept as [`ModelRegistry::config_error`]
    /// (pi's `getError()`); a provider of it that cannot be set up is left
    /// out alone, and named there.
    /// The catalogs pi keeps in `models-store.json` join the built-in
    /// providers' models first (see [`super::stored_catalogs`]).
    pub fn load(agent_dir: &Path) -> Result<ModelRegistry, ConfigError> {
        let auth = AuthStore::load_file(&agent_dir.join("auth.json"))?;
        let stored = super::stored_catalogs::StoredCatalogs::read(agent_dir);
        let mut reg = ModelRegistry::load_over(Some(&agent_dir.join("models.json")), auth, stored);
        reg.read_llama_store(agent_dir);
        Ok(reg)
    }

    /// Catalog + the `models.json` at `models_path` (none: the catalog alone)
    /// + the `auth.json` at `auth_path`: pi's `ModelRuntime.create({modelsPath,
    /// authPath})` over files of the caller's choosing.
    pub fn load_files(models_path: Option<&Path>, auth_path: &Path) -> Result<ModelRegistry, ConfigError> {
        Ok(ModelRegistry::load_with_auth(models_path, AuthStore::load_file(auth_path)?))
    }

    /// Catalog + the `models.json` at `models_path` (none: the catalog alone)
    /// + the credentials of `auth`.
    pub fn load_with_auth(models_path: Option<&Path>, auth: AuthStore) -> ModelRegistry {
        ModelRegistry::load_over(models_path, auth, Default::default())
    }

    /// [`ModelRegistry::load_with_auth`] with `stored` catalogs over the built-in ones.
    fn load_over(
        models_path: Option<&Path>,
        auth: AuthStore,
        stored: super::stored_catalogs::StoredCatalogs,
    ) -> ModelRegistry {
        let mut reg = ModelRegistry { auth: auth.clone(), stored_catalogs: stored.clone(), ..Default::default() };
        let applied = match models_path {
            Some(path) => read_models_file(path).and_then(|file| {
                reg.load_needed_providers(&file);
                reg.apply_models_json(file, path)
            }),
            None => {
                reg.load_needed_providers(&ModelsFile::default());
                Ok(Vec::new())
            }
        };
        match applied {
            Ok(provider_errors) => reg.config_error = refresh::joined(provider_errors),
            Err(error) => {
                reg = ModelRegistry { auth, stored_catalogs: stored, ..Default::default() };
                reg.load_needed_providers(&ModelsFile::default());
                reg.config_error = Some(refresh::pi_wording(&error));
            }
        }
        reg
    }

    /// The catalog providers (and those a stored catalog gives chat models)
    /// loaded at start: those `models.json` names or that have credentials.
    fn load_needed_providers(&mut self, file: &ModelsFile) {
        let needed: Vec<String> = catalog::catalog_providers()
            .map(str::to_string)
            .chain(self.stored_catalogs.chat_providers())
            .filter(|p| {
                file.providers.contains_key(p)
                    || self.auth.has(p)
                    || env_key_for(p).is_some()
                    || env_bearer_token_for(p).is_some()
            })
            .collect();
        for provider in needed {
            self.ensure_provider(&provider);
        }
    }

    /// A physical model by provider and id (pi's `getPhysicalModel`).
    pub fn find_physical(&mut self, provider: &str, id: &str) -> Option<Model> {
        self.find(provider, id).filter(|m| !is_virtual(m))
    }

    /// A registry with just these models (tests).
    pub fn from_models(models: Vec<Model>) -> ModelRegistry {
        let models = models.into_iter().map(|m| Slot::Own(Box::new(m))).collect();
        ModelRegistry { models, all_loaded: true, ..Default::default() }
    }

    /// Bring a catalog provider's models in (once).
    fn ensure_provider(&mut self, provider: &str) {
        if self.all_loaded || !self.loaded.insert(provider.to_string()) {
            return;
        }
        let builtin = catalog::shared_provider_models(provider);
        match self.stored_catalogs.overlay(provider, builtin) {
            Some(models) => self.models.extend(models.into_iter().map(|m| Slot::Own(Box::new(m)))),
            None => self.models.extend(builtin.iter().map(Slot::Shared)),
        }
    }

    /// Bring every catalog provider in (for lookups across all models).
    fn ensure_all(&mut self) {
        if self.all_loaded {
            return;
        }
        let names: Vec<&str> = catalog::catalog_providers().collect();
        for name in names {
            self.ensure_provider(name);
        }
        // A built-in provider with no chat model of its own (TypeSafe) that a stored catalog gives some.
        for name in self.stored_catalogs.chat_providers() {
            self.ensure_provider(&name);
        }
        self.all_loaded = true;
    }

    /// Apply `models.json`: a provider entry not of the file's shape fails
    /// the whole file (pi's schema check); a provider that cannot be set up
    /// (a model without an `api`, …) is left out as it was before, the
    /// others stay, and its error comes back in pi's words (`Provider "…": …`).
    fn apply_models_json(&mut self, file: ModelsFile, path: &Path) -> Result<Vec<String>, ConfigError> {
        let mut entries = Vec::new();
        for (provider, raw) in file.providers {
            let pf: ProviderFile = schema_errors::deserialize_at(raw, &format!("providers.{provider}"))
                .map_err(|message| ConfigError::Invalid { path: path.to_path_buf(), message })?;
            entries.push((provider, pf));
        }
        let mut errors = Vec::new();
        for (provider, pf) in entries {
            self.ensure_provider(&provider);
            let before = ProviderBackup {
                models: self.models.iter().filter(|m| m.provider == provider).cloned().collect(),
                settings: self.providers.get(&provider).cloned(),
            };
            if !pf.model_overrides.is_empty() {
                self.json_overrides.insert(provider.clone(), pf.model_overrides.clone());
            }
            if let Err(message) = self.apply_provider(&provider, pf) {
                self.json_overrides.remove(&provider);
                self.models.retain(|m| m.provider != provider);
                self.models.extend(before.models);
                match before.settings {
                    Some(settings) => self.providers.insert(provider.clone(), settings),
                    None => self.providers.remove(&provider),
                };
                errors.push(format!("Provider \"{provider}\": {message}"));
            }
        }
        Ok(errors)
    }

    /// Apply one provider's `models.json` entry (or an extension's
    /// `registerProvider` config, which has the same fields).
    fn apply_provider(&mut self, provider: &str, pf: ProviderFile) -> Result<(), String> {
        let provider = provider.to_string();
        let settings = self.providers.entry(provider.clone()).or_default();
        if pf.name.is_some() {
            settings.name = pf.name.clone();
        }
        if pf.api_key.is_some() {
            settings.api_key = pf.api_key.clone();
        }
        settings.headers.extend(pf.headers.clone());
        settings.auth_header |= pf.auth_header;
        if pf.base_url.is_some() {
            settings.base_url = pf.base_url.clone();
        }
        // The provider's baseUrl re-routes its built-in models, and its compat
        // merges into theirs (pi's applyModelsJson).
        if pf.base_url.is_some() || pf.compat.is_some() {
            for slot in self.models.iter_mut().filter(|m| m.provider == provider) {
                slot.change(|m| {
                    if let Some(base) = &pf.base_url {
                        m.base_url = base.clone();
                    }
                    if pf.compat.is_some() {
                        m.compat = merge_compat(m.compat.take(), pf.compat.clone());
                    }
                    Ok::<(), String>(())
                })?;
            }
        }
        for (i, raw_model) in pf.models.into_iter().enumerate() {
            let mf: ModelFile = serde_json::from_value(raw_model).map_err(|e| format!("models[{i}]: {e}"))?;
            // Missing api/baseUrl come from the provider's model of that id, else of
            // that api, else its Chat Completions model, else its first (pi's findModelDefaults).
            let wanted_api = mf.api.clone().or_else(|| pf.api.clone());
            let own: Vec<&Model> = self.models.iter().map(|m| &**m).filter(|m| m.provider == provider).collect();
            let defaults = own
                .iter()
                .find(|m| m.id == mf.id)
                .or_else(|| wanted_api.as_ref().and_then(|api| own.iter().find(|m| &m.api == api)))
                .or_else(|| own.iter().find(|m| m.api == "openai-completions"))
                .or_else(|| own.first())
                .map(|m| (m.api.clone(), m.base_url.clone()));
            let api = wanted_api
                .or_else(|| defaults.as_ref().map(|d| d.0.clone()))
                .or_else(|| catalog::provider_api(&provider).map(str::to_string));
            let base_url = mf
                .base_url
                .clone()
                .or_else(|| pf.base_url.clone())
                .or_else(|| defaults.as_ref().map(|d| d.1.clone()))
                .or_else(|| catalog::provider_base_url(&provider).map(str::to_string));
            // pi's words (its `modelFromJson`).
            let Some(api) = api else {
                return Err(format!(
                    "Provider {provider}, model {}: no \"api\" specified. Set at provider or model level.",
                    mf.id
                ));
            };
            let Some(base_url) = base_url else {
                return Err(format!("Provider {provider}: \"baseUrl\" is required when defining custom models."));
            };
            let compat = merge_compat(pf.compat.clone(), mf.compat);
            let model = Model {
                name: mf.name.unwrap_or_else(|| mf.id.clone()),
                id: mf.id,
                api,
                provider: provider.clone(),
                base_url,
                reasoning: mf.reasoning.unwrap_or(false),
                input: mf.input.unwrap_or_else(|| vec!["text".to_string()]),
                context_window: mf.context_window.unwrap_or(128_000),
                max_tokens: mf.max_tokens.unwrap_or(16_384),
                cost: mf.cost.unwrap_or_default(),
                sampling_params: mf.sampling_params,
                sampling_params_by_thinking_level: mf.sampling_params_by_thinking_level,
                headers: mf.headers,
                thinking_level_map: mf.thinking_level_map,
                compat,
                extra: [("promptCache", mf.prompt_cache), ("inputLimits", mf.input_limits)]
                    .into_iter()
                    .filter_map(|(key, value)| Some((key.to_string(), Value::Object(value?))))
                    .collect(),
            };
            match self.models.iter_mut().find(|m| m.provider == model.provider && m.id == model.id) {
                Some(existing) => *existing = Slot::Own(Box::new(model)),
                None => self.models.push(Slot::Own(Box::new(model))),
            }
        }
        for (id, patch) in pf.model_overrides {
            let Some(slot) = self.models.iter_mut().find(|m| m.provider == provider && m.id == id) else {
                continue;
            };
            let Value::Object(patch) = patch else {
                return Err(format!("modelOverrides.{id}: expected an object"));
            };
            slot.change(|model| apply_override(model, patch)).map_err(|e| format!("modelOverrides.{id}: {e}"))?;
        }
        Ok(())
    }

    /// Every known model (catalog and custom), without faux.
    pub fn all(&mut self) -> Vec<Model> {
        self.ensure_all();
        self.models.iter().map(|m| (**m).clone()).collect()
    }

    /// The providers of the models loaded so far (every custom and registered
    /// one; the catalog's as they come in), in the order their first model came.
    pub fn loaded_providers(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for model in &self.models {
            if !ids.iter().any(|id| *id == model.provider) {
                ids.push(model.provider.clone());
            }
        }
        ids
    }

    /// Whether [`ModelRegistry::all`] would give `models`, without copying the catalog.
    pub fn all_equal(&mut self, models: &[Model]) -> bool {
        self.ensure_all();
        self.models.len() == models.len() && self.models.iter().zip(models).all(|(mine, other)| **mine == *other)
    }

    /// Use this key for a provider for the rest of the process (`--api-key`, `initialize`).
    pub fn set_runtime_key(&mut self, provider: &str, key: String) {
        self.ensure_provider(provider);
        self.runtime_keys.insert(provider.to_string(), key);
    }

    /// Stop using the key [`Self::set_runtime_key`] set for a provider.
    pub fn remove_runtime_key(&mut self, provider: &str) {
        self.runtime_keys.remove(provider);
    }

    /// The key for a provider: runtime, then auth.json, then models.json, then environment.
    pub fn api_key(&self, provider: &str) -> Option<String> {
        if provider == faux::FAUX_PROVIDER {
            return None;
        }
        if let Some(k) = self.runtime_keys.get(provider) {
            return Some(k.clone());
        }
        if provider == llama::PROVIDER {
            return self.llama_key();
        }
        if let Some(k) = self.auth.key_for(provider) {
            return Some(k);
        }
        // A login that stored settings and no key (pi's Bedrock profile, Vertex AI's project):
        // the provider's own credentials, read with those settings.
        if self.auth.has(provider)
            && let Some(k) = crate::config::auth::env_key_with(provider, &self.auth.provider_env(provider))
        {
            return Some(k);
        }
        if let Some(cfg) = self.providers.get(provider).and_then(|p| p.api_key.as_deref())
            && let Some(k) = resolve_config_value(cfg)
        {
            return Some(k);
        }
        env_key_for(provider)
    }

    /// The key stored for `provider`: set at run time (`--api-key`) or an
    /// `auth.json` entry (pi's stored credential), not a configured one.
    pub fn stored_key(&self, provider: &str) -> Option<String> {
        self.runtime_keys.get(provider).cloned().or_else(|| self.auth.key_for(provider))
    }

    /// The `auth.json` whose OAuth login is the provider's credential in
    /// effect (no key set at run time overrides it).
    pub fn oauth_login(&self, provider: &str) -> Option<std::path::PathBuf> {
        if self.runtime_keys.contains_key(provider) {
            return None;
        }
        self.auth.oauth_file(provider).map(std::path::Path::to_path_buf)
    }

    /// Read `auth.json` again when it changed since it was read (a login or
    /// logout by pi or pi-rpc): as pi, which reads it before each use. A
    /// file that became unreadable keeps the credentials read before.
    pub fn sync_auth(&mut self, agent_dir: &Path) {
        // One look at models-store.json for both of its readers.
        let revision = super::auth::revision_of(&super::stored_catalogs::store_path(agent_dir));
        self.sync_llama_store(agent_dir, revision);
        self.sync_stored_catalogs(agent_dir, revision);
        if self.auth.changed()
            && let Err(e) = self.reload_auth(agent_dir)
        {
            tracing::warn!("{e}");
        }
    }

    /// The provider's stored `env` (auth.json), read before the process environment.
    pub fn provider_env(&self, provider: &str) -> crate::provider::credential::ProviderEnv {
        self.auth.provider_env(provider)
    }

    /// Read `auth.json` again: providers that gained a credential come in.
    pub fn reload_auth(&mut self, agent_dir: &Path) -> Result<(), ConfigError> {
        self.auth = AuthStore::load(agent_dir)?;
        let gained: Vec<&str> = catalog::catalog_providers().filter(|p| self.auth.has(p)).collect();
        for provider in gained {
            self.ensure_provider(provider);
        }
        Ok(())
    }

    /// A bearer token sent as `Authorization` instead of a key
    /// (`ANTHROPIC_AUTH_TOKEN`), when no key is configured.
    fn bearer_token(&self, provider: &str) -> Option<String> {
        if self.api_key(provider).is_some() {
            return None;
        }
        env_bearer_token_for(provider)
    }

    /// True when the model can be called (faux always can).
    pub fn has_credentials(&self, model: &Model) -> bool {
        // A virtual model under a provider of no physical model needs none (as in pi).
        let keyless_virtual = is_virtual(model)
            && !self.models.iter().any(|m| m.provider == model.provider && !is_virtual(m))
            && !catalog::catalog_providers().any(|p| p == model.provider);
        keyless_virtual
            || model.provider == faux::FAUX_PROVIDER
            || self.has_key(&model.provider)
            || self.bearer_token(&model.provider).is_some()
    }

    /// Whether `provider` has a key, a configured `!command` counting as one
    /// without being run (pi's availability check; the command runs when a
    /// request needs the key).
    fn has_key(&self, provider: &str) -> bool {
        let configured = self.providers.get(provider).and_then(|p| p.api_key.as_deref());
        configured.is_some_and(|key| key.starts_with('!')) || self.api_key(provider).is_some()
    }

    /// Resolved headers for a model (provider then model values), plus
    /// `Authorization: Bearer <key>` when the provider sets `authHeader` (or
    /// the bearer token of [`env_bearer_token_for`]).
    pub fn headers(&self, model: &Model) -> HashMap<String, String> {
        let mut out = HashMap::new();
        let provider_headers = self.providers.get(&model.provider).map(|p| p.headers.iter());
        let model_headers = model.headers.as_ref().map(|h| h.iter());
        for (name, value) in provider_headers.into_iter().flatten().chain(model_headers.into_iter().flatten()) {
            if let Some(v) = value.as_str().and_then(resolve_config_value) {
                out.insert(name.clone(), v);
            }
        }
        let bearer = if self.auth_header(&model.provider) {
            self.api_key(&model.provider)
        } else {
            self.bearer_token(&model.provider)
        };
        if let Some(token) = bearer {
            out.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
            out.insert("Authorization".to_string(), format!("Bearer {token}"));
        }
        out
    }

    /// The provider's request settings from `models.json`, with an extension's registration over them.
    pub fn provider_settings(&self, provider: &str) -> Option<&ProviderSettings> {
        self.providers.get(provider)
    }

    /// The provider's `baseUrl` from `models.json` (or an extension's registration).
    pub fn provider_base_url(&self, provider: &str) -> Option<&str> {
        self.providers.get(provider).and_then(|p| p.base_url.as_deref())
    }

    /// Whether the provider wants the key as a bearer token (custom endpoints).
    pub fn auth_header(&self, provider: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| p.auth_header)
    }

    /// Models whose provider has credentials; the offline faux model when none has.
    pub fn available(&self) -> Vec<Model> {
        let found: Vec<Model> = self
            .models
            .iter()
            .filter(|m| self.has_credentials(m) && self.login_allows(m))
            .map(|m| (**m).clone())
            .collect();
        if found.is_empty() { vec![faux::faux_model()] } else { found }
    }

    /// pi's filters of a login's models, by provider, id and type (`chat`,
    /// `classifier`, `image`): a GitHub Copilot login keeps only the chat
    /// models its account may use (`availableModelIds`, pi's `filterModels`);
    /// a ChatGPT login of `openai` reaches no classifier (pi's `filterAllModels`:
    /// the Decisions API refuses its tokens).
    pub fn login_keeps(&self, provider: &str, id: &str, kind: &str) -> bool {
        match (provider, kind) {
            (COPILOT, "chat") if !self.runtime_keys.contains_key(COPILOT) => {
                self.auth.login_model_ids(COPILOT).is_none_or(|ids| ids.iter().any(|i| i == id))
            }
            ("openai", "classifier") => self.oauth_login("openai").is_none(),
            _ => true,
        }
    }

    fn login_allows(&self, model: &Model) -> bool {
        self.login_keeps(&model.provider, &model.id, "chat")
    }

    /// Exact lookup by provider and id (faux included).
    pub fn find(&mut self, provider: &str, id: &str) -> Option<Model> {
        if provider == faux::FAUX_PROVIDER {
            let faux = faux::faux_model();
            return (faux.id == id).then_some(faux);
        }
        self.ensure_provider(provider);
        self.models.iter().find(|m| m.provider == provider && m.id == id).map(|m| (**m).clone())
    }

    /// True when the provider has credentials (pi's `hasConfiguredAuth`; faux
    /// always): a configured `!command` key counts without being run, as pi's
    /// check does (the background catalog refresh at start asks this).
    pub fn provider_usable(&self, provider: &str) -> bool {
        provider == faux::FAUX_PROVIDER || self.has_key(provider) || self.bearer_token(provider).is_some()
    }

    /// Resolve a `--model` pattern (optionally on `--provider`) as pi 1.6.0 does;
    /// see [`model_resolver::resolve_cli`].
    pub fn resolve_pattern(
        &mut self,
        provider: Option<&str>,
        pattern: &str,
        explicit_thinking: Option<ThinkingLevel>,
        inline_key: bool,
    ) -> Result<Selected, String> {
        // Every model, borrowed: a pattern is resolved without copying the
        // catalog (a `pi serve` session's start spent a third of its CPU on that).
        self.ensure_all();
        let faux = faux::faux_model();
        let all: Vec<&Model> = self.models.iter().map(|m| &**m).chain(std::iter::once(&faux)).collect();
        model_resolver::resolve_cli(&all, provider, pattern, explicit_thinking, inline_key, &|p| {
            self.provider_usable(p)
        })
    }

    /// [`ModelRegistry::resolve_pattern`] without thinking suffix handling by the caller.
    pub fn resolve(&mut self, provider: Option<&str>, pattern: &str) -> Result<Model, String> {
        self.resolve_pattern(provider, pattern, None, false).map(|s| s.model)
    }

    /// `--models` patterns resolved among the available models.
    pub fn scope(&mut self, patterns: &[String]) -> model_resolver::Scope {
        self.ensure_all();
        model_resolver::resolve_scope(patterns, &self.available())
    }
}

#[cfg(test)]
mod tests;
