//! Ops that read or change the agent's settings and state: model, thinking
//! level, queue modes, toggles, state snapshots, `initialize`.

use serde_json::Value;

use super::actor::Agent;
use super::internal::QueueKind;
use super::session_start::StartupChoice;
use crate::config::model_resolver::Selected;
use crate::config::settings::persist_setting;
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::model::{Model, ThinkingLevel};
use crate::op::{ClearedQueues, CycledModel, InitializeParams, QueueMode, Reply, SessionInfo, StateSnapshot};
use crate::provider::faux;

/// Thinking level used when nothing else chooses one.
const DEFAULT_THINKING: ThinkingLevel = ThinkingLevel::Medium;

impl Agent {
    /// `cycle_thinking_level`: the next level the model supports (`None`
    /// when it has one level only).
    pub(super) async fn cycle_thinking_level(&mut self) -> Option<ThinkingLevel> {
        let levels = self.model.thinking_levels();
        if levels.len() <= 1 {
            return None;
        }
        let pos = levels.iter().position(|l| *l == self.thinking).map_or(0, |p| (p + 1) % levels.len());
        self.change_thinking(levels[pos]).await;
        Some(self.thinking)
    }

    /// `set_steering_mode` / `set_follow_up_mode`.
    pub(super) fn set_queue_mode(&mut self, kind: QueueKind, mode: QueueMode) -> Reply {
        let (queue, key) = match kind {
            QueueKind::Steering => (&mut self.steering, "steeringMode"),
            QueueKind::FollowUp => (&mut self.follow_up, "followUpMode"),
        };
        queue.mode = mode;
        self.persist(key, Value::String(mode.as_str().to_string()));
        Reply::Ack
    }

    pub(super) fn set_auto_compaction(&mut self, enabled: bool) -> Reply {
        self.auto_compaction = enabled;
        self.persist("compaction.enabled", Value::Bool(enabled));
        Reply::Ack
    }

    pub(super) fn set_auto_retry(&mut self, enabled: bool) -> Reply {
        self.set_retry_enabled(enabled);
        self.persist("retry.enabled", Value::Bool(enabled));
        Reply::Ack
    }

    /// `clear_queue`: both queues emptied, what they held.
    pub(super) async fn clear_queues(&mut self) -> Reply {
        let steering = self.steering.clear();
        let follow_up = self.follow_up.clear();
        self.emit_queue_update().await;
        Reply::QueueCleared(ClearedQueues { steering, follow_up })
    }

    pub(super) fn snapshot(&self) -> StateSnapshot {
        StateSnapshot {
            model: Some(self.model.clone()),
            thinking_level: self.thinking,
            is_streaming: self.activity.is_running(),
            is_compacting: self.is_compacting(),
            is_bash_running: self.activity.is_bash_running(),
            steering_mode: self.steering.mode,
            follow_up_mode: self.follow_up.mode,
            session_file: self.session.file_path().map(|p| p.display().to_string()),
            session_id: self.session.session_id().to_string(),
            session_name: self.session.name(),
            auto_compaction_enabled: self.auto_compaction,
            auto_retry_enabled: self.retry_enabled.load(std::sync::atomic::Ordering::SeqCst),
            message_count: self.messages.len(),
            pending_message_count: self.steering.len() + self.follow_up.len(),
            active_tools: self.active_tools.clone(),
            context_usage: self.context_usage(),
            session_header: self.session.header().clone(),
        }
    }

    fn persist(&self, key: &str, value: Value) {
        if !self.persist_settings {
            return;
        }
        if let Err(e) = persist_setting(&self.agent_dir, key, value) {
            tracing::warn!("cannot save setting {key}: {e}");
        }
    }

