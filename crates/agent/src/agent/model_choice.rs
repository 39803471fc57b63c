//! The model the agent talks to ([`ModelChoice`]): the model registry and
//! the providers that call the models, the model and thinking level in use,
//! the command line's choice (applied again to each session opened) and the
//! `--models` scope that `cycle_model` goes through.

use std::sync::Arc;

use super::session_start::StartupChoice;
use crate::config::model_resolver::Selected;
use crate::config::{ModelRegistry, Settings};
use crate::error::{CoreError, ErrorKind};
use crate::model::{Model, ThinkingLevel};
use crate::provider::{Provider, ProviderRegistry, faux};

/// Thinking level used when nothing else chooses one.
const DEFAULT_THINKING: ThinkingLevel = ThinkingLevel::Medium;

/// The models, the providers and the model in use.
pub(super) struct ModelChoice {
    registry: ModelRegistry,
    providers: ProviderRegistry,
    /// Shared with the state snapshots: replaced, never changed in place.
    model: Arc<Model>,
    thinking: ThinkingLevel,
    /// The command line's (or `initialize`'s) choice, applied to every session opened.
    startup: StartupChoice,
    /// `--models`: what `cycle_model` cycles through (with optional levels).
    scope: Vec<(Model, Option<ThinkingLevel>)>,
    /// The session runs the offline faux model because no model had
    /// credentials at its start, where pi has no model at all (and thinking
    /// level `off`): the level the first switch to a model takes, as pi's
    /// `setModel` (the settings' default thinking level, else `off`).
    no_model_switch_level: Option<ThinkingLevel>,
    /// `--model` named no model known at start while extensions were
    /// loading: the choice is made again once they all started (see
    /// [`ModelChoice::defer_startup`]).
    deferred: Option<DeferredStart>,
    /// Providers whose OAuth login an extension runs (`registerProvider` with `oauth`).
    logins: std::collections::HashMap<String, Arc<crate::extensions::Extension>>,
    /// Native providers whose key their extension resolves for each request.
    keys: std::collections::HashMap<String, Arc<crate::extensions::Extension>>,
    /// Providers whose classifier and image calls their extension implements.
    typed: super::extension_typed::ExtensionTypedModels,
    /// The process's background refreshes of the model catalogs, asked once
    /// the extensions loaded (pi's RPC mode refreshes after its session was made).
    catalog_refresh: Option<Arc<crate::auth::catalog_refreshes::CatalogRefreshes>>,
    /// The catalog as last listed to the extension hosts (`getAll`), which cache it.
    listed: super::listed_catalog::ListedCatalog,
}

/// A start-up model choice waiting for the extensions (pi resolves
/// `--model` after they loaded, so one they register can be named).
pub(super) struct DeferredStart {
    /// `--name`, recorded with the model once it is chosen.
    pub session_name: Option<String>,
    /// What the opened session recorded (a resumed session's thinking level).
    pub restored_model: Option<(String, String)>,
    pub restored_thinking: Option<String>,
}

impl ModelChoice {
    /// Until [`ModelChoice::choose_for_session`], the offline faux model.
    pub(super) fn new(registry: ModelRegistry, providers: ProviderRegistry) -> Self {
        ModelChoice {
            registry,
            providers,
            model: Arc::new(faux::faux_model()),
            thinking: ThinkingLevel::Off,
            startup: StartupChoice::default(),
            scope: Vec::new(),
            no_model_switch_level: None,
            deferred: None,
            logins: Default::default(),
            keys: Default::default(),
            typed: Default::default(),
            catalog_refresh: None,
            listed: Default::default(),
        }
    }

    /// Ask `refreshes` for this session's catalog refresh once the extensions
    /// loaded, as pi's RPC mode refreshes after its session was made.
    pub(super) fn refresh_catalogs_after_start(
        &mut self,
        refreshes: Arc<crate::auth::catalog_refreshes::CatalogRefreshes>,
    ) {
        self.catalog_refresh = Some(refreshes);
    }

