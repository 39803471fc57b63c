//! Ops that read or change the agent's settings and state: model, thinking
//! level, queue modes, toggles, state snapshots, `initialize`.

use serde_json::Value;

use super::actor::{Agent, strip_thinking_suffix};
use crate::config::settings::persist_setting;
use crate::error::CoreError;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::model::{Model, ThinkingLevel};
use crate::op::{CycledModel, InitializeParams, Op, Reply, RequestTag, SessionInfo, StateSnapshot};
use crate::provider::faux;

/// Thinking level used when nothing else chooses one.
const DEFAULT_THINKING: ThinkingLevel = ThinkingLevel::Medium;

impl Agent {
    pub(super) async fn handle_state_op(&mut self, tag: Option<RequestTag>, op: Op) {
        let result = match op {
            Op::GetState => Ok(Reply::State(Box::new(self.snapshot()))),
            Op::GetMessages => Ok(Reply::Messages(self.messages.clone())),
            Op::SetModel { provider, model_id } => self.set_model(provider, model_id).await,
            Op::CycleModel => self.cycle_model().await,
            Op::GetAvailableModels => Ok(Reply::Models(self.models.available())),
            Op::SetThinkingLevel { level } => {
                self.change_thinking(level).await;
                Ok(Reply::Ack)
            }
            Op::CycleThinkingLevel => {
                let levels = self.model.thinking_levels();
                if levels.len() <= 1 {
                    Ok(Reply::CycleThinkingLevel(None))
                } else {
                    let pos = levels.iter().position(|l| *l == self.thinking).map_or(0, |p| (p + 1) % levels.len());
                    self.change_thinking(levels[pos]).await;
                    Ok(Reply::CycleThinkingLevel(Some(self.thinking)))
                }
            }
            Op::GetAvailableThinkingLevels => Ok(Reply::ThinkingLevels(self.model.thinking_levels())),
            Op::SetSteeringMode { mode } => {
                self.steering.mode = mode;
                self.persist("steeringMode", Value::String(mode.as_str().to_string()));
                Ok(Reply::Ack)
            }
            Op::SetFollowUpMode { mode } => {
                self.follow_up.mode = mode;
                self.persist("followUpMode", Value::String(mode.as_str().to_string()));
                Ok(Reply::Ack)
            }
            Op::SetAutoCompaction { enabled } => {
                self.auto_compaction = enabled;
                self.persist("compaction.enabled", Value::Bool(enabled));
                Ok(Reply::Ack)
            }
            Op::SetAutoRetry { enabled } => {
                self.set_retry_enabled(enabled);
                self.persist("retry.enabled", Value::Bool(enabled));
                Ok(Reply::Ack)
            }
            Op::GetSessionStats => Ok(Reply::SessionStats(Box::new(self.session_stats()))),
            Op::GetLastAssistantText => Ok(Reply::LastAssistantText(self.last_assistant_text())),
            Op::SetSessionName { name } => self.set_session_name(name).await,
            Op::GetCommands => Ok(Reply::Commands(self.command_list())),
            Op::ClearQueue => {
                let steering = self.steering.clear();
                let follow_up = self.follow_up.clear();
                self.emit_queue_update().await;
                Ok(Reply::QueueCleared { steering, follow_up })
            }
            Op::SetActiveTools { tools } => self.set_active_tools(tools),
            Op::Initialize(params) => self.initialize(params).await,
            other => self.handle_session_op(other).await,
        };
        self.reply(tag, result).await;
    }

    pub(super) fn snapshot(&self) -> StateSnapshot {
        StateSnapshot {
            model: Some(self.model.clone()),
            thinking_level: self.thinking,
            is_streaming: self.state.is_running(),
            is_compacting: self.is_compacting(),
            is_bash_running: self.bash_cancel.is_some(),
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

    fn last_assistant_text(&self) -> Option<String> {
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

    async fn set_model(&mut self, provider: Option<String>, model_id: String) -> Result<Reply, CoreError> {
        let found = match provider.as_deref() {
            Some(p) => self.models.find(p, &model_id).ok_or_else(|| format!("Model not found: {p}/{model_id}")),
            None => self.models.resolve(None, &model_id),
        };
        let model = found.map_err(|e| CoreError::not_found(e).with_field("modelId"))?;
        if !self.models.has_credentials(&model) {
            return Err(CoreError::new(
                crate::error::ErrorKind::Model,
                format!("No API key found for {}", model.full_id()),
            ));
        }
        self.switch_model(model).await;
        Ok(Reply::Model(Box::new(self.model.clone())))
    }

    async fn cycle_model(&mut self) -> Result<Reply, CoreError> {
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

    fn set_active_tools(&mut self, tools: Vec<String>) -> Result<Reply, CoreError> {
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

    /// Pick the startup model and thinking level.
    pub(super) fn select_initial_model(
        &mut self,
        provider: Option<&str>,
        pattern: Option<&str>,
        thinking: Option<ThinkingLevel>,
        restored_model: Option<(String, String)>,
        restored_thinking: Option<String>,
    ) -> Result<(), CoreError> {
        let (pattern, suffix) = match pattern {
            Some(p) => {
                let (m, t) = strip_thinking_suffix(p);
                (Some(m), t)
            }
            None => (None, None),
        };
        let model = if let Some(pattern) = pattern {
            self.models.resolve(provider, pattern).map_err(|e| CoreError::invalid("model", e))?
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
            let first = self.models.available().into_iter().next().unwrap_or_else(faux::faux_model);
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
        let restored = self.session.context();
        let same_model =
            restored.model.as_ref().is_some_and(|(p, id)| *p == self.model.provider && *id == self.model.id);
        if !same_model {
            self.session.append_model_change(&self.model.provider, &self.model.id).map_err(io)?;
        }
        if restored.thinking_level.as_deref() != Some(self.thinking.as_str()) {
            self.session.append_thinking_level_change(self.thinking.as_str()).map_err(io)?;
        }
        Ok(())
    }

    /// JSON-RPC `initialize`: validate everything, then apply it all.
    async fn initialize(&mut self, p: InitializeParams) -> Result<Reply, CoreError> {
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
                .or_else(|| p.model.as_deref().and_then(|m| registry.resolve(None, m).ok()).map(|m| m.provider))
                .unwrap_or_else(|| self.model.provider.clone());
            registry.set_runtime_key(&provider, key.clone());
        }
        let model = match (&p.model, &p.provider) {
            (Some(m), provider) => {
                let model = registry.resolve(provider.as_deref(), m).map_err(|e| CoreError::invalid("model", e))?;
                Some(model)
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
        if let Some(model) = model {
            self.switch_model(model).await;
        }
        if let Some(level) = p.thinking_level {
            self.change_thinking(level).await;
        }
        if let Some(tools) = p.tools {
            self.set_active_tools(tools)?;
        }
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