    pub(super) fn last_assistant_text(&self) -> Option<String> {
        self.messages.iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => {
                let text = a.text();
                let text = text.trim();
                (!text.is_empty()).then(|| text.to_string())
            }
            _ => None,
        })
    }

    pub(super) async fn set_session_name(&mut self, name: String) -> Result<Reply, CoreError> {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err(CoreError::invalid("name", "Session name cannot be empty"));
        }
        self.session.append_session_info(&name).map_err(|e| CoreError::internal(e.to_string()))?;
        self.emit(AgentEvent::SessionInfoChanged { name }).await;
        Ok(Reply::Ack)
    }

    /// Change the thinking level (clamped to the model); announce and record real changes.
    pub(super) async fn change_thinking(&mut self, wanted: ThinkingLevel) {
        let level = self.model.clamp_thinking(wanted);
        if level != self.thinking {
            self.thinking = level;
            if let Err(e) = self.session.append_thinking_level_change(level.as_str()) {
                tracing::error!("cannot write session entry: {e}");
            }
            self.emit(AgentEvent::ThinkingLevelChanged { level }).await;
        }
    }

    /// Switch to `model`, keeping the thinking level where the model allows it.
    async fn switch_model(&mut self, model: Model) {
        let changed = model.provider != self.model.provider || model.id != self.model.id;
        self.model = model;
        if changed && let Err(e) = self.session.append_model_change(&self.model.provider, &self.model.id) {
            tracing::error!("cannot write session entry: {e}");
        }
        self.change_thinking(self.thinking).await;
        if changed {
            self.emit(AgentEvent::ModelChanged { model: Box::new(self.model.clone()), thinking_level: self.thinking })
                .await;
        }
    }

    pub(super) async fn set_model(&mut self, provider: Option<String>, model_id: String) -> Result<Reply, CoreError> {
        let found = match provider.as_deref() {
            Some(p) => self
                .models
                .find(p, &model_id)
                .map(|model| Selected { model, thinking: None, warning: None })
                .ok_or_else(|| format!("Model not found: {p}/{model_id}")),
            None => self.models.resolve_pattern(None, &model_id, None, false),
        };
        let Selected { model, thinking, .. } = found.map_err(|e| CoreError::not_found(e).with_field("modelId"))?;
        if !self.models.has_credentials(&model) {
            return Err(CoreError::new(
                crate::error::ErrorKind::Model,
                format!("No API key found for {}", model.full_id()),
            ));
        }
        self.switch_model(model).await;
        if let Some(level) = thinking {
            self.change_thinking(level).await;
        }
        Ok(Reply::Model(Box::new(self.model.clone())))
    }

    pub(super) async fn cycle_model(&mut self) -> Result<Reply, CoreError> {
        if !self.scoped_models.is_empty() {
            return self.cycle_scoped_model().await;
        }
        let available = self.models.available();
        if available.len() <= 1 {
            return Ok(Reply::CycleModel(None));
        }
        let pos = available
            .iter()
            .position(|m| m.provider == self.model.provider && m.id == self.model.id)
            .map_or(0, |p| (p + 1) % available.len());
        self.switch_model(available[pos].clone()).await;
        Ok(Reply::CycleModel(Some(Box::new(CycledModel {
            model: self.model.clone(),
            thinking_level: self.thinking,
            is_scoped: false,
        }))))
    }

    /// `cycle_model` with `--models`: the next scoped model that has
    /// credentials, with its `:<thinking>` level when the pattern gave one.
    async fn cycle_scoped_model(&mut self) -> Result<Reply, CoreError> {
        let scope: Vec<(Model, Option<ThinkingLevel>)> =
            self.scoped_models.iter().filter(|(m, _)| self.models.has_credentials(m)).cloned().collect();
        let current = scope.iter().position(|(m, _)| m.provider == self.model.provider && m.id == self.model.id);
        let next = match current {
            _ if scope.is_empty() => return Ok(Reply::CycleModel(None)),
            None => 0,
            Some(_) if scope.len() == 1 => return Ok(Reply::CycleModel(None)),
            Some(i) => (i + 1) % scope.len(),
        };
        let (model, level) = scope[next].clone();
        self.switch_model(model).await;
        if let Some(level) = level {
            self.change_thinking(level).await;
        }
        Ok(Reply::CycleModel(Some(Box::new(CycledModel {
            model: self.model.clone(),
            thinking_level: self.thinking,
            is_scoped: true,
        }))))
    }

    pub(super) fn set_active_tools(&mut self, tools: Vec<String>) -> Result<Reply, CoreError> {
        if let Some(unknown) = tools.iter().find(|t| !self.tools.contains(t)) {
            let known: Vec<&str> = self.tools.names().collect();
            return Err(CoreError::invalid(
                "tools",
                format!("Unknown tool: {unknown}. Known tools: {}", known.join(", ")),
            ));
        }
        let mut unique = Vec::new();
        for t in tools {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        self.active_tools = unique;
        Ok(Reply::ActiveTools(self.active_tools.clone()))
    }

    /// Pick the model and thinking level for the session just opened, as pi
    /// does at start-up and again for every new, switched, forked or cloned
    /// session: the command line's model and thinking level first, then (for a
    /// session with a conversation) what the session recorded, then the
    /// defaults (settings, provider defaults, `medium`).
    pub(super) fn select_initial_model(
        &mut self,
        restored_model: Option<(String, String)>,
        restored_thinking: Option<String>,
    ) -> Result<(), CoreError> {
        let StartupChoice { provider, pattern, thinking, inline_key } = self.startup.clone();
        let (provider, pattern) = (provider.as_deref(), pattern.as_deref());
        let pattern = pattern.map(str::trim).filter(|p| !p.is_empty());
        let mut suffix = None;
        let model = if let Some(pattern) = pattern {
            let selected = self
                .models
                .resolve_pattern(provider, pattern, thinking, inline_key)
                .map_err(|e| CoreError::invalid("model", e))?;
            if let Some(warning) = &selected.warning {
                tracing::warn!("{warning}");
            }
            suffix = selected.thinking;
            selected.model
        } else if let Some((model, level)) = self.initial_scoped_model() {
            suffix = level;
            model
        } else if let Some(provider) = provider {
            self.models
                .available()
                .into_iter()
                .find(|m| m.provider == provider)
                .or_else(|| self.models.all().iter().find(|m| m.provider == provider).cloned())
                .or_else(|| (provider == faux::FAUX_PROVIDER).then(faux::faux_model))
                .ok_or_else(|| CoreError::invalid("provider", format!("No models found for provider: {provider}")))?
        } else if let Some(m) =
            restored_model.and_then(|(p, id)| self.models.find(&p, &id)).filter(|m| self.models.has_credentials(m))
        {
            m
        } else if let Some(m) = self.default_model_from_settings() {
            m
        } else {
            // pi's start-up choice: the first provider default (in pi's order) that
            // has credentials, else the first available model.
            let available = self.models.available();
            let default = crate::config::catalog::DEFAULT_MODEL_PER_PROVIDER
                .iter()
                .find_map(|(p, id)| available.iter().find(|m| m.provider == *p && m.id == *id));
            let first = default.or(available.first()).cloned().unwrap_or_else(faux::faux_model);
            if first.provider == faux::FAUX_PROVIDER {
                tracing::warn!(
                    "no API key or model configured: using the offline faux model (see the README to configure a provider)"
                );
            }
            first
        };
        self.model = model;
        let wanted = thinking
            .or(suffix)
            .or_else(|| restored_thinking.and_then(|t| t.parse().ok()))
            .or(self.settings.default_thinking_level)
            .unwrap_or(DEFAULT_THINKING);
        self.thinking = self.model.clamp_thinking(wanted);
        Ok(())
    }

    /// `--models` at the start of a conversation: the settings' default model
    /// when it is in the scope, else the scope's first model.
    fn initial_scoped_model(&self) -> Option<(Model, Option<ThinkingLevel>)> {
        if self.scoped_models.is_empty() || !self.messages.is_empty() {
            return None;
        }
        let saved = match (&self.settings.default_provider, &self.settings.default_model) {
            (Some(p), Some(id)) => self.scoped_models.iter().find(|(m, _)| &m.provider == p && &m.id == id),
            _ => None,
        };
        saved.or(self.scoped_models.first()).cloned()
    }

    fn default_model_from_settings(&mut self) -> Option<Model> {
        let id = self.settings.default_model.as_deref()?;
        match self.models.resolve(self.settings.default_provider.as_deref(), id) {
            Ok(m) if self.models.has_credentials(&m) => Some(m),
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

    /// Record model and thinking level in a fresh session (and `--name`).
    pub(super) fn start_session_entries(&mut self, name: Option<String>) -> Result<(), CoreError> {
        let io = |e: crate::session::SessionError| CoreError::internal(e.to_string());
        if let Some(name) = name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            self.session.append_session_info(name).map_err(io)?;
        }
        // Only the model and thinking level are needed, not the messages.
        let (model, thinking_level) = self.session.context_model_and_thinking();
        let same_model = model.as_ref().is_some_and(|(p, id)| *p == self.model.provider && *id == self.model.id);
        if !same_model {
            self.session.append_model_change(&self.model.provider, &self.model.id).map_err(io)?;
        }
        if thinking_level.as_deref() != Some(self.thinking.as_str()) {
            self.session.append_thinking_level_change(self.thinking.as_str()).map_err(io)?;
        }
        Ok(())
    }

    /// JSON-RPC `initialize`: validate everything, then apply it all.
    pub(super) async fn initialize(&mut self, p: InitializeParams) -> Result<Reply, CoreError> {
        let cwd = match &p.cwd {
            Some(c) => {
                let path = crate::config::expand_home(std::path::Path::new(c));
                let path = if path.is_absolute() { path } else { self.cwd.join(path) };
                let path = std::fs::canonicalize(&path)
                    .map_err(|e| CoreError::invalid("cwd", format!("cwd {}: {e}", path.display())))?;
                if !path.is_dir() {
                    return Err(CoreError::invalid("cwd", format!("cwd is not a directory: {}", path.display())));
                }
                Some(path)
            }
            None => None,
        };
        if let Some(tools) = &p.tools
            && let Some(unknown) = tools.iter().find(|t| !self.tools.contains(t))
        {
            return Err(CoreError::invalid("tools", format!("Unknown tool: {unknown}")));
        }
        let mut registry = self.models.clone();
        if let Some(key) = &p.api_key {
            let provider = p
                .provider
                .clone()
                .or_else(|| {
                    let m = p.model.as_deref()?;
                    registry.resolve_pattern(None, m, None, true).ok().map(|s| s.model.provider)
                })
                .unwrap_or_else(|| self.model.provider.clone());
            registry.set_runtime_key(&provider, key.clone());
        }
        let mut suffix_thinking = None;
        let model = match (&p.model, &p.provider) {
            (Some(m), provider) => {
                let selected = registry
                    .resolve_pattern(provider.as_deref(), m, p.thinking_level, p.api_key.is_some())
                    .map_err(|e| CoreError::invalid("model", e))?;
                suffix_thinking = selected.thinking;
                Some(selected.model)
            }
            (None, Some(provider)) => Some(
                registry
                    .all()
                    .to_vec()
                    .into_iter()
                    .find(|m| &m.provider == provider && registry.has_credentials(m))
                    .or_else(|| (provider == faux::FAUX_PROVIDER).then(faux::faux_model))
                    .ok_or_else(|| {
                        CoreError::invalid("provider", format!("No usable model for provider: {provider}"))
                    })?,
            ),
            (None, None) => None,
        };
        if let Some(model) = &model
            && !registry.has_credentials(model)
        {
            let var = crate::config::auth::provider_env_vars(&model.provider).first().copied().unwrap_or("an API key");
            return Err(CoreError::invalid(
                "apiKey",
                format!("No API key found for {}: pass apiKey or set {var}", model.full_id()),
            ));
        }
        // Everything checked: apply.
        self.models = registry;
        if let Some(cwd) = cwd
            && cwd != self.cwd
        {
            self.cwd = cwd;
            self.rebind_fresh_session();
        }
        // `initialize` stands for the command line: later sessions start from it too.
        if p.model.is_some() || p.provider.is_some() {
            self.startup.pattern = p.model.clone();
            self.startup.provider = p.provider.clone();
            self.startup.inline_key = p.api_key.is_some();
        }
        if let Some(level) = p.thinking_level {
            self.startup.thinking = Some(level);
        }
        if let Some(model) = model {
            self.switch_model(model).await;
        }
        if let Some(level) = p.thinking_level.or(suffix_thinking) {
            self.change_thinking(level).await;
        }
        if let Some(tools) = p.tools {
            self.set_active_tools(tools)?;
        }
        self.add_client_tools(p.client_tools)?;
        Ok(Reply::Session(SessionInfo {
            session_id: self.session.session_id().to_string(),
            session_path: self.session.file_path().map(|p| p.display().to_string()),
            model: Some(Box::new(self.model.clone())),
        }))
    }

    /// After a cwd change, a session with no conversation yet moves to the new cwd.
    fn rebind_fresh_session(&mut self) {
        if !self.messages.is_empty() {
            return;
        }
        let persisted = self.session.file_path().is_some();
        if !self.session_dir_explicit {
            self.session_dir = crate::session::default_session_dir(&self.agent_dir, &self.cwd);
        }
        self.session = if persisted {
            match crate::session::Session::create(&self.session_dir, &self.cwd, None) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("cannot create a session in {}: {e}", self.session_dir.display());
                    crate::session::Session::in_memory(&self.cwd)
                }
            }
        } else {
            crate::session::Session::in_memory(&self.cwd)
        };
        let _ = self.start_session_entries(None);
    }
}
