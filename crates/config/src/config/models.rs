//! The model registry: the built-in catalog, `models.json` custom providers and
//! overrides, credentials per provider, and model lookup (`provider/id`, id, fuzzy).

use std::collections::{HashMap, HashSet};
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

/// The `api` of a virtual model: each request made with it is routed to a physical model first.
pub const VIRTUAL_MODEL_API: &str = "pi-virtual";

/// Whether `model` is virtual (an extension routes its requests).
pub fn is_virtual(model: &Model) -> bool {
    model.api == VIRTUAL_MODEL_API
}

/// Request settings of one provider (from the catalog and `models.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
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
    /// `models.json`'s `modelOverrides` per provider: pi applies them over
    /// the models an extension registers too.
    json_overrides: HashMap<String, Map<String, Value>>,
    /// pi's llama.cpp provider: the models its last listing kept.
    llama: llama::StoredModels,
}

/// A provider's models and settings before an extension registered it.
#[derive(Debug, Clone)]
struct ProviderBackup {
    models: Vec<Slot>,
    settings: Option<ProviderSettings>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelsFile {
    #[serde(default)]
    providers: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderFile {
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
    headers: Option<Map<String, Value>>,
    compat: Option<Map<String, Value>>,
}

impl ModelRegistry {
    /// Catalog + `<agent_dir>/models.json` + `auth.json`.
    pub fn load(agent_dir: &Path) -> Result<ModelRegistry, ConfigError> {
        let mut reg = ModelRegistry { auth: AuthStore::load(agent_dir)?, ..Default::default() };
        let path = agent_dir.join("models.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => Some(text),
            Ok(_) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ConfigError::Io { path, source: e }),
        };
        let file: ModelsFile = match &text {
            Some(text) => serde_json::from_str(text)
                .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() })?,
            None => ModelsFile::default(),
        };
        let needed: Vec<&str> = catalog::catalog_providers()
            .filter(|p| {
                file.providers.contains_key(*p)
                    || reg.auth.has(p)
                    || env_key_for(p).is_some()
                    || env_bearer_token_for(p).is_some()
            })
            .collect();
        for provider in needed {
            reg.ensure_provider(provider);
        }
        reg.apply_models_json(file, &path)?;
        reg.read_llama_store(agent_dir);
        Ok(reg)
    }

    /// Add or replace a virtual model (an extension's `registerVirtualModel`,
    /// `api` [`VIRTUAL_MODEL_API`]). Refused when a physical model has its id.
    pub fn add_virtual(&mut self, model: Model) -> Result<(), String> {
        self.ensure_provider(&model.provider);
        if self.models.iter().any(|m| m.provider == model.provider && m.id == model.id && !is_virtual(m)) {
            return Err(format!("Virtual model {} conflicts with a physical model.", model.full_id()));
        }
        self.remove_virtual(&model.provider, &model.id);
        self.models.push(Slot::Own(Box::new(model)));
        Ok(())
    }

    /// Remove a virtual model (`unregisterVirtualModel`, or its extension went away).
    pub fn remove_virtual(&mut self, provider: &str, id: &str) {
        self.models.retain(|m| !(is_virtual(m) && m.provider == provider && m.id == id));
    }

    /// An extension's provider (pi's `registerProvider(name, config)`, the
    /// config form, whose fields are `models.json`'s): with `models`, they
    /// replace the provider's models; without, the provider's models stay and
    /// take its `baseUrl`, headers and key. Registering again starts from the
    /// provider as it was before the first registration. As in pi, the
    /// config's own `modelOverrides` and provider-level `compat` are not
    /// applied, and `models.json`'s `modelOverrides` go over its models.
    pub fn register_provider(&mut self, name: &str, config: &Value) -> Result<(), String> {
        let fail = |e: String| format!("registerProvider(\"{name}\"): {e}");
        let mut pf: ProviderFile = serde_json::from_value(config.clone()).map_err(|e| fail(e.to_string()))?;
        pf.model_overrides = self.json_overrides.get(name).cloned().unwrap_or_default();
        pf.compat = None;
        self.ensure_provider(name);
        self.restore_provider(name);
        let backup = ProviderBackup {
            models: self.models.iter().filter(|m| m.provider == name && !is_virtual(m)).cloned().collect(),
            settings: self.providers.get(name).cloned(),
        };
        self.registered.entry(name.to_string()).or_insert(backup);
        if !pf.models.is_empty() {
            self.models.retain(|m| m.provider != name || is_virtual(m));
        }
        let applied = self.apply_provider(name, pf);
        if applied.is_err() {
            self.unregister_provider(name);
        }
        applied.map_err(fail)
    }

    /// pi's `unregisterProvider`: the provider's models and settings are
    /// again what they were before it was registered (nothing when it was not).
    pub fn unregister_provider(&mut self, name: &str) {
        if self.restore_provider(name) {
            self.registered.remove(name);
        }
    }

    /// Put back the provider as it was before its first registration.
    fn restore_provider(&mut self, name: &str) -> bool {
        let Some(backup) = self.registered.get(name).cloned() else { return false };
        self.models.retain(|m| m.provider != name || is_virtual(m));
        self.models.extend(backup.models);
        match backup.settings {
            Some(settings) => self.providers.insert(name.to_string(), settings),
            None => self.providers.remove(name),
        };
        true
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
        self.models.extend(catalog::shared_provider_models(provider).iter().map(Slot::Shared));
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
        self.all_loaded = true;
    }

    fn apply_models_json(&mut self, file: ModelsFile, path: &Path) -> Result<(), ConfigError> {
        for (provider, raw) in file.providers {
            let bad = |msg: String| ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!("providers.{provider}: {msg}"),
            };
            let pf: ProviderFile = serde_json::from_value(raw).map_err(|e| bad(e.to_string()))?;
            if !pf.model_overrides.is_empty() {
                self.json_overrides.insert(provider.clone(), pf.model_overrides.clone());
            }
            self.apply_provider(&provider, pf).map_err(bad)?;
        }
        Ok(())
    }

    /// Apply one provider's `models.json` entry (or an extension's
    /// `registerProvider` config, which has the same fields).
    fn apply_provider(&mut self, provider: &str, pf: ProviderFile) -> Result<(), String> {
        let provider = provider.to_string();
        let settings = self.providers.entry(provider.clone()).or_default();
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
            let (Some(api), Some(base_url)) = (api, base_url) else {
                return Err(format!("models[{i}] ({}): needs `api` and `baseUrl` on the provider or the model", mf.id));
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
                headers: mf.headers,
                thinking_level_map: mf.thinking_level_map,
                compat,
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

    /// Use this key for a provider for the rest of the process (`--api-key`, `initialize`).
    pub fn set_runtime_key(&mut self, provider: &str, key: String) {
        self.ensure_provider(provider);
        self.runtime_keys.insert(provider.to_string(), key);
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
            return llama::server(&self.auth).map(|(_, key)| key);
        }
        if let Some(k) = self.auth.key_for(provider) {
            return Some(k);
        }
        if let Some(cfg) = self.providers.get(provider).and_then(|p| p.api_key.as_deref())
            && let Some(k) = resolve_config_value(cfg)
        {
            return Some(k);
        }
        env_key_for(provider)
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
        if self.llama.changed(agent_dir) {
            self.read_llama_store(agent_dir);
        }
        if self.auth.changed()
            && let Err(e) = self.reload_auth(agent_dir)
        {
            tracing::warn!("{e}");
        }
    }

    /// The llama.cpp models kept by its last listing replace the registry's.
    fn read_llama_store(&mut self, agent_dir: &Path) {
        self.llama = llama::StoredModels::read(agent_dir);
        self.models.retain(|m| m.provider != llama::PROVIDER);
        self.models.extend(self.llama.chat.iter().map(|m| Slot::Own(Box::new(m.clone()))));
    }

    /// The provider's stored `env` (auth.json), read before the process environment.
    pub fn provider_env(&self, provider: &str) -> crate::provider::credential::ProviderEnv {
        self.auth.provider_env(provider)
    }

    /// The llama.cpp classifier models kept by its last listing.
    pub fn llama_classifiers(&self) -> &[Value] {
        &self.llama.classifiers
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
            || self.api_key(&model.provider).is_some()
            || self.bearer_token(&model.provider).is_some()
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
        let found: Vec<Model> = self.models.iter().filter(|m| self.has_credentials(m)).map(|m| (**m).clone()).collect();
        if found.is_empty() { vec![faux::faux_model()] } else { found }
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

    /// True when the provider has credentials (pi's `hasConfiguredAuth`; faux always).
    pub fn provider_usable(&self, provider: &str) -> bool {
        provider == faux::FAUX_PROVIDER || self.api_key(provider).is_some() || self.bearer_token(provider).is_some()
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

/// pi's `mergeCompat`: fields of `top` win; the routing and chat-template
/// objects merge key by key.
fn merge_compat(base: Option<Map<String, Value>>, top: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    match (base, top) {
        (None, None) => None,
        (Some(b), None) => Some(b),
        (None, Some(t)) => Some(t),
        (Some(mut b), Some(t)) => {
            for (key, value) in t {
                let nested = ["openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs", "chatTemplateArgs"]
                    .contains(&key.as_str());
                match (b.get_mut(&key), value) {
                    (Some(Value::Object(existing)), Value::Object(incoming)) if nested => existing.extend(incoming),
                    (_, value) => {
                        b.insert(key, value);
                    }
                }
            }
            Some(b)
        }
    }
}

/// Apply a `modelOverrides` entry: object fields merge field by field, others replace.
fn apply_override(model: &mut Model, patch: Map<String, Value>) -> Result<(), String> {
    let mut current = serde_json::to_value(&*model).map_err(|e| e.to_string())?;
    if let Value::Object(obj) = &mut current {
        for (key, value) in patch {
            match (obj.get_mut(&key), value) {
                (Some(Value::Object(existing)), Value::Object(incoming)) => existing.extend(incoming),
                (_, value) => {
                    obj.insert(key, value);
                }
            }
        }
    }
    *model = serde_json::from_value(current).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry_with(json: &str) -> ModelRegistry {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("models.json"), json).unwrap();
        ModelRegistry::load(dir.path()).unwrap()
    }

    #[test]
    fn custom_providers_get_pi_defaults() {
        let mut reg = registry_with(
            r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k","models":[{"id":"m1"},{"id":"m2","reasoning":true,"contextWindow":1000}]}}}"#,
        );
        let m1 = reg.find("local", "m1").unwrap();
        assert_eq!(m1.name, "m1");
        assert_eq!(m1.context_window, 128_000);
        assert_eq!(m1.max_tokens, 16_384);
        assert_eq!(m1.input, vec!["text"]);
        assert_eq!(reg.api_key("local").as_deref(), Some("k"));
        assert!(reg.available().iter().any(|m| m.id == "m2"));
    }

    #[test]
    fn an_extension_provider_replaces_or_redirects_and_unregistering_restores() {
        let mut reg = registry_with(r#"{"providers":{"anthropic":{"apiKey":"k"}}}"#);
        let builtin = reg.all().into_iter().filter(|m| m.provider == "anthropic").count();
        assert!(builtin > 1);
        // Only a baseUrl: the built-in models stay, redirected.
        reg.register_provider("anthropic", &serde_json::json!({"baseUrl": "http://127.0.0.1:9/a"})).unwrap();
        let redirected: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
        assert_eq!(redirected.len(), builtin);
        assert!(redirected.iter().all(|m| m.base_url == "http://127.0.0.1:9/a"));
        // Models replace the provider's; the key is the config's.
        let config = serde_json::json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "my-api", "apiKey": "lit",
            "models": [{"id": "one", "name": "One", "reasoning": true, "contextWindow": 1000, "maxTokens": 10}]});
        reg.register_provider("anthropic", &config).unwrap();
        let now: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
        assert_eq!(now.iter().map(|m| (m.id.as_str(), m.api.as_str())).collect::<Vec<_>>(), [("one", "my-api")]);
        assert_eq!(reg.api_key("anthropic").as_deref(), Some("lit"));
        reg.unregister_provider("anthropic");
        let back: Vec<Model> = reg.all().into_iter().filter(|m| m.provider == "anthropic").collect();
        assert_eq!(back.len(), builtin);
        assert!(back.iter().all(|m| m.base_url != "http://127.0.0.1:9/a" && m.api != "my-api"));
        assert_eq!(reg.api_key("anthropic").as_deref(), Some("k"));
        // A new provider goes entirely; a bad config is refused and leaves nothing.
        reg.register_provider("acme", &config).unwrap();
        assert!(reg.find("acme", "one").is_some());
        reg.unregister_provider("acme");
        assert!(reg.find("acme", "one").is_none());
        let bad = serde_json::json!({"models": [{"id": "x"}]});
        assert!(reg.register_provider("nobase", &bad).unwrap_err().contains("registerProvider(\"nobase\")"));
        assert!(reg.find("nobase", "x").is_none());
    }

    #[test]
    fn resolution_by_full_id_exact_and_fuzzy() {
        let mut reg = registry_with(
            r#"{"providers":{"p":{"baseUrl":"http://x","api":"openai-completions","apiKey":"k","models":[{"id":"alpha-large"},{"id":"alpha-small"},{"id":"beta"}]}}}"#,
        );
        assert_eq!(reg.resolve(None, "p/beta").unwrap().id, "beta");
        assert_eq!(reg.resolve(Some("p"), "beta").unwrap().id, "beta");
        assert_eq!(reg.resolve(None, "small").unwrap().id, "alpha-small");
        // pi 1.6.0: the id that collates last wins among one provider's matches.
        assert_eq!(reg.resolve(None, "alpha").unwrap().id, "alpha-small");
        assert_eq!(
            reg.resolve(None, "nope-nope").unwrap_err(),
            "Model \"nope-nope\" not found. Use --list-models to see available models."
        );
        let custom = reg.resolve_pattern(Some("p"), "nope", None, false).unwrap();
        assert_eq!((custom.model.provider.as_str(), custom.model.id.as_str()), ("p", "nope"));
        assert!(custom.warning.unwrap().contains("Using custom model id"));
        assert_eq!(reg.resolve(None, "faux/faux-1").unwrap().provider, "faux");
    }

    #[test]
    fn broken_models_json_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("models.json"), r#"{"providers":{"p":{"models":[{"id":"m"}]}}}"#).unwrap();
        let err = ModelRegistry::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("models.json") && err.contains("providers.p"), "{err}");
        std::fs::write(dir.path().join("models.json"), "{").unwrap();
        assert!(ModelRegistry::load(dir.path()).unwrap_err().to_string().contains("models.json"));
    }

    #[test]
    fn auth_header_sends_the_key_as_a_bearer_token() {
        let mut reg = registry_with(
            r#"{"providers":{"proxy":{"baseUrl":"http://127.0.0.1:1","api":"anthropic-messages","apiKey":"k-1","authHeader":true,"headers":{"x-a":"b"},"models":[{"id":"m"}]}}}"#,
        );
        let m = reg.find("proxy", "m").unwrap();
        let h = reg.headers(&m);
        assert_eq!(h.get("Authorization").map(String::as_str), Some("Bearer k-1"));
        assert_eq!(h.get("x-a").map(String::as_str), Some("b"));
    }

    #[test]
    fn catalog_models_are_available_with_a_runtime_key() {
        let mut reg = ModelRegistry::load(tempfile::tempdir().unwrap().path()).unwrap();
        assert!(reg.all().iter().any(|m| m.provider == "groq"));
        reg.set_runtime_key("groq", "gsk-test".into());
        let available = reg.available();
        assert!(available.iter().any(|m| m.provider == "groq"));
        assert!(available.iter().all(|m| reg.has_credentials(m)));
        assert_eq!(reg.resolve(Some("anthropic"), "claude-sonnet-4-5").unwrap().api, "anthropic-messages");
    }

    #[test]
    fn provider_settings_reach_built_in_models() {
        let mut reg = registry_with(
            r#"{"providers":{"openrouter":{"baseUrl":"http://127.0.0.1:9/api/v1","compat":{"supportsStrictMode":false,"openRouterRouting":{"only":["x"]}},
                "models":[{"id":"my/model"}]}}}"#,
        );
        let built_in = reg.find("openrouter", "anthropic/claude-fable-5:batch").unwrap();
        assert_eq!(built_in.base_url, "http://127.0.0.1:9/api/v1");
        let compat = built_in.compat.unwrap();
        assert_eq!(compat.get("supportsStrictMode"), Some(&Value::Bool(false)));
        assert_eq!(compat.get("cacheControlFormat").and_then(Value::as_str), Some("anthropic"));
        let custom = reg.find("openrouter", "my/model").unwrap();
        assert_eq!(custom.api, "openai-completions");
        assert_eq!((custom.context_window, custom.max_tokens), (128_000, 16_384));
    }

    #[test]
    fn a_login_written_after_loading_is_seen_at_the_next_sync() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = ModelRegistry::load(dir.path()).unwrap();
        assert!(!reg.provider_usable("anthropic"));
        reg.sync_auth(dir.path());
        let login = r#"{"anthropic":{"type":"oauth","refresh":"r","access":"sk-ant-oat01-x","expires":1}}"#;
        std::fs::write(dir.path().join("auth.json"), login).unwrap();
        reg.sync_auth(dir.path());
        assert!(reg.provider_usable("anthropic"));
        assert!(reg.oauth_login("anthropic").is_some());
        assert!(reg.available().iter().any(|m| m.provider == "anthropic"), "its models came in");
        std::fs::write(dir.path().join("auth.json"), "{}").unwrap();
        reg.sync_auth(dir.path());
        assert!(!reg.provider_usable("anthropic"), "logged out");
    }

    fn shared_slot<'r>(reg: &'r ModelRegistry, provider: &str, id: &str) -> &'r Slot {
        reg.models.iter().find(|m| m.provider == provider && m.id == id).unwrap()
    }

    #[test]
    fn sessions_share_one_parsed_catalog_and_keep_their_changes_to_themselves() {
        // Two sessions of one process: one with a models.json that re-routes a
        // built-in provider, overrides a model and adds one, and a plain one.
        let changed = registry_with(
            r#"{"providers":{"openrouter":{"baseUrl":"http://127.0.0.1:9/v1","modelOverrides":{"openai/gpt-4o":{"name":"Mine"}},
                "models":[{"id":"my/model"}]},"groq":{"modelOverrides":{"openai/gpt-oss-120b":{"maxTokens":7}}}}}"#,
        );
        let mut changed = changed;
        let mut plain = ModelRegistry::load(tempfile::tempdir().unwrap().path()).unwrap();
        let _ = (changed.resolve(None, "openai/gpt-4o"), plain.resolve(None, "openai/gpt-4o"));
        assert!(changed.all_loaded && plain.all_loaded);
        // Unchanged built-in models are the process's one parsed copy in both.
        let shared = catalog::shared_provider_models("anthropic");
        let sonnet = shared.iter().find(|m| m.id == "claude-sonnet-4-5").unwrap();
        for reg in [&changed, &plain] {
            assert!(
                matches!(shared_slot(reg, "anthropic", "claude-sonnet-4-5"), Slot::Shared(m) if std::ptr::eq(*m, sonnet))
            );
        }
        let owned = |reg: &ModelRegistry| reg.models.iter().filter(|m| matches!(m, Slot::Own(_))).count();
        assert_eq!(owned(&plain), 0, "a plain session copies no model");
        let openrouter = catalog::shared_provider_models("openrouter").len();
        assert_eq!(owned(&changed), openrouter + 2, "re-routed provider, one groq override, one custom model");
        // The changes are the changed session's only; the shared catalog is untouched.
        let mine = changed.find("openrouter", "openai/gpt-4o").unwrap();
        assert_eq!((mine.name.as_str(), mine.base_url.as_str()), ("Mine", "http://127.0.0.1:9/v1"));
        assert_eq!(changed.find("groq", "openai/gpt-oss-120b").unwrap().max_tokens, 7);
        assert!(changed.find("openrouter", "my/model").is_some());
        let theirs = plain.find("openrouter", "openai/gpt-4o").unwrap();
        assert_eq!(theirs.base_url, "https://openrouter.ai/api/v1");
        assert_ne!(theirs.name, "Mine");
        assert_ne!(plain.find("groq", "openai/gpt-oss-120b").unwrap().max_tokens, 7);
        assert!(plain.find("openrouter", "my/model").is_none());
        assert_eq!(
            &theirs,
            catalog::shared_provider_models("openrouter").iter().find(|m| m.id == "openai/gpt-4o").unwrap()
        );
        // A key set at run time in one session does not reach the other.
        changed.set_runtime_key("groq", "gsk-1".into());
        assert!(changed.provider_usable("groq") && !plain.provider_usable("groq"));
        // So does an extension's virtual model.
        let virtual_model = Model { api: VIRTUAL_MODEL_API.into(), ..theirs.clone() };
        assert!(changed.add_virtual(virtual_model.clone()).is_err(), "a physical model has its id");
        let virtual_model = Model { provider: "router".into(), id: "auto".into(), ..virtual_model };
        changed.add_virtual(virtual_model).unwrap();
        assert!(changed.find("router", "auto").is_some() && plain.find("router", "auto").is_none());
        // A clone (initialize's checked registry) shares the catalog too.
        let copy = plain.clone();
        assert!(
            matches!(shared_slot(&copy, "anthropic", "claude-sonnet-4-5"), Slot::Shared(m) if std::ptr::eq(*m, sonnet))
        );
    }

    #[test]
    fn no_credentials_means_faux_only() {
        let reg = ModelRegistry::from_models(vec![]);
        let avail = reg.available();
        assert_eq!(avail.len(), 1);
        assert_eq!(avail[0].provider, "faux");
    }

    #[test]
    fn catalog_providers_load_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("auth.json"), r#"{"anthropic":{"type":"api_key","key":"sk-test"}}"#).unwrap();
        let mut reg = ModelRegistry::load(dir.path()).unwrap();
        let available = reg.available();
        assert!(!available.is_empty() && available.iter().all(|m| m.provider == "anthropic"), "{available:?}");
        assert!(reg.loaded.contains("anthropic") && !reg.all_loaded, "only the provider with a key was parsed");
        // A lookup by id reaches every provider's models.
        let m = reg.resolve(None, "openai/gpt-4o").unwrap();
        assert_eq!(m.provider, "openai");
        assert!(reg.all_loaded);
        assert_eq!(reg.all().len(), catalog::catalog().len());
    }
}