    /// Ask for the refresh that is due (once): OpenRouter's key through the
    /// extension that runs its OAuth login, if one does (pi's provider has
    /// that login then, and refreshes it for its catalog).
    pub(super) fn start_catalog_refresh(&mut self) {
        let Some(refreshes) = self.catalog_refresh.take() else { return };
        const OPENROUTER: &str = "openrouter";
        let key = match (self.logins.get(OPENROUTER), self.registry.oauth_login(OPENROUTER)) {
            (Some(ext), Some(file)) => {
                Some(super::extension_login::catalog_key(ext.clone(), file, OPENROUTER.to_string()))
            }
            _ => None,
        };
        refreshes.after_extensions(&mut self.registry, key);
    }

    /// The command line's choice: `--provider`, `--model`, `--thinking`
    /// (`startup`), `--models` (the scope), `--api-key` (given to the
    /// provider of the model `--model` or the scope chooses, as pi does;
    /// without either, pi's start-up error).
    pub(super) fn apply_command_line(
        &mut self,
        startup: StartupChoice,
        api_key: Option<String>,
        scope: &[String],
        settings: &Settings,
        conversation_started: bool,
    ) -> Result<(), CoreError> {
        if !scope.is_empty() {
            let scope = self.registry.scope(scope);
            for warning in scope.warnings {
                tracing::warn!("--models: {warning}");
            }
            self.scope = scope.models;
        }
        if let Some(key) = api_key {
            let provider = self.key_provider(&startup, settings, conversation_started).ok_or_else(|| {
                CoreError::invalid(
                    "apiKey",
                    "--api-key requires a model to be specified via --model, --provider/--model, or --models",
                )
            })?;
            self.registry.set_runtime_key(&provider, key);
        }
        self.startup = startup;
        Ok(())
    }

    /// The provider `--api-key` is for: the requested model's (`--provider`,
    /// else the provider `--model` resolves to, else the settings' default
    /// provider while the pattern waits for the extensions), or that of the
    /// model the scope starts with; none without either.
    fn key_provider(
        &mut self,
        startup: &StartupChoice,
        settings: &Settings,
        conversation_started: bool,
    ) -> Option<String> {
        if let Some(pattern) = startup.pattern.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
            return startup
                .provider
                .clone()
                .or_else(|| self.registry.resolve_pattern(None, pattern, None, true).ok().map(|s| s.model.provider))
                .or_else(|| settings.default_provider.clone());
        }
        self.initial_scoped_model(settings, conversation_started).map(|(model, _)| model.provider)
    }

    pub(super) fn model(&self) -> &Model {
        &self.model
    }

    /// The model in use, shared (state snapshots).
    pub(super) fn shared_model(&self) -> Arc<Model> {
        self.model.clone()
    }

    pub(super) fn thinking(&self) -> ThinkingLevel {
        self.thinking
    }

    /// Every model, their credentials and headers.
    pub(super) fn registry(&self) -> &ModelRegistry {
        &self.registry
    }

    /// pi's `setRuntimeApiKey` (`Some`) / `removeRuntimeApiKey` (`None`) on
    /// the session's runtime: the key its requests to `provider` use.
    pub(super) fn set_runtime_key(&mut self, provider: &str, key: Option<String>) {
        match key {
            Some(key) => self.registry.set_runtime_key(provider, key),
            None => self.registry.remove_runtime_key(provider),
        }
    }

    /// Take in logins and logouts made since the last look (by pi too)
    /// from `agent_dir`'s auth.json.
    pub(super) fn sync_logins(&mut self, agent_dir: &std::path::Path) {
        self.registry.sync_auth(agent_dir);
    }

    /// Read `agent_dir`'s auth.json again (a login just finished).
    pub(super) fn reload_logins(&mut self, agent_dir: &std::path::Path) -> Result<(), crate::config::ConfigError> {
        self.registry.reload_auth(agent_dir)
    }

    /// pi's `modelRegistry.refresh()`: `models.json` read again (see
    /// [`ModelRegistry::refresh_models_json`]); the selected model as it is now.
    pub(super) fn refresh_models(&mut self, agent_dir: &std::path::Path) {
        self.registry.refresh_models_json(agent_dir);
        self.refresh_selection();
    }

    /// Every chat model, of every provider (pi's `modelRegistry.getAll()`).
    pub(super) fn all_models(&mut self) -> Vec<Model> {
        self.registry.all()
    }

    /// [`ModelChoice::all_models`] with its revision for a caller that
    /// caches it: the models only when `known` is not the current revision.
    pub(super) fn all_models_since(&mut self, known: Option<u64>) -> (u64, Option<Vec<Model>>) {
        let registry = &mut self.registry;
        self.listed.since(|listed| (!registry.all_equal(listed)).then(|| registry.all()), known)
    }

    /// A model by provider and id, whether its provider has credentials or not (pi's `find`).
    pub(super) fn find_model(&mut self, provider: &str, id: &str) -> Option<Model> {
        self.registry.find(provider, id)
    }

    /// `initialize` checked a new registry (a key added): use it.
    pub(super) fn replace_registry(&mut self, registry: ModelRegistry) {
        self.registry = registry;
    }

    /// `initialize` stands for the command line: later sessions start from
    /// its model (`pattern`, `provider`) and thinking level too.
    pub(super) fn remember_request(
        &mut self,
        pattern: Option<String>,
        provider: Option<String>,
        inline_key: bool,
        thinking: Option<ThinkingLevel>,
    ) {
        if pattern.is_some() || provider.is_some() {
            self.startup.pattern = pattern;
            self.startup.provider = provider;
            self.startup.inline_key = inline_key;
        }
        if let Some(level) = thinking {
            self.startup.thinking = Some(level);
        }
    }

    /// Use `model`: true when it is another model than the current one.
    /// The thinking level a model switch keeps: the current one, but after
    /// a start with no model pi's (see `no_model_switch_level`), once.
    pub(super) fn level_for_switch(&mut self) -> ThinkingLevel {
        self.no_model_switch_level.take().unwrap_or(self.thinking)
    }

    pub(super) fn switch(&mut self, model: Model) -> bool {
        let changed = model.provider != self.model.provider || model.id != self.model.id;
        self.model = Arc::new(model);
        changed
    }

    /// Set the thinking level, clamped to the model: the new level when it changed.
    pub(super) fn set_thinking(&mut self, wanted: ThinkingLevel) -> Option<ThinkingLevel> {
        let level = self.model.clamp_thinking(wanted);
        (level != self.thinking).then(|| {
            self.thinking = level;
            level
        })
    }

    /// The level after the current one (`None` when the model has one level only).
    pub(super) fn next_thinking(&self) -> Option<ThinkingLevel> {
        let levels = self.model.thinking_levels();
        if levels.len() <= 1 {
            return None;
        }
        let pos = levels.iter().position(|l| *l == self.thinking).map_or(0, |p| (p + 1) % levels.len());
        Some(levels[pos])
    }

    /// `--models` was given: `cycle_model` goes through its scope.
    /// The `--models` (or `enabledModels`) scope, in its order, with each
    /// pattern's thinking level when it gave one (pi's `scopedModels`).
    pub(super) fn scoped(&self) -> &[(Model, Option<ThinkingLevel>)] {
        &self.scope
    }

    pub(super) fn is_scoped(&self) -> bool {
        !self.scope.is_empty()
    }

    /// The available model after the current one (`None`: no other).
    pub(super) fn next_model(&self) -> Option<Model> {
        let available = self.registry.available();
        if available.len() <= 1 {
            return None;
        }
        let pos = available
            .iter()
            .position(|m| m.provider == self.model.provider && m.id == self.model.id)
            .map_or(0, |p| (p + 1) % available.len());
        Some(available[pos].clone())
    }

    /// The next scoped model that has credentials, with its `:<thinking>`
    /// level when the pattern gave one (`None`: no other).
    pub(super) fn next_scoped(&self) -> Option<(Model, Option<ThinkingLevel>)> {
        let scope: Vec<&(Model, Option<ThinkingLevel>)> =
            self.scope.iter().filter(|(m, _)| self.registry.has_credentials(m)).collect();
        let current = scope.iter().position(|(m, _)| m.provider == self.model.provider && m.id == self.model.id);
        let next = match current {
            _ if scope.is_empty() => return None,
            None => 0,
            Some(_) if scope.len() == 1 => return None,
            Some(i) => (i + 1) % scope.len(),
        };
        Some(scope[next].clone())
    }

    /// `set_model`: a model by provider and id, or by pattern, with the
    /// thinking level a pattern's suffix gave. It must have credentials.
    pub(super) fn find_usable(
        &mut self,
        provider: Option<&str>,
        model_id: &str,
    ) -> Result<(Model, Option<ThinkingLevel>), CoreError> {
        let found = match provider {
            Some(p) => self
                .registry
                .find(p, model_id)
                .map(|model| Selected { model, thinking: None, warning: None })
                .ok_or_else(|| format!("Model not found: {p}/{model_id}")),
            None => self.registry.resolve_pattern(None, model_id, None, false),
        };
        let Selected { model, thinking, .. } = found.map_err(|e| CoreError::not_found(e).with_field("modelId"))?;
        if !self.registry.has_credentials(&model) {
            return Err(CoreError::new(ErrorKind::Model, format!("No API key found for {}", model.full_id())));
        }
        Ok((model, thinking))
    }

    /// Pick the model and thinking level for the session just opened, as pi
    /// does at start-up and again for every new, switched, forked or cloned
    /// session: the command line's model and thinking level first, then (for a
    /// session with a conversation) what the session recorded, then the
    /// defaults (settings, provider defaults, `medium`).
    pub(super) fn choose_for_session(
        &mut self,
        settings: &Settings,
        conversation_started: bool,
        restored_model: Option<(String, String)>,
        restored_thinking: Option<String>,
    ) -> Result<(), CoreError> {
        let StartupChoice { provider, pattern, thinking, inline_key } = self.startup.clone();
        let (provider, pattern) = (provider.as_deref(), pattern.as_deref());
        let pattern = pattern.map(str::trim).filter(|p| !p.is_empty());
        let mut suffix = None;
        self.no_model_switch_level = None;
        let model = if let Some(pattern) = pattern {
            let selected = self
                .registry
                .resolve_pattern(provider, pattern, thinking, inline_key)
                .map_err(|e| CoreError::invalid("model", e))?;
            if let Some(warning) = &selected.warning {
                tracing::warn!("{warning}");
            }
            suffix = selected.thinking;
            selected.model
        } else if let Some((model, level)) = self.initial_scoped_model(settings, conversation_started) {
            suffix = level;
            model
        } else if let Some(provider) = provider {
            self.registry
                .available()
                .into_iter()
                .find(|m| m.provider == provider)
                .or_else(|| self.registry.all().iter().find(|m| m.provider == provider).cloned())
                .or_else(|| (provider == faux::FAUX_PROVIDER).then(faux::faux_model))
                .ok_or_else(|| CoreError::invalid("provider", format!("No models found for provider: {provider}")))?
        } else if let Some(m) =
            restored_model.and_then(|(p, id)| self.registry.find(&p, &id)).filter(|m| self.registry.has_credentials(m))
        {
            m
        } else if let Some(m) = self.default_model_from_settings(settings) {
            m
        } else {
            // pi's start-up choice: the first provider default (in pi's order) that
            // has credentials, else the first available model.
            let available = self.registry.available();
            let default = crate::config::catalog::DEFAULT_MODEL_PER_PROVIDER
                .iter()
                .find_map(|(p, id)| available.iter().find(|m| m.provider == *p && m.id == *id));
            let first = default.or(available.first()).cloned().unwrap_or_else(faux::faux_model);
            if first.provider == faux::FAUX_PROVIDER {
                self.no_model_switch_level = Some(settings.default_thinking_level.unwrap_or(ThinkingLevel::Off));
                tracing::warn!(
                    "no API key or model configured: using the offline faux model (see the README to configure a provider)"
                );
            }
            first
        };
        self.model = Arc::new(model);
        let wanted = thinking
            .or(suffix)
            .or_else(|| restored_thinking.and_then(|t| t.parse().ok()))
            .or(settings.default_thinking_level)
            .unwrap_or(DEFAULT_THINKING);
        self.thinking = self.model.clamp_thinking(wanted);
        Ok(())
    }

    /// The command line's model is not known yet (an extension still loading
    /// may register it): start on the choice made without it, and choose
    /// again with it once the extensions started ([`ModelChoice::take_deferred`]).
    pub(super) fn defer_startup(
        &mut self,
        settings: &Settings,
        conversation_started: bool,
        restored_model: Option<(String, String)>,
        restored_thinking: Option<String>,
        session_name: Option<String>,
    ) -> Result<(), CoreError> {
        let wanted = self.startup.clone();
        self.startup.pattern = None;
        self.startup.provider = None;
        let chosen =
            self.choose_for_session(settings, conversation_started, restored_model.clone(), restored_thinking.clone());
        self.startup = wanted;
        self.deferred = Some(DeferredStart { session_name, restored_model, restored_thinking });
        chosen
    }

    /// The start-up choice left for after the extensions started, once.
    pub(super) fn take_deferred(&mut self) -> Option<DeferredStart> {
        self.deferred.take()
    }

    /// The command line names a model (`--model`).
    pub(super) fn has_startup_pattern(&self) -> bool {
        self.startup.pattern.as_deref().is_some_and(|p| !p.trim().is_empty())
    }

    /// `--models` at the start of a conversation: the settings' default model
    /// when it is in the scope, else the scope's first model.
    fn initial_scoped_model(
        &self,
        settings: &Settings,
        conversation_started: bool,
    ) -> Option<(Model, Option<ThinkingLevel>)> {
        if self.scope.is_empty() || conversation_started {
            return None;
        }
        let saved = match (&settings.default_provider, &settings.default_model) {
            (Some(p), Some(id)) => self.scope.iter().find(|(m, _)| &m.provider == p && &m.id == id),
            _ => None,
        };
        saved.or(self.scope.first()).cloned()
    }

    fn default_model_from_settings(&mut self, settings: &Settings) -> Option<Model> {
        let id = settings.default_model.as_deref()?;
        match self.registry.resolve(settings.default_provider.as_deref(), id) {
            Ok(m) if self.registry.has_credentials(&m) => Some(m),
            Ok(m) => {
                tracing::warn!("default model {} has no API key; ignoring it", m.full_id());
                None
            }
            Err(e) => {
                tracing::warn!("settings.json defaultModel: {e}");
                None
            }
        }
    }

    /// Add an extension's virtual model to the registry (refused when a physical model has its id).
    pub(super) fn add_virtual(&mut self, model: Model) -> Result<(), String> {
        self.registry.add_virtual(model)
    }

    /// Remove a virtual model from the registry (the selection, if it is, stays).
    pub(super) fn remove_virtual(&mut self, provider: &str, id: &str) {
        self.registry.remove_virtual(provider, id);
    }

    /// An extension's provider (`registerProvider`): its models and settings
    /// in the registry (`config`, the spec's or the fields of its latest
    /// calls, merged over the provider's), and, when the extension streams
    /// it, its models of the config's API (a native provider: all of them).
    pub(super) fn register_provider(
        &mut self,
        spec: &crate::extensions::protocol::ProviderSpec,
        config: &serde_json::Value,
        streams: Arc<dyn crate::provider::runtime::PiEventSource>,
        ext: &Arc<crate::extensions::Extension>,
    ) -> Result<(), String> {
        if spec.native {
            self.registry.register_native_provider(&spec.name, config)?;
        } else {
            self.registry.register_provider(&spec.name, config)?;
        }
        if spec.oauth.is_some() {
            self.logins.insert(spec.name.clone(), ext.clone());
        }
        if spec.key {
            self.keys.insert(spec.name.clone(), ext.clone());
        }
        self.typed.register(spec, ext);
        if spec.stream && (spec.native || spec.api().is_some()) {
            let served = if spec.native { None } else { spec.api() };
            let provider = crate::provider::runtime::RuntimeProvider::new(spec.api().unwrap_or_default(), streams);
            self.providers.register_provider_stream(&spec.name, served, Arc::new(provider));
        }
        self.refresh_selection();
        Ok(())
    }

    /// Apply a registration's config again, merged over the provider's
    /// current extension config (its stream and login stay as they are).
    pub(super) fn reapply_provider_config(&mut self, spec: &crate::extensions::protocol::ProviderSpec) {
        let applied = if spec.native {
            self.registry.register_native_provider(&spec.name, &spec.config)
        } else {
            self.registry.register_provider(&spec.name, &spec.config)
        };
        if let Err(error) = applied {
            tracing::warn!("{error}");
        }
        self.refresh_selection();
    }

    /// Forget the config extensions registered for provider `name` (the
    /// registry has the provider as before; streams and logins stay).
    pub(super) fn forget_provider_config(&mut self, name: &str) {
        self.registry.unregister_provider(name);
    }

    /// What a registration the extension changed served: its stream's API
    /// and its login (the registry keeps its config, for the new one to merge over).
    pub(super) fn drop_provider_services(&mut self, spec: &crate::extensions::protocol::ProviderSpec) {
        self.logins.remove(&spec.name);
        self.keys.remove(&spec.name);
        self.typed.unregister(&spec.name);
        if spec.stream {
            self.providers.unregister_provider_stream(&spec.name);
        }
    }

    /// `unregisterProvider` (or its extension went away): the provider is as before.
    pub(super) fn unregister_provider(&mut self, spec: &crate::extensions::protocol::ProviderSpec) {
        self.registry.unregister_provider(&spec.name);
        self.drop_provider_services(spec);
        self.refresh_selection();
    }

    /// The selected model as the registry now has it (a provider registered
    /// over it changed its endpoint); one that is gone stays selected.
    fn refresh_selection(&mut self) {
        let (provider, id) = (self.model.provider.clone(), self.model.id.clone());
        if let Some(model) = self.registry.find(&provider, &id) {
            self.model = Arc::new(model);
        }
    }

    /// The models host of `ctx.modelRegistry` and codemode's `models.*`:
    /// the registry's catalog and credentials, and the extensions' own
    /// classifier and image implementations.
    pub(super) fn models_host(&self) -> pi_mcp::codemode::ModelsHost {
        pi_mcp::codemode::ModelsHost::new(self.registry.clone()).with_delegate(self.typed.delegate())
    }

    /// The providers by API (a virtual model's router picks among them).
    pub(super) fn providers(&self) -> &ProviderRegistry {
        &self.providers
    }

    /// Checks before a run may start: a callable model with credentials.
    pub(super) fn preflight(&self) -> Result<(), CoreError> {
        if !crate::config::models::is_virtual(&self.model)
            && self.providers.for_model(&self.model.provider, &self.registry.chat_api(&self.model)).is_none()
        {
            return Err(CoreError::new(
                ErrorKind::Unsupported,
                format!(
                    "The API \"{}\" of model {} is not supported by this build",
                    self.model.api,
                    self.model.full_id()
                ),
            ));
        }
        if !self.registry.has_credentials(&self.model) {
            let vars = crate::config::auth::provider_env_vars(&self.model.provider);
            let hint = match vars.first() {
                Some(var) => format!("Set {var}, add the key to auth.json or models.json, or pass --api-key."),
                None => "Add an apiKey for this provider to models.json or auth.json, or pass --api-key.".to_string(),
            };
            return Err(CoreError::new(
                ErrorKind::Model,
                format!("No API key found for the selected model ({}).\n\n{hint}", self.model.full_id()),
            ));
        }
        Ok(())
    }

    /// The provider that calls the current model (with its login, if it
    /// has one); `None` when this build has none for the model's API.
    pub(super) fn provider(&self) -> Option<Arc<dyn Provider>> {
        if let Some(error) = self.registry.missing_chat_api(&self.model) {
            return Some(crate::agent::virtual_route::unrouted(error));
        }
        let provider = self.providers.for_model(&self.model.provider, &self.registry.chat_api(&self.model))?;
        Some(self.authorized(provider, &self.model))
    }

    /// `provider`, calling `model` with its provider's credential: an
    /// extension's OAuth login, or a native provider's key asked for each
    /// request, else the registry's (`auth.json` logins refreshed as needed).
    pub(super) fn authorized(&self, provider: Arc<dyn Provider>, model: &Model) -> Arc<dyn Provider> {
        let name = &model.provider;
        if let (Some(ext), Some(file)) = (self.logins.get(name), self.registry.oauth_login(name)) {
            use crate::agent::extension_login::ExtensionLogin;
            return Arc::new(ExtensionLogin::new(provider, ext.clone(), file, name));
        }
        if let Some(ext) = self.keys.get(name) {
            use crate::agent::extension_login::ExtensionKey;
            return Arc::new(ExtensionKey::new(provider, ext.clone(), name, self.registry.stored_key(name)));
        }
        crate::auth::authorize(provider, &self.registry, model)
    }

    /// The current model's API key.
    pub(super) fn api_key(&self) -> Option<String> {
        self.registry.api_key(&self.model.provider)
    }

    /// The current model's request headers.
    pub(super) fn headers(&self) -> std::collections::HashMap<String, String> {
        self.registry.headers(&self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faux(id: &str, reasoning: bool) -> Model {
        Model { id: id.to_string(), reasoning, ..faux::faux_model() }
    }

    fn choice() -> ModelChoice {
        let registry = ModelRegistry::from_models(vec![faux("faux-1", true), faux("faux-2", false)]);
        ModelChoice::new(registry, ProviderRegistry::default())
    }

    #[test]
    fn thinking_is_clamped_to_the_model_and_changes_are_told() {
        let mut c = choice();
        assert_eq!(c.set_thinking(ThinkingLevel::High), Some(ThinkingLevel::High));
        assert_eq!(c.set_thinking(ThinkingLevel::High), None);
        let next = c.next_thinking().unwrap();
        assert_ne!(next, ThinkingLevel::High);
        assert!(c.switch(faux("faux-2", false)));
        assert!(!c.switch(faux("faux-2", false)));
        assert_eq!(c.set_thinking(ThinkingLevel::High), Some(ThinkingLevel::Off));
        assert_eq!(c.next_thinking(), None);
    }

    #[test]
    fn cycling_goes_through_the_available_models() {
        let mut c = choice();
        assert!(!c.is_scoped());
        let next = c.next_model().unwrap();
        assert_eq!(next.id, "faux-2");
        c.switch(next);
        assert_eq!(c.next_model().unwrap().id, "faux-1");
        assert_eq!(c.next_scoped(), None);
    }

    #[test]
    fn the_session_choice_starts_from_the_command_line_then_the_defaults() {
        let mut c = choice();
        c.remember_request(None, Some("faux".into()), false, Some(ThinkingLevel::Low));
        c.choose_for_session(&Settings::default(), false, None, None).unwrap();
        assert_eq!((c.model().id.as_str(), c.thinking()), ("faux-1", ThinkingLevel::Low));
        let mut c = choice();
        c.choose_for_session(&Settings::default(), true, Some(("faux".into(), "faux-1".into())), Some("high".into()))
            .unwrap();
        assert_eq!((c.model().id.as_str(), c.thinking()), ("faux-1", ThinkingLevel::High));
    }

    #[test]
    fn the_first_switch_after_a_start_with_no_model_takes_pi_s_level() {
        // No model has credentials: pi has no model (level off); pi-rpc runs faux at medium.
        let mut c = ModelChoice::new(ModelRegistry::from_models(vec![]), ProviderRegistry::default());
        c.choose_for_session(&Settings::default(), false, None, None).unwrap();
        assert_eq!((c.model().provider.as_str(), c.thinking()), ("faux", ThinkingLevel::Medium));
        assert_eq!(c.level_for_switch(), ThinkingLevel::Off, "pi's setModel: no default, the no-model level");
        assert_eq!(c.level_for_switch(), ThinkingLevel::Medium, "only the first switch");
        let settings = Settings { default_thinking_level: Some(ThinkingLevel::High), ..Settings::default() };
        c.choose_for_session(&settings, false, None, None).unwrap();
        assert_eq!(c.level_for_switch(), ThinkingLevel::High, "the settings' default first");
        // A start with a model keeps its level on a switch.
        let mut registry = ModelRegistry::from_models(vec![Model { provider: "p".into(), ..faux("m", true) }]);
        registry.set_runtime_key("p", "k".into());
        let mut c = ModelChoice::new(registry, ProviderRegistry::default());
        c.choose_for_session(&Settings::default(), false, None, None).unwrap();
        assert_eq!(c.model().provider, "p");
        assert_eq!(c.level_for_switch(), ThinkingLevel::Medium);
    }

    #[test]
    fn a_model_without_a_provider_in_this_build_cannot_run() {
        let c = choice();
        let err = c.preflight().unwrap_err();
        assert!(err.message.contains("is not supported by this build"), "{}", err.message);
        assert!(c.provider().is_none());
        let mut c = choice();
        assert!(c.find_usable(Some("faux"), "nope").is_err());
    }
}
